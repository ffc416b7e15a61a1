import PropertyList

/// Paths taken apart as NSString's path methods do, on bytes.
enum PathText {
    /// The path without its last component: "/a/b" → "/a", "/a/" → "/",
    /// "/a" → "/", "a" → "".
    static func parent(of path: String) -> String {
        let bytes = trimmedSlashes(Array(path.utf8))
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        let parent = trimmedSlashes(Array(bytes[..<slash]))
        return parent.isEmpty ? "/" : String(decoding: parent, as: UTF8.self)
    }

    /// The last component: "/a/b" → "b", "/a/b/" → "b", "/" → "/", "a" → "a".
    static func lastComponent(of path: String) -> String {
        let bytes = trimmedSlashes(Array(path.utf8))
        if bytes == [UInt8(ascii: "/")] { return "/" }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes[(slash + 1)...], as: UTF8.self)
    }

    /// Without trailing slashes, but "/" stays.
    private static func trimmedSlashes(_ bytes: [UInt8]) -> [UInt8] {
        var end = bytes.count
        while end > 1, bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        return Array(bytes[..<end])
    }
}

extension StringProtocol {
    /// Without spaces and tabs at either end: the scalars of Foundation's
    /// `.whitespaces` (Unicode's space separators and U+0009).
    func trimmingSpaces() -> String {
        trimmingScalars { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }
}
