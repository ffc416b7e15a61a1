import FoundationEssentials

/// JSON for the property-list values JSON can hold: strings, numbers,
/// booleans, arrays and objects. Dates and data have no JSON form.
package enum JSON {
    /// JSON's white space: space, tab, line feed, carriage return.
    package static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    static func write(_ value: PlistValue) throws -> Data {
        Data((try text(value, compact: false, lossy: false) + "\n").utf8)
    }

    /// The JSON text of `value`: indented, or on one line with `compact`;
    /// with `lossy`, data as base64 strings and dates as ISO 8601 strings
    /// instead of an error.
    static func text(_ value: PlistValue, compact: Bool, lossy: Bool) throws -> String {
        var out = ""
        try append(value, indent: compact ? nil : 0, lossy: lossy, to: &out, path: "")
        return out
    }

    private static func append(_ value: PlistValue, indent: Int?, lossy: Bool, to out: inout String, path: String) throws {
        let pad = indent.map { String(repeating: "  ", count: $0) } ?? ""
        let inner = indent.map { String(repeating: "  ", count: $0 + 1) } ?? ""
        let newline = indent == nil ? "" : "\n"
        let next = indent.map { $0 + 1 }
        switch value {
        case .string(let s): out += quote(s)
        case .integer(let i): out += "\(i)"
        case .unsignedInteger(let u): out += "\(u)"
        case .real(let d):
            guard d.isFinite else {
                if lossy { return out += "null" }
                throw PlistError("JSON cannot hold the real \(d) at \(path.isEmpty ? "the root" : path)")
            }
            out += "\(d)"
        case .boolean(let b): out += b ? "true" : "false"
        case .date(let d) where lossy: out += PlistText.formatDate(d).map(quote) ?? "null"
        case .data(let d) where lossy: out += quote(d.base64EncodedString())
        case .date, .data:
            throw PlistError("JSON cannot hold the \(value.typeName) at \(path.isEmpty ? "the root" : path); use --to xml")
        case .array(let elements):
            guard !elements.isEmpty else { return out += "[]" }
            out += "[" + newline
            for (i, element) in elements.enumerated() {
                out += inner
                try append(element, indent: next, lossy: lossy, to: &out, path: "\(path)[\(i)]")
                out += (i == elements.count - 1 ? "" : ",") + newline
            }
            out += pad + "]"
        case .dictionary(let dictionary):
            guard !dictionary.isEmpty else { return out += "{}" }
            out += "{" + newline
            for (i, (key, element)) in dictionary.enumerated() {
                out += inner + quote(key) + (indent == nil ? ":" : ": ")
                try append(element, indent: next, lossy: lossy, to: &out, path: path.isEmpty ? key : "\(path).\(key)")
                out += (i == dictionary.count - 1 ? "" : ",") + newline
            }
            out += pad + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    package static func read(_ data: Data, limits: PlistLimits) throws -> PlistValue {
        guard data.count <= limits.maximumSize else {
            throw PlistError("the JSON is \(data.count) bytes, over the limit of \(limits.maximumSize)")
        }
        return try data.withUnsafeBytes { raw in
            var parser = Parser(bytes: raw.bindMemory(to: UInt8.self), maximumDepth: limits.maximumDepth)
            let value = try parser.value(depth: 0)
            parser.skipSpace()
            guard parser.index == parser.bytes.count else { throw parser.fail("text after the JSON value") }
            return value
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        let maximumDepth: Int
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        func fail(_ message: String) -> PlistError { PlistError("JSON, byte \(index): \(message)") }

        mutating func skipSpace() {
            while index < bytes.count, JSON.isSpace(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String) throws {
            for byte in literal.utf8 {
                guard index < bytes.count, bytes[index] == byte else { throw fail("expected '\(literal)'") }
                index += 1
            }
        }

        mutating func value(depth: Int) throws -> PlistValue {
            guard depth <= maximumDepth else { throw fail("nested deeper than \(maximumDepth) levels") }
            skipSpace()
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var dictionary = PlistDictionary()
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .dictionary(dictionary)
                }
                while true {
                    skipSpace()
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    dictionary[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard index < bytes.count else { throw fail("unclosed object") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    try expect("}")
                    return .dictionary(dictionary)
                }
            case UInt8(ascii: "["):
                index += 1
                var elements: [PlistValue] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                while true {
                    elements.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw fail("unclosed array") }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    try expect("]")
                    return .array(elements)
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try expect("true")
                return .boolean(true)
            case UInt8(ascii: "f"):
                try expect("false")
                return .boolean(false)
            case UInt8(ascii: "n"):
                throw fail("null has no property-list form")
            default:
                return try number()
            }
        }

        mutating func number() throws -> PlistValue {
            let start = index
            var isReal = false
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    isReal = true
                } else if !(byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")))
                {
                    break
                }
                index += 1
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard !text.isEmpty else { throw fail("unexpected character") }
            if !isReal {
                if let value = Int64(text) { return .integer(value) }
                if let value = UInt64(text) { return .unsigned(value) }
            }
            guard let value = Double(text), value.isFinite else { throw fail("'\(text)' is not a number") }
            return .real(value)
        }

        mutating func string() throws -> String {
            try expect("\"")
            // Most strings have no escape: one decoding of the bytes.
            var end = index
            while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 {
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                defer { index = end + 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
            }
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
                run.removeAll(keepingCapacity: true)
            }
            while true {
                guard index < bytes.count else { throw fail("unclosed string") }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush()
                    guard index < bytes.count else { throw fail("unclosed string") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{8}")
                    case UInt8(ascii: "f"): scalars.append("\u{c}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var unit = try hex4()
                        if (0xD800..<0xDC00).contains(unit) {
                            try expect("\\u")
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw fail("a lone surrogate") }
                            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(unit) else { throw fail("a lone surrogate") }
                        scalars.append(scalar)
                    default: throw fail("bad escape")
                    }
                default:
                    guard byte >= 0x20 else { throw fail("a control character in a string") }
                    run.append(byte)
                }
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count,
                let value = UInt32(String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<index + 4]), as: UTF8.self), radix: 16)
            else { throw fail("bad \\u escape") }
            index += 4
            return value
        }
    }
}
