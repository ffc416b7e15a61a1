import FoundationEssentials

/// A Desktop Entry file (freedesktop.org Desktop Entry Specification 1.5):
/// groups of `key=value` lines, values with the spec's escapes, lists
/// separated by `;`, and localized keys (`Name[de]`).
public struct DesktopEntry: Sendable, Equatable {
    /// Group name → key (with its locale suffix, as written) → raw value.
    public private(set) var groups: [String: [String: String]] = [:]
    public private(set) var groupOrder: [String] = []

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// Parses `text`. `anyKeys` accepts keys beyond the spec's
    /// `[A-Za-z0-9-]` (mimeapps.list keys are MIME types). Lines end at
    /// LF or CRLF. As GLib reads these files, a group that appears again
    /// continues the first, and of a key given twice the last counts.
    public init(parsing text: String, anyKeys: Bool = false) throws {
        var current: String?
        // Split on the byte: as Characters, "\r\n" is one and never equals "\n".
        for (index, bytes) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let rawLine = Substring(bytes)
            let line = rawLine.utf8.last == UInt8(ascii: "\r") ? Substring(rawLine.utf8.dropLast()) : rawLine
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count > 2 else {
                    throw ParseError(line: index + 1, message: "a group header must be '[Name]'")
                }
                let name = String(trimmed.dropFirst().dropLast())
                guard !name.contains("["), !name.contains("]"), name.allSatisfy({ ($0.asciiValue ?? 0) >= 0x20 && ($0.asciiValue ?? 0x7f) < 0x7f }) else {
                    throw ParseError(line: index + 1, message: "'\(name)' is not a group name")
                }
                if groups[name] == nil {
                    groups[name] = [:]
                    groupOrder.append(name)
                }
                current = name
                continue
            }
            guard let group = current else { throw ParseError(line: index + 1, message: "a key before the first group") }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw ParseError(line: index + 1, message: "expected 'Key=value'")
            }
            let key = trimmed[..<equals].trimmingSpaces()
            let value = String(trimmed[trimmed.index(after: equals)...].drop { $0 == " " || $0 == "\t" })
            guard anyKeys ? !key.isEmpty : Self.isValidKey(key) else {
                throw ParseError(line: index + 1, message: "'\(key)' is not a key")
            }
            groups[group]?[key] = value
        }
    }

    static func isValidKey(_ key: String) -> Bool {
        var name = Substring(key)
        if let open = key.firstIndex(of: "[") {
            guard key.hasSuffix("]"), key.index(after: open) < key.index(before: key.endIndex) else { return false }
            name = key[..<open]
        }
        return !name.isEmpty && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }
    }

    public static let mainGroup = "Desktop Entry"

    /// The raw value of `key` in the main group.
    public func raw(_ key: String, group: String = mainGroup) -> String? { groups[group]?[key] }

    /// A string value with `\s \n \t \r \\` unescaped.
    public func string(_ key: String, group: String = mainGroup) -> String? {
        raw(key, group: group).map { Self.unescape($0) }
    }

    /// A localized string: `key[lang_COUNTRY@MODIFIER]`, then the spec's
    /// fallbacks, then `key`.
    public func localized(_ key: String, locale: String?, group: String = mainGroup) -> String? {
        if let locale, !locale.isEmpty {
            let withoutEncoding = locale.split(separator: ".").first.map(String.init) ?? locale
            let modifier = withoutEncoding.split(separator: "@").dropFirst().first.map(String.init)
            let base = withoutEncoding.split(separator: "@").first.map(String.init) ?? withoutEncoding
            let language = base.split(separator: "_").first.map(String.init) ?? base
            let country = base.split(separator: "_").dropFirst().first.map(String.init)
            var candidates: [String] = []
            if let country, let modifier { candidates.append("\(language)_\(country)@\(modifier)") }
            if let country { candidates.append("\(language)_\(country)") }
            if let modifier { candidates.append("\(language)@\(modifier)") }
            candidates.append(language)
            for candidate in candidates {
                if let value = string("\(key)[\(candidate)]", group: group) { return value }
            }
        }
        return string(key, group: group)
    }

    public func bool(_ key: String, group: String = mainGroup) -> Bool {
        raw(key, group: group) == "true"
    }

    /// A list value: `;`-separated, `\;` a literal semicolon, other escapes as strings.
    public func list(_ key: String, group: String = mainGroup) -> [String] {
        guard let raw = raw(key, group: group) else { return [] }
        var items: [String] = []
        var current = ""
        var escaped = false
        for character in raw {
            if escaped {
                current.append(character == ";" ? ";" : "\\")
                if character != ";" { current.append(character) }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ";" {
                items.append(Self.unescape(current))
                current = ""
            } else {
                current.append(character)
            }
        }
        if escaped { current.append("\\") }
        if !current.isEmpty { items.append(Self.unescape(current)) }
        return items
    }

    static func unescape(_ value: String) -> String {
        var result = ""
        var escaped = false
        for character in value {
            if escaped {
                switch character {
                case "s": result.append(" ")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "\\": result.append("\\")
                default:
                    result.append("\\")
                    result.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        if escaped { result.append("\\") }
        return result
    }

    // MARK: Exec

    public struct ExecError: Error, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Splits an Exec value (already unescaped as a string) into
    /// arguments by the spec's quoting rules, each with its field codes
    /// still in place; a reserved character outside quotes, an unfinished
    /// quote or a bad escape inside one is an error.
    public static func splitExec(_ exec: String) throws -> [[ExecPiece]] {
        var arguments: [[ExecPiece]] = []
        var current: [ExecPiece] = []
        var literal = ""
        var started = false
        var characters = Array(exec)[...]
        func flushLiteral() {
            if !literal.isEmpty { current.append(.text(literal)) }
            literal = ""
        }
        func endArgument() {
            flushLiteral()
            if started { arguments.append(current) }
            current = []
            started = false
        }
        let reserved: Set<Character> = ["\t", "\n", "\"", "'", "\\", ">", "<", "~", "|", "&", ";", "$", "*", "?", "#", "(", ")", "`"]
        while let character = characters.popFirst() {
            switch character {
            case " ":
                endArgument()
            case "\"":
                started = true
                var closed = false
                while let inner = characters.popFirst() {
                    if inner == "\"" {
                        closed = true
                        break
                    }
                    if inner == "\\" {
                        guard let next = characters.popFirst(), ["\"", "`", "$", "\\"].contains(next) else {
                            throw ExecError(message: "inside quotes a backslash may only escape \", `, $ or \\")
                        }
                        literal.append(next)
                    } else if inner == "%" {
                        guard let code = characters.popFirst() else { throw ExecError(message: "a lone % at the end") }
                        if code == "%" { literal.append("%") } else {
                            throw ExecError(message: "field code %\(code) inside a quoted argument")
                        }
                    } else {
                        literal.append(inner)
                    }
                }
                guard closed else { throw ExecError(message: "an unfinished quoted argument") }
            case "%":
                guard let code = characters.popFirst() else { throw ExecError(message: "a lone % at the end") }
                switch code {
                case "%":
                    started = true
                    literal.append("%")
                case "f", "F", "u", "U", "i", "c", "k":
                    started = true
                    flushLiteral()
                    current.append(.field(code))
                case "d", "D", "n", "N", "v", "m":
                    break  // deprecated: removed
                default:
                    throw ExecError(message: "unknown field code %\(code)")
                }
            default:
                guard !reserved.contains(character) else {
                    throw ExecError(message: "reserved character '\(character)' outside quotes")
                }
                started = true
                literal.append(character)
            }
        }
        endArgument()
        for argument in arguments {
            let fields = argument.compactMap { if case .field(let c) = $0 { c } else { nil } }
            if fields.contains(where: { "FUi".contains($0) }) && argument.count > 1 {
                throw ExecError(message: "%F, %U and %i must stand alone as an argument")
            }
        }
        guard !arguments.isEmpty else { throw ExecError(message: "an empty Exec") }
        return arguments
    }

    public enum ExecPiece: Sendable, Equatable {
        case text(String)
        case field(Character)
    }

    /// The argv that opens `url`: field codes expanded (`%u`/`%U` to the
    /// URL, `%i` to `--icon ICON`, `%c` to the name, `%k` to the file).
    /// The URL is always exactly one element; an entry that cannot take a
    /// URL (no `%u` or `%U`) is an error.
    public func argv(opening url: String, file: String, locale: String?) throws -> [String] {
        guard let exec = string("Exec") else { throw ExecError(message: "no Exec key") }
        let arguments = try Self.splitExec(exec)
        let fields = arguments.flatMap { $0 }.compactMap { if case .field(let c) = $0 { c } else { nil } }
        guard fields.contains("u") || fields.contains("U") else {
            throw ExecError(message: "Exec has no %u or %U, so it cannot be given a URL")
        }
        guard fields.filter({ "uUfF".contains($0) }).count == 1 else {
            throw ExecError(message: "Exec has more than one of %f %F %u %U")
        }
        var argv: [String] = []
        for argument in arguments {
            if argument == [.field("i")] {
                if let icon = string("Icon"), !icon.isEmpty { argv += ["--icon", icon] }
                continue
            }
            var text = ""
            for piece in argument {
                switch piece {
                case .text(let literal): text += literal
                case .field("u"), .field("U"): text += url
                case .field("c"): text += localized("Name", locale: locale) ?? ""
                case .field("k"): text += file
                case .field: break  // %f %F: excluded above
                }
            }
            argv.append(text)
        }
        return argv
    }
}
