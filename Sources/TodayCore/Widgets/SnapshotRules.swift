import FoundationEssentials
import PropertyList

/// How todayd keeps a snapshot (SPEC section 2): what its cache can hold.
/// What a snapshot may hold is `Snapshot.problem(in:)`'s.
public enum SnapshotRules {
    public struct Unstorable: Error, CustomStringConvertible {
        public var description: String
    }

    /// The snapshot as todayd keeps it: every date to its whole second
    /// (rounded down), since the cache is an XML property list, which keeps
    /// no fraction, so the snapshot published now and the one read back
    /// after a restart are equal. A date before 1970 cannot be published
    /// (D-Bus `t` counts from 1970) and is refused, naming its key.
    public static func stored(_ snapshot: PlistDictionary) throws -> PlistDictionary {
        guard case .dictionary(let result) = try stored(.dictionary(snapshot), at: "") else { return snapshot }
        return result
    }

    /// The cache is XML, which cannot hold control characters other than
    /// tab, line feed and carriage return, nor U+FFFE and U+FFFF.
    private static func storable(_ text: String, at path: String) throws {
        guard let bad = text.unicodeScalars.first(where: { ($0.value < 0x20 && !["\t", "\n", "\r"].contains($0)) || $0.value == 0xFFFE || $0.value == 0xFFFF })
        else { return }
        throw Unstorable(
            description: "snapshot key '\(path.prefix(100))' holds the control character U+\(String(bad.value, radix: 16, uppercase: true)), which todayd cannot store")
    }

    private static func stored(_ value: PlistValue, at path: String) throws -> PlistValue {
        switch value {
        case .date(let date):
            let seconds = date.timeIntervalSince1970.rounded(.down)
            guard seconds >= 0 else {
                throw Unstorable(
                    description: "snapshot key '\(path)' holds a date before 1970 (\(seconds) s), which D-Bus cannot carry")
            }
            return .date(Date(timeIntervalSince1970: seconds))
        case .string(let text):
            try storable(text, at: path)
            return value
        case .array(let elements):
            return .array(try elements.enumerated().map { try stored($0.element, at: "\(path)[\($0.offset)]") })
        case .dictionary(let dictionary):
            var result = PlistDictionary()
            for (key, element) in dictionary {
                let at = path.isEmpty ? key : "\(path).\(key)"
                try storable(key, at: at)
                result[key] = try stored(element, at: at)
            }
            return .dictionary(result)
        default:
            return value
        }
    }
}
