extension String {
    /// Every `target` replaced, compared scalar by scalar (not by
    /// character: an escaped `&` must stay escaped when a combining mark
    /// follows it).
    package func replacingScalars(_ target: String, with replacement: String) -> String {
        let pattern = Array(target.unicodeScalars)
        guard !pattern.isEmpty else { return self }
        let scalars = Array(unicodeScalars)
        var result = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if scalars[index] == pattern[0], index + pattern.count <= scalars.count,
                scalars[index..<index + pattern.count].elementsEqual(pattern)
            {
                result.append(contentsOf: replacement.unicodeScalars)
                index += pattern.count
            } else {
                result.append(scalars[index])
                index += 1
            }
        }
        return String(result)
    }
}
