/// What another program's object says of itself (`Introspect`): the names
/// of the interfaces it declares, read from the XML's `interface` elements
/// (comments and other elements' attributes do not count).
public enum Introspection {
    /// The interfaces `xml` declares, in order; a malformed document yields
    /// those declared before the fault.
    public static func interfaces(in xml: String) -> [InterfaceName] {
        var names: [InterfaceName] = []
        var rest = Substring(xml)
        while let open = rest.firstIndex(of: "<") {
            rest = rest[rest.index(after: open)...]
            if rest.hasPrefix("!--") {
                guard let end = commentEnd(rest) else { break }
                rest = rest[end...]
                continue
            }
            guard let close = tagEnd(rest) else { break }
            let tag = rest[..<close]
            rest = rest[rest.index(after: close)...]
            let parts = tag.split(maxSplits: 1, whereSeparator: \.isWhitespace)
            guard parts.first == "interface", parts.count == 2, let name = attribute("name", in: parts[1]) else { continue }
            if let interface = InterfaceName(rawValue: name) { names.append(interface) }
        }
        return names
    }

    /// Just after the `-->` that ends the comment `text` starts.
    private static func commentEnd(_ text: Substring) -> Substring.Index? {
        var index = text.index(text.startIndex, offsetBy: 3, limitedBy: text.endIndex) ?? text.endIndex
        while index < text.endIndex {
            if text[index...].hasPrefix("-->") { return text.index(index, offsetBy: 3) }
            index = text.index(after: index)
        }
        return nil
    }

    /// Where the tag that starts `text` ends: its `>` outside quotes.
    private static func tagEnd(_ text: Substring) -> Substring.Index? {
        var quote: Character?
        for index in text.indices {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == ">" {
                return index
            }
        }
        return nil
    }

    /// The value of attribute `name` among `attributes` (XML's five
    /// predefined entities resolved), or nil.
    private static func attribute(_ name: String, in attributes: Substring) -> String? {
        var rest = attributes
        while true {
            rest = rest.drop { $0.isWhitespace || $0 == "/" }
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = String(rest[..<equals].filter { !$0.isWhitespace })
            rest = rest[rest.index(after: equals)...].drop(while: \.isWhitespace)
            guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
            rest = rest.dropFirst()
            guard let end = rest.firstIndex(of: quote) else { return nil }
            let value = rest[..<end]
            rest = rest[rest.index(after: end)...]
            if key == name { return unescape(String(value)) }
        }
    }

    private static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingScalars("&lt;", with: "<").replacingScalars("&gt;", with: ">")
            .replacingScalars("&quot;", with: "\"").replacingScalars("&apos;", with: "'").replacingScalars("&amp;", with: "&")
    }
}
