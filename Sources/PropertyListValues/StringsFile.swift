import FoundationEssentials

/// The text `.strings` format of Apple bundles (`InfoPlist.strings`):
/// `"key" = "value";` entries, `/* */` and `//` comments, quoted or bare
/// words, the escapes `\" \\ \n \t \r \0` and `\UXXXX`; UTF-8, or UTF-16
/// with a byte-order mark.
public enum StringsFile {
    /// The entries in file order (a key given twice keeps the last value),
    /// or an error naming the line.
    public static func read(_ data: Data) throws -> [(key: String, value: String)] {
        let text = try decode(data)
        var parser = Parser(scalars: Array(text.unicodeScalars))
        return try parser.entries()
    }

    static func decode(_ data: Data) throws -> String {
        let bytes = [UInt8](data)
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            let little = bytes[0] == 0xFF
            let body = bytes.dropFirst(2)
            guard body.count % 2 == 0 else { throw PlistError("a UTF-16 .strings file has an odd number of bytes") }
            var units: [UInt16] = []
            units.reserveCapacity(body.count / 2)
            var index = body.startIndex
            while index < body.endIndex {
                let a = UInt16(body[index]), b = UInt16(body[index + 1])
                units.append(little ? a | b << 8 : a << 8 | b)
                index += 2
            }
            guard let text = String(validating: units, as: UTF16.self) else { throw PlistError("the .strings file is not valid UTF-16") }
            return text
        }
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        guard let text = String(validating: body, as: UTF8.self) else {
            throw PlistError("the .strings file is neither UTF-8 nor UTF-16 with a byte-order mark")
        }
        return text
    }

    struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0
        var line = 1

        init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

        func fail(_ message: String) -> PlistError { PlistError(message, line: line) }

        var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        mutating func advance() {
            if scalars[index] == "\n" { line += 1 }
            index += 1
        }

        mutating func skipSpaceAndComments() throws {
            while let c = current {
                if c.properties.isWhitespace {
                    advance()
                } else if c == "/", index + 1 < scalars.count, scalars[index + 1] == "*" {
                    let start = line
                    advance()
                    advance()
                    while current != nil, !(current == "*" && index + 1 < scalars.count && scalars[index + 1] == "/") { advance() }
                    guard current != nil else { throw PlistError("a comment opened here is never closed", line: start) }
                    advance()
                    advance()
                } else if c == "/", index + 1 < scalars.count, scalars[index + 1] == "/" {
                    while let c = current, c != "\n" { _ = c; advance() }
                } else {
                    return
                }
            }
        }

        static func isBare(_ c: Unicode.Scalar) -> Bool {
            (c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c))) || "_$+/:.-".unicodeScalars.contains(c)
        }

        mutating func word() throws -> String {
            guard let c = current else { throw fail("unexpected end of the file; an entry is \"key\" = \"value\";") }
            if c == "\"" { return try quoted() }
            guard Self.isBare(c) else { throw fail("unexpected '\(c)'; an entry is \"key\" = \"value\";") }
            var out = String.UnicodeScalarView()
            while let c = current, Self.isBare(c) {
                out.append(c)
                advance()
            }
            return String(out)
        }

        mutating func quoted() throws -> String {
            let start = line
            advance()
            var out = String.UnicodeScalarView()
            while let c = current {
                advance()
                switch c {
                case "\"": return String(out)
                case "\\":
                    guard let e = current else { break }
                    advance()
                    switch e {
                    case "n": out.append("\n")
                    case "t": out.append("\t")
                    case "r": out.append("\r")
                    case "0": out.append("\0")
                    case "U", "u":
                        var value: UInt32 = 0
                        for _ in 0..<4 {
                            guard let h = current, h.isASCII, let digit = UInt32(String(h), radix: 16) else {
                                throw fail("\\U needs four hexadecimal digits")
                            }
                            value = value * 16 + digit
                            advance()
                        }
                        guard let scalar = Unicode.Scalar(value) else { throw fail("\\U\(String(value, radix: 16)) is not a character") }
                        out.append(scalar)
                    default: out.append(e)  // \" \\ \' and the rest stand for themselves
                    }
                default: out.append(c)
                }
            }
            throw PlistError("a string opened here is never closed", line: start)
        }

        mutating func entries() throws -> [(key: String, value: String)] {
            var result: [(key: String, value: String)] = []
            var positions: [String: Int] = [:]
            while true {
                try skipSpaceAndComments()
                guard current != nil else { return result }
                let key = try word()
                try skipSpaceAndComments()
                var value = key
                if current == "=" {
                    advance()
                    try skipSpaceAndComments()
                    value = try word()
                    try skipSpaceAndComments()
                }
                guard current == ";" else { throw fail("expected ';' after the entry for \"\(key)\"") }
                advance()
                if let position = positions[key] {
                    result[position].value = value
                } else {
                    positions[key] = result.count
                    result.append((key, value))
                }
            }
        }
    }
}
