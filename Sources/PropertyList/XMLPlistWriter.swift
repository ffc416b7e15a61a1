import FoundationEssentials

/// Writes XML property lists in Apple's layout: header, DOCTYPE, one element
/// per line, tabs for indentation.
enum XMLPlistWriter {
    static func write(_ value: PlistValue) throws -> Data {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        try append(value, indent: 0, to: &out)
        out += "</plist>\n"
        return Data(out.utf8)
    }

    private static func append(_ value: PlistValue, indent: Int, to out: inout String) throws {
        let tabs = String(repeating: "\t", count: indent)
        switch value {
        case .string(let s): out += "\(tabs)<string>\(try escape(s))</string>\n"
        case .integer(let i): out += "\(tabs)<integer>\(i)</integer>\n"
        case .unsignedInteger(let u): out += "\(tabs)<integer>\(u)</integer>\n"
        case .real(let d): out += "\(tabs)<real>\(PlistText.formatReal(d))</real>\n"
        case .boolean(let b): out += "\(tabs)<\(b ? "true" : "false")/>\n"
        case .date(let d):
            guard let text = PlistText.formatDate(d) else { throw PlistText.unstorable(d) }
            out += "\(tabs)<date>\(text)</date>\n"
        case .data(let d): out += "\(tabs)<data>\(d.base64EncodedString())</data>\n"
        case .array(let values):
            if values.isEmpty {
                out += "\(tabs)<array/>\n"
                return
            }
            out += "\(tabs)<array>\n"
            for element in values { try append(element, indent: indent + 1, to: &out) }
            out += "\(tabs)</array>\n"
        case .dictionary(let dictionary):
            if dictionary.isEmpty {
                out += "\(tabs)<dict/>\n"
                return
            }
            out += "\(tabs)<dict>\n"
            for (key, element) in dictionary {
                out += "\(tabs)\t<key>\(try escape(key))</key>\n"
                try append(element, indent: indent + 1, to: &out)
            }
            out += "\(tabs)</dict>\n"
        }
    }

    /// Escapes markup; refuses characters XML 1.0 cannot carry.
    static func escape(_ text: String) throws -> String {
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
