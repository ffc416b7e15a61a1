import FoundationEssentials

/// Writes XML property lists in Apple's layout: header, DOCTYPE, one element
/// per line, tabs for indentation.
enum XMLPlistWriter {
    static func write(_ value: PlistValue) throws -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(Plist.binarySizeBound(of: value) * 2 + 256)
        out += Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """.utf8)
        try append(value, indent: 0, to: &out)
        out += Array("</plist>\n".utf8)
        return Data(out)
    }

    private static func append(_ value: PlistValue, indent: Int, to out: inout [UInt8]) throws {
        func put(_ text: String) { out.append(contentsOf: text.utf8) }
        out.append(contentsOf: repeatElement(UInt8(ascii: "\t"), count: indent))
        switch value {
        case .string(let s): put("<string>\(try escape(s))</string>\n")
        case .integer(let i): put("<integer>\(i)</integer>\n")
        case .unsignedInteger(let u): put("<integer>\(u)</integer>\n")
        case .real(let d): put("<real>\(PlistText.formatReal(d))</real>\n")
        case .boolean(let b): put(b ? "<true/>\n" : "<false/>\n")
        case .date(let d):
            guard let text = PlistText.formatDate(d) else { throw PlistText.unstorable(d) }
            put("<date>\(text)</date>\n")
        case .data(let d):
            put("<data>")
            appendBase64(d, to: &out)
            put("</data>\n")
        case .array(let values):
            if values.isEmpty { return put("<array/>\n") }
            put("<array>\n")
            for element in values { try append(element, indent: indent + 1, to: &out) }
            out.append(contentsOf: repeatElement(UInt8(ascii: "\t"), count: indent))
            put("</array>\n")
        case .dictionary(let dictionary):
            if dictionary.isEmpty { return put("<dict/>\n") }
            put("<dict>\n")
            for (key, element) in dictionary {
                out.append(contentsOf: repeatElement(UInt8(ascii: "\t"), count: indent + 1))
                put("<key>\(try escape(key))</key>\n")
                try append(element, indent: indent + 1, to: &out)
            }
            out.append(contentsOf: repeatElement(UInt8(ascii: "\t"), count: indent))
            put("</dict>\n")
        }
    }

    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `data` as base64 (with `=` padding, on one line), written in place
    /// at the end of `out`.
    static func appendBase64(_ data: Data, to out: inout [UInt8]) {
        let start = out.count
        let length = (data.count + 2) / 3 * 4
        out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: length))
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            out.withUnsafeMutableBufferPointer { output in
                base64Alphabet.withUnsafeBufferPointer { alphabet in
                    var at = start
                    var index = 0
                    let count = input.count
                    while index + 3 <= count {
                        let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                        output[at] = alphabet[Int(group >> 18)]
                        output[at + 1] = alphabet[Int(group >> 12 & 63)]
                        output[at + 2] = alphabet[Int(group >> 6 & 63)]
                        output[at + 3] = alphabet[Int(group & 63)]
                        index += 3
                        at += 4
                    }
                    // The last one or two bytes; the rest of the group stays `=`.
                    if index < count {
                        let second = index + 1 < count ? UInt32(input[index + 1]) : 0
                        let group = UInt32(input[index]) << 16 | second << 8
                        output[at] = alphabet[Int(group >> 18)]
                        output[at + 1] = alphabet[Int(group >> 12 & 63)]
                        if index + 1 < count { output[at + 2] = alphabet[Int(group >> 6 & 63)] }
                    }
                }
            }
        }
    }

    /// Escapes markup; refuses characters XML 1.0 cannot carry.
    static func escape(_ text: String) throws -> String {
        // Most text needs nothing: printable ASCII without & < >.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "&") && $0 != UInt8(ascii: "<") && $0 != UInt8(ascii: ">") }) {
            return text
        }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\r": out += "&#13;"
            case "\t", "\n": out.unicodeScalars.append(scalar)
            default:
                let v = scalar.value
                guard v >= 0x20, v != 0xFFFE, v != 0xFFFF else {
                    throw PlistError(
                        "the control character U+\(String(v, radix: 16, uppercase: true)) cannot be written to an XML property list; use the binary format"
                    )
                }
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
