import Glibc
import Synchronization

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

/// The header strings a process meets again and again (its own object
/// paths and interfaces, the names it is called by), handed out as the
/// same `String` each time rather than made anew for each message: a
/// string of more than 15 bytes is an allocation, a copy and a check of
/// its UTF-8. The last few seen are kept; a string of 15 bytes or fewer
/// lives inside its `String` and is made as it comes.
final class HeaderStrings: Sendable {
    static let shared = HeaderStrings()

    private struct Recent {
        var strings: [String] = []
        /// Where the next string not among them goes, once they are full.
        var next = 0
    }

    private let recent = Mutex(Recent())
    private let capacity = 16

    /// `text` (NUL-terminated UTF-8, as libdbus hands out header fields).
    func string(_ text: UnsafePointer<CChar>) -> String {
        string(UnsafeRawBufferPointer(start: text, count: strlen(text)))
    }

    /// `text` (UTF-8, as a message's header holds it).
    func string(_ text: UnsafeRawBufferPointer) -> String {
        let length = text.count
        guard length > 15, let start = text.baseAddress else { return String(decoding: text, as: UTF8.self) }
        return recent.withLock { recent in
            for kept in recent.strings where kept.utf8.count == length {
                let same = kept.utf8.withContiguousStorageIfAvailable { bytes in
                    bytes.baseAddress.map { memcmp($0, start, length) == 0 } ?? false
                }
                if same == true { return kept }
            }
            let made = String(decoding: text, as: UTF8.self)
            if recent.strings.count < capacity {
                recent.strings.append(made)
            } else {
                recent.strings[recent.next] = made
                recent.next = (recent.next + 1) % capacity
            }
            return made
        }
    }
}
