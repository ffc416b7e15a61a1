import FoundationEssentials
import PropertyList

/// The rules a snapshot follows (SPEC section 2).
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

    public static let maximumSize = 4 << 20
    public static let maximumImage = 1 << 20
    public static let maximumActions = 8

    /// A button or toggle a snapshot offers (SPEC section 10).
    public struct Action: Sendable, Equatable {
        public var id: String
        public var isToggle: Bool
        /// A toggle's current state.
        public var state: Bool
    }

    /// The actions the snapshot offers, in order.
    public static func actions(of snapshot: PlistDictionary) -> [Action] {
        (snapshot["actions"]?.array ?? []).compactMap { value in
            guard let id = value["id"]?.string else { return nil }
            return Action(id: id, isToggle: value["kind"]?.string == "toggle", state: value["state"]?.bool ?? false)
        }
    }

    /// The snapshot with toggle `id` set to `state`.
    public static func setting(_ id: String, to state: Bool, in snapshot: PlistDictionary) -> PlistDictionary {
        guard let list = snapshot["actions"]?.array else { return snapshot }
        var result = snapshot
        result["actions"] = .array(
            list.map { value in
                guard var action = value.dictionary, action["id"]?.string == id else { return value }
                action["state"] = .boolean(state)
                return .dictionary(action)
            })
        return result
    }

    static func isValidActionID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "." || $0 == "_" || $0 == "-" }
    }

    /// Why the snapshot's `actions`, or the `action` of one of its items,
    /// break SPEC section 10's rules, or nil.
    static func actionProblem(_ snapshot: PlistDictionary) -> String? {
        var ids = Set<String>()
        if let value = snapshot["actions"] {
            guard let list = value.array, list.allSatisfy({ $0.dictionary != nil }) else {
                return "snapshot key 'actions' must be an array of dictionaries, not \(value.typeName)"
            }
            guard list.count <= maximumActions else { return "snapshot offers \(list.count) actions; at most \(maximumActions)" }
            for (index, action) in list.enumerated() {
                let at = "actions[\(index)]"
                guard let id = action["id"]?.string, isValidActionID(id) else {
                    return "\(at).id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"
                }
                guard ids.insert(id).inserted else { return "\(at).id '\(id)' is used twice" }
                guard action["title"]?.string != nil else { return "\(at) ('\(id)') needs a 'title' string" }
                switch action["kind"]?.string {
                case "button": break
                case "toggle":
                    guard action["state"]?.bool != nil else { return "\(at) ('\(id)') is a toggle and needs a boolean 'state'" }
                default: return "\(at).kind must be 'button' or 'toggle'"
                }
                for key in ["icon-name", "accessibility-label"] {
                    if let extra = action[key], extra.string == nil { return "\(at).\(key) must be a string, not \(extra.typeName)" }
                }
            }
        }
        for (index, item) in (snapshot["items"]?.array ?? []).enumerated() {
            guard let named = item["action"] else { continue }
            guard let id = named.string, ids.contains(id) else {
                return "items[\(index)].action must name one of the snapshot's actions"
            }
        }
        return nil
    }

    /// Why a snapshot cannot be published, or nil.
    public static func problem(_ snapshot: PlistDictionary) -> String? {
        let typed: [(String, String, (PlistValue) -> Bool)] = [
            ("title", "a string", { $0.string != nil }), ("subtitle", "a string", { $0.string != nil }),
            ("body", "a string", { $0.string != nil }), ("image-path", "a string", { $0.string != nil }),
            ("url", "a string", { $0.string != nil }), ("accessibility-label", "a string", { $0.string != nil }),
            ("image", "data", { $0.data != nil }),
            ("items", "an array of dictionaries", { $0.array?.allSatisfy { $0.dictionary != nil } ?? false }),
        ]
        for (key, kind, check) in typed {
            if let value = snapshot[key], !check(value) { return "snapshot key '\(key)' must be \(kind), not \(value.typeName)" }
        }
        if let problem = actionProblem(snapshot) { return problem }
        if let image = snapshot["image"]?.data, image.count > maximumImage {
            return "snapshot image is \(image.count) bytes, over the limit of \(maximumImage)"
        }
        // Written out only when the bound says it might be too big.
        if Plist.binarySizeBound(of: .dictionary(snapshot)) + 40 > maximumSize,
            let encoded = try? Plist.write(.dictionary(snapshot), format: .binary), encoded.count > maximumSize
        {
            return "snapshot is \(encoded.count) bytes encoded, over the limit of \(maximumSize)"
        }
        return nil
    }
}
