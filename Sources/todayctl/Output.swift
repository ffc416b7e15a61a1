import Foundation
import PropertyList

/// What `--json` prints: a property-list value as JSON, with data as
/// base64 strings and dates as ISO 8601 strings. Pretty by default, one
/// line each for `watch`.
enum JSONOutput {
    static func text(_ value: PlistValue, compact: Bool = false) -> String {
        var out = ""
        append(value, indent: compact ? nil : 0, to: &out)
        return out
    }

    private static func append(_ value: PlistValue, indent: Int?, to out: inout String) {
        let pad = indent.map { String(repeating: "  ", count: $0) } ?? ""
        let inner = indent.map { String(repeating: "  ", count: $0 + 1) } ?? ""
        let newline = indent == nil ? "" : "\n"
        let colon = indent == nil ? ":" : ": "
        switch value {
        case .string(let s): out += quote(s)
        case .integer(let i): out += "\(i)"
        case .unsignedInteger(let u): out += "\(u)"
        case .real(let d): out += d.isFinite ? "\(d)" : "null"
        case .boolean(let b): out += b ? "true" : "false"
        case .date(let d): out += quote(ISO8601DateFormatter().string(from: d))
        case .data(let d): out += quote(d.base64EncodedString())
        case .array(let items):
            guard !items.isEmpty else { return out += "[]" }
            out += "[" + newline
            for (index, item) in items.enumerated() {
                out += inner
                append(item, indent: indent.map { $0 + 1 }, to: &out)
                out += (index == items.count - 1 ? "" : ",") + newline
            }
            out += pad + "]"
        case .dictionary(let dictionary):
            guard !dictionary.isEmpty else { return out += "{}" }
            out += "{" + newline
            for (index, (key, item)) in dictionary.enumerated() {
                out += inner + quote(key) + colon
                append(item, indent: indent.map { $0 + 1 }, to: &out)
                out += (index == dictionary.count - 1 ? "" : ",") + newline
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
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// Standard output and error, written at once (no buffering surprises
/// when piped).
enum Out {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func json(_ value: PlistValue, compact: Bool = false) {
        line(JSONOutput.text(value, compact: compact))
    }

    static var isTerminal: Bool { isatty(1) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb" }
}

/// A failure that ends the command with its exit status.
struct Failure: Error {
    var message: String
    var status: Int32

    static func usage(_ message: String) -> Failure { Failure(message: message, status: 2) }
    static func refused(_ message: String) -> Failure { Failure(message: message, status: 1) }
}
