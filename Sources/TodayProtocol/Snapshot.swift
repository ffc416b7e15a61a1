import FoundationEssentials
import PropertyListValues

/// What a widget shows (SPEC section 2; its buttons and toggles, section
/// 10): the keys panels understand, typed, and any others, which pass
/// through as they came.
///
/// The one reader and checker of the schema. todayd checks a provider's
/// answer with `problem(in:)` and turns a toggle over with
/// `settingToggle(_:to:in:)`, both on the dictionary it keeps; TodayKit
/// writes a snapshot with `dictionary`; the Today view, todayctl and the
/// bars read one with `init(_:)`.
public struct Snapshot: Sendable, Equatable {
    /// The keys with a meaning, as a snapshot spells them.
    public enum Key: String, CaseIterable, Sendable {
        case title, subtitle, body, image, url, items, actions
        case imagePath = "image-path"
        case accessibilityLabel = "accessibility-label"
    }

    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// PNG or JPEG, at most `maximumImage` bytes.
    public var image: Data?
    public var imagePath: String?
    /// What a tap opens.
    public var url: URL?
    public var items: [Item]
    /// Buttons and toggles, at most `maximumActions`.
    public var actions: [Action]
    /// What a screen reader says for the widget.
    public var accessibilityLabel: String?
    /// Further keys, and keys of the wrong type, passed on as they are.
    public var extra: PlistDictionary

    public static let maximumSize = 4 << 20
    public static let maximumImage = 1 << 20
    public static let maximumActions = 8

    /// A row of the widget's list.
    public struct Item: Sendable, Equatable {
        public enum Key: String, CaseIterable, Sendable {
            case title, subtitle, url, action
        }

        public var title: String
        public var subtitle: String?
        /// What a click on the row opens.
        public var url: URL?
        /// The id of one of the snapshot's actions, which the row runs.
        public var action: String?
        /// Further keys of the item.
        public var extra: PlistDictionary

        public init(title: String, subtitle: String? = nil, url: URL? = nil, action: String? = nil, extra: PlistDictionary = [:]) {
            self.title = title
            self.subtitle = subtitle
            self.url = url
            self.action = action
            self.extra = extra
        }
    }

    /// A button or toggle (SPEC section 10).
    public struct Action: Sendable, Equatable {
        public enum Key: String, CaseIterable, Sendable {
            case id, title, kind, state
            case iconName = "icon-name"
            case accessibilityLabel = "accessibility-label"
        }

        public enum Kind: Sendable, Equatable {
            case button
            case toggle(isOn: Bool)
        }

        /// 1 to 64 of `[A-Za-z0-9._-]`, unique in the snapshot.
        public var id: String
        public var title: String
        public var kind: Kind
        /// A freedesktop icon name.
        public var iconName: String?
        public var accessibilityLabel: String?
        /// Further keys of the action.
        public var extra: PlistDictionary

        public init(id: String, title: String, kind: Kind, iconName: String? = nil, accessibilityLabel: String? = nil, extra: PlistDictionary = [:]) {
            self.id = id
            self.title = title
            self.kind = kind
            self.iconName = iconName
            self.accessibilityLabel = accessibilityLabel
            self.extra = extra
        }

        public var isToggle: Bool { if case .toggle = kind { true } else { false } }
        /// A toggle's state; false for a button.
        public var isOn: Bool { if case .toggle(let isOn) = kind { isOn } else { false } }

        /// The action as a snapshot holds it.
        public var dictionary: PlistDictionary {
            var d = extra
            d[Key.id.rawValue] = .string(id)
            d[Key.title.rawValue] = .string(title)
            switch kind {
            case .button:
                d[Key.kind.rawValue] = .string("button")
            case .toggle(let isOn):
                d[Key.kind.rawValue] = .string("toggle")
                d[Key.state.rawValue] = .boolean(isOn)
            }
            if let iconName { d[Key.iconName.rawValue] = .string(iconName) }
            if let accessibilityLabel { d[Key.accessibilityLabel.rawValue] = .string(accessibilityLabel) }
            return d
        }

        /// The action `value` describes, or nil where it has no id; its
        /// title is its id where it has none.
        public init?(_ value: PlistValue) {
            guard var d = value.dictionary, let id = d[Key.id.rawValue]?.string else { return nil }
            let title = d[Key.title.rawValue]?.string ?? id
            let kind: Kind = d[Key.kind.rawValue]?.string == "toggle" ? .toggle(isOn: d[Key.state.rawValue]?.bool ?? false) : .button
            let iconName = d[Key.iconName.rawValue]?.string
            let label = d[Key.accessibilityLabel.rawValue]?.string
            for key in Key.allCases { d[key.rawValue] = nil }
            self.init(id: id, title: title, kind: kind, iconName: iconName, accessibilityLabel: label, extra: d)
        }
    }

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, image: Data? = nil, imagePath: String? = nil,
        url: URL? = nil, items: [Item] = [], actions: [Action] = [], accessibilityLabel: String? = nil, extra: PlistDictionary = [:]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.image = image
        self.imagePath = imagePath
        self.url = url
        self.items = items
        self.actions = actions
        self.accessibilityLabel = accessibilityLabel
        self.extra = extra
    }

    /// What `dictionary` shows, for a client: a key of the wrong type, or
    /// a URL that does not read, stays in `extra`; an item without a title
    /// and an action without an id are left out (todayd publishes neither:
    /// `problem(in:)`).
    public init(_ dictionary: PlistDictionary) {
        var rest = dictionary
        func take<T>(_ key: Key, _ read: (PlistValue) -> T?) -> T? {
            guard let value = rest[key.rawValue], let typed = read(value) else { return nil }
            rest[key.rawValue] = nil
            return typed
        }
        title = take(.title) { $0.string }
        subtitle = take(.subtitle) { $0.string }
        body = take(.body) { $0.string }
        image = take(.image) { $0.data }
        imagePath = take(.imagePath) { $0.string }
        url = take(.url) { $0.string.flatMap(URL.init(string:)) }
        accessibilityLabel = take(.accessibilityLabel) { $0.string }
        items =
            take(.items) { value in
                value.array.map { list in
                    list.compactMap { element -> Item? in
                        guard var entry = element.dictionary, let title = entry[Item.Key.title.rawValue]?.string else { return nil }
                        let subtitle = entry[Item.Key.subtitle.rawValue]?.string
                        let url = entry[Item.Key.url.rawValue]?.string.flatMap(URL.init(string:))
                        let action = entry[Item.Key.action.rawValue]?.string
                        for key in Item.Key.allCases { entry[key.rawValue] = nil }
                        return Item(title: title, subtitle: subtitle, url: url, action: action, extra: entry)
                    }
                }
            } ?? []
        actions = take(.actions) { $0.array.map { $0.compactMap(Action.init) } } ?? []
        extra = rest
    }

    /// The snapshot as todayd keeps it and panels read it.
    public var dictionary: PlistDictionary {
        var d = extra
        func put(_ key: Key, _ value: PlistValue?) { if let value { d[key.rawValue] = value } }
        put(.title, title.map(PlistValue.string))
        put(.subtitle, subtitle.map(PlistValue.string))
        put(.body, body.map(PlistValue.string))
        put(.image, image.map(PlistValue.data))
        put(.imagePath, imagePath.map(PlistValue.string))
        put(.url, url.map { .string($0.absoluteString) })
        if !items.isEmpty {
            put(
                .items,
                .array(
                    items.map { item in
                        var entry = item.extra
                        entry[Item.Key.title.rawValue] = .string(item.title)
                        if let subtitle = item.subtitle { entry[Item.Key.subtitle.rawValue] = .string(subtitle) }
                        if let url = item.url { entry[Item.Key.url.rawValue] = .string(url.absoluteString) }
                        if let action = item.action { entry[Item.Key.action.rawValue] = .string(action) }
                        return .dictionary(entry)
                    }))
        }
        if !actions.isEmpty { put(.actions, .array(actions.map { .dictionary($0.dictionary) })) }
        put(.accessibilityLabel, accessibilityLabel.map(PlistValue.string))
        return d
    }

    /// The action `id` of the snapshot `dictionary`, or nil.
    public static func action(_ id: String, in dictionary: PlistDictionary) -> Action? {
        (dictionary[Key.actions.rawValue]?.array ?? []).lazy.compactMap(Action.init).first { $0.id == id }
    }

    /// The snapshot `dictionary` with toggle `id` set to `state`, and
    /// everything else as it was.
    public static func settingToggle(_ id: String, to state: Bool, in dictionary: PlistDictionary) -> PlistDictionary {
        guard let list = dictionary[Key.actions.rawValue]?.array else { return dictionary }
        var result = dictionary
        result[Key.actions.rawValue] = .array(
            list.map { value in
                guard var action = value.dictionary, action[Action.Key.id.rawValue]?.string == id else { return value }
                action[Action.Key.state.rawValue] = .boolean(state)
                return .dictionary(action)
            })
        return result
    }

    /// Whether `id` can name an action: 1 to 64 of `[A-Za-z0-9._-]`.
    public static func isValidActionID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "." || $0 == "_" || $0 == "-" }
    }

    /// Why `dictionary` cannot be published as a snapshot (SPEC sections 2
    /// and 10), as a provider's author reads it, or nil.
    public static func problem(in dictionary: PlistDictionary) -> String? {
        let typed: [(Key, String, (PlistValue) -> Bool)] = [
            (.title, "a string", { $0.string != nil }), (.subtitle, "a string", { $0.string != nil }),
            (.body, "a string", { $0.string != nil }), (.imagePath, "a string", { $0.string != nil }),
            (.url, "a string", { $0.string != nil }), (.accessibilityLabel, "a string", { $0.string != nil }),
            (.image, "data", { $0.data != nil }),
            (.items, "an array of dictionaries", { $0.array?.allSatisfy { $0.dictionary != nil } ?? false }),
        ]
        for (key, kind, check) in typed {
            if let value = dictionary[key.rawValue], !check(value) { return "snapshot key '\(key.rawValue)' must be \(kind), not \(value.typeName)" }
        }
        if let problem = actionProblem(dictionary) { return problem }
        if let image = dictionary[Key.image.rawValue]?.data, image.count > maximumImage {
            return "snapshot image is \(image.count) bytes, over the limit of \(maximumImage)"
        }
        // Written out only when the bound says it might be too big.
        if Plist.binarySizeBound(of: .dictionary(dictionary)) + 40 > maximumSize,
            let encoded = try? Plist.write(.dictionary(dictionary), format: .binary), encoded.count > maximumSize
        {
            return "snapshot is \(encoded.count) bytes encoded, over the limit of \(maximumSize)"
        }
        return nil
    }

    /// Why the snapshot's `actions`, or the `action` of one of its items,
    /// break SPEC section 10's rules, or nil.
    static func actionProblem(_ dictionary: PlistDictionary) -> String? {
        var ids = Set<String>()
        typealias A = Action.Key
        if let value = dictionary[Key.actions.rawValue] {
            guard let list = value.array, list.allSatisfy({ $0.dictionary != nil }) else {
                return "snapshot key 'actions' must be an array of dictionaries, not \(value.typeName)"
            }
            guard list.count <= maximumActions else { return "snapshot offers \(list.count) actions; at most \(maximumActions)" }
            for (index, action) in list.enumerated() {
                let at = "actions[\(index)]"
                guard let id = action[A.id.rawValue]?.string, isValidActionID(id) else {
                    return "\(at).id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"
                }
                guard ids.insert(id).inserted else { return "\(at).id '\(id)' is used twice" }
                guard action[A.title.rawValue]?.string != nil else { return "\(at) ('\(id)') needs a 'title' string" }
                switch action[A.kind.rawValue]?.string {
                case "button": break
                case "toggle":
                    guard action[A.state.rawValue]?.bool != nil else { return "\(at) ('\(id)') is a toggle and needs a boolean 'state'" }
                default: return "\(at).kind must be 'button' or 'toggle'"
                }
                for key in [A.iconName, A.accessibilityLabel] {
                    if let extra = action[key.rawValue], extra.string == nil { return "\(at).\(key.rawValue) must be a string, not \(extra.typeName)" }
                }
            }
        }
        for (index, item) in (dictionary[Key.items.rawValue]?.array ?? []).enumerated() {
            guard let named = item[Item.Key.action.rawValue] else { continue }
            guard let id = named.string, ids.contains(id) else {
                return "items[\(index)].action must name one of the snapshot's actions"
            }
        }
        return nil
    }
}
