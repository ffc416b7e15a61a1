import DBus
import FoundationEssentials
import PropertyListValues

/// A widget kind (SPEC section 16): a widget extension, named by its
/// bundle id. Its manifest, provider and container are the kind's; what a
/// user placed of it are its instances (`WidgetInstanceID`).
public typealias WidgetKind = BundleID

/// A widget the user placed (SPEC section 16): an instance of a kind (the
/// widget extension, named by its bundle id). The kind's own object is its
/// default instance, number 0; added instances are numbered from 1, never
/// reused for the kind.
public struct WidgetInstanceID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let kind: WidgetKind
    /// 0: the default instance.
    public let number: UInt32

    public init(kind: WidgetKind, number: UInt32 = 0) {
        self.kind = kind
        self.number = number
    }

    public var isDefault: Bool { number == 0 }

    /// `kind` for the default instance, `kind/n` for an added one: how
    /// todayctl and the logs name it.
    public var description: String { isDefault ? kind.rawValue : "\(kind.rawValue)/\(number)" }

    /// What `description` wrote, or nil.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let kind = BundleID(rawValue: String(parts[0])) else { return nil }
        if parts.count == 2 {
            guard let number = UInt32(parts[1]), number > 0 else { return nil }
            self.init(kind: kind, number: number)
        } else {
            self.init(kind: kind)
        }
    }

    /// The instance's object: the kind's for the default instance,
    /// `/io/github/todayd/Today1/widgets/<escaped kind>/<n>` for an added one.
    public var path: ObjectPath {
        let kindPath = Today.widgetPath(kind)
        return isDefault ? kindPath : kindPath.appending(escaped: String(number))
    }

    /// The instance whose object is at `path`, or nil.
    public init?(path: ObjectPath) {
        let prefix = Today.widgetsPath.rawValue + "/"
        guard path.rawValue.hasPrefix(prefix) else { return nil }
        let parts = path.rawValue.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let kindText = ObjectPath.unescape(String(parts[0])), let kind = BundleID(rawValue: kindText)
        else { return nil }
        if parts.count == 2 {
            guard let numberText = ObjectPath.unescape(String(parts[1])), let number = UInt32(numberText), number > 0 else { return nil }
            self.init(kind: kind, number: number)
        } else {
            self.init(kind: kind)
        }
    }

    /// What an exec provider finds in TODAY_INSTANCE: empty for the
    /// default instance, else the instance's number.
    public var environmentValue: String { isDefault ? "" : String(number) }

    public static func < (a: WidgetInstanceID, b: WidgetInstanceID) -> Bool {
        a.kind != b.kind ? a.kind < b.kind : a.number < b.number
    }
}

/// The sizes a widget comes in (WidgetKit's families): small cards two to
/// a row, medium full width, large full width and taller.
public enum WidgetFamily: String, Sendable, CaseIterable, Hashable {
    case small, medium, large
}

/// One setting of a configurable widget, from its manifest's
/// `TodayParameters` (SPEC section 16).
public struct WidgetParameter: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case string, integer, boolean, choice
    }

    public struct Choice: Sendable, Equatable {
        public var value: String
        public var title: String

        public init(value: String, title: String) {
            self.value = value
            self.title = title
        }
    }

    public var key: String
    public var title: String
    public var type: Kind
    /// What the instance has until it is configured: a string, an integer,
    /// a boolean, or a choice's value; nil: none.
    public var defaultValue: PlistValue?
    /// A choice's values, where they are fixed.
    public var choices: [Choice]
    /// A choice whose values the provider gives (`perform-options KEY`).
    public var dynamic: Bool
    /// A string that names files and folders, separated by `:` (SPEC
    /// section 17); a leading `~/` is the user's home. The sandbox lets a
    /// provider entitled to user-selected files read them (design.md).
    public var files: Bool

    public init(
        key: String, title: String, type: Kind, defaultValue: PlistValue? = nil, choices: [Choice] = [], dynamic: Bool = false,
        files: Bool = false
    ) {
        self.key = key
        self.title = title
        self.type = type
        self.defaultValue = defaultValue
        self.choices = choices
        self.dynamic = dynamic
        self.files = files
    }

    /// The paths a `files` parameter's value names, `~/` made the user's
    /// `home`; only absolute ones.
    public static func paths(in value: String, home: String) -> [String] {
        value.split(separator: ":").compactMap { part in
            let path = String(part.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
            if path == "~" { return home }
            if path.hasPrefix("~/") { return home + path.dropFirst(1) }
            return path.hasPrefix("/") ? path : nil
        }
    }

    /// The parameter as the Widget interface's Parameters property gives it.
    public var dbusValue: Value {
        var entries: [(String, Value)] = [
            ("key", .string(key)), ("title", .string(title)), ("type", .string(type.rawValue)), ("dynamic", .boolean(dynamic)),
            ("files", .boolean(files)),
            ("choices", .array(.dictionary(key: .string, value: .variant), choices.map { .vardict([("value", .string($0.value)), ("title", .string($0.title))]) })),
        ]
        if let defaultValue { entries.append(("default", ValueMapping.dbus(defaultValue))) }
        return .vardict(entries)
    }

    /// What `dbusValue` gave, or nil.
    public init?(dbusValue value: Value) {
        guard let fields = value.stringDictionary, let key = fields["key"]?.string, let type = fields["type"]?.string.flatMap(Kind.init)
        else { return nil }
        self.init(
            key: key, title: fields["title"]?.string ?? key, type: type, defaultValue: fields["default"].flatMap { try? ValueMapping.plist($0) },
            choices: (fields["choices"]?.elements ?? []).compactMap { choice in
                guard let choice = choice.stringDictionary, let value = choice["value"]?.string else { return nil }
                return Choice(value: value, title: choice["title"]?.string ?? value)
            },
            dynamic: fields["dynamic"]?.bool ?? false, files: fields["files"]?.bool ?? false)
    }

    /// A value typed on a command line, as this parameter takes it.
    public func value(parsing text: String) -> PlistValue? {
        switch type {
        case .string, .choice: return .string(text)
        case .integer: return Int64(text).map(PlistValue.integer)
        case .boolean: return ["true": true, "yes": true, "1": true, "false": false, "no": false, "0": false][text].map(PlistValue.boolean)
        }
    }

    /// Whether `value` fits this parameter; nil, or what is wrong with it.
    public func problem(with value: PlistValue) -> String? {
        switch (type, value) {
        case (.string, .string), (.integer, .integer), (.boolean, .boolean): return nil
        case (.integer, .unsignedInteger(let u)): return u <= UInt64(Int64.max) ? nil : "\(u) is too large"
        case (.choice, .string(let chosen)):
            guard !dynamic, !choices.contains(where: { $0.value == chosen }) else { return nil }
            return "'\(chosen)' is not one of its choices (\(choices.map(\.value).joined(separator: ", ")))"
        case (.choice, _): return "must be a string, one of its choices, not \(value.typeName)"
        default: return "must be \(type == .integer ? "an integer" : "a \(type.rawValue)"), not \(value.typeName)"
        }
    }
}

/// What is wrong with a configuration or family asked for: InvalidArgs
/// with its text.
public struct ConfigurationProblem: Error, Sendable, CustomStringConvertible, Equatable {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// A kind's settings, checked and completed (SPEC section 16).
public enum WidgetConfiguration {
    /// `configuration` checked against `parameters`: every key a parameter,
    /// every value of its type (InvalidArgs names the parameter). Integers
    /// come back as integers whatever width D-Bus carried them in.
    public static func checked(_ configuration: PlistDictionary, against parameters: [WidgetParameter]) throws(ConfigurationProblem)
        -> PlistDictionary
    {
        var result = PlistDictionary()
        for (key, value) in configuration {
            guard let parameter = parameters.first(where: { $0.key == key }) else {
                let known = parameters.isEmpty ? "it has none" : "its parameters are " + parameters.map(\.key).joined(separator: ", ")
                throw ConfigurationProblem("the widget has no parameter '\(key)'; \(known)")
            }
            if let problem = parameter.problem(with: value) {
                throw ConfigurationProblem("parameter '\(key)': \(problem)")
            }
            if case .unsignedInteger(let u) = value { result[key] = .integer(Int64(u)) } else { result[key] = value }
        }
        return result
    }

    /// `configuration` with each parameter it leaves out at its default:
    /// what a provider sees.
    public static func complete(_ configuration: PlistDictionary, with parameters: [WidgetParameter]) -> PlistDictionary {
        var result = configuration
        for parameter in parameters where result[parameter.key] == nil {
            if let value = parameter.defaultValue { result[parameter.key] = value }
        }
        return result
    }

    /// `family` checked against the kind's families; "" is its first.
    public static func family(_ family: String, supported: [WidgetFamily]) throws(ConfigurationProblem) -> WidgetFamily {
        let fallback = supported.first ?? .medium
        guard !family.isEmpty else { return fallback }
        guard let chosen = WidgetFamily(rawValue: family) else {
            throw ConfigurationProblem("'\(family)' is not a family: small, medium or large")
        }
        guard supported.contains(chosen) else {
            throw ConfigurationProblem("the widget does not come in '\(family)'; it comes in \(supported.map(\.rawValue).joined(separator: ", "))")
        }
        return chosen
    }
}
