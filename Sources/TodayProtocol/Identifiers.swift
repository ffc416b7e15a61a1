import DBus

/// An id that is a string which passed its rules: made only through
/// `init?(rawValue:)`, and read from a D-Bus argument with an InvalidArgs
/// that names the rules.
public protocol CheckedIdentifier: RawRepresentable<String>, Hashable, Comparable, Sendable, CustomStringConvertible, DBusArgument {
    static func isValid(_ text: String) -> Bool
    /// What is said of `text` where it breaks the rules, wherever it was given.
    static func problem(_ text: String) -> String
}

extension CheckedIdentifier {
    /// An id written in the source, as names are (`MemberName("Get")`):
    /// one that breaks the rules is a programming error.
    public init(_ literal: StaticString) {
        guard let id = Self(rawValue: "\(literal)") else { preconditionFailure(Self.problem("\(literal)")) }
        self = id
    }

    public init(dbusValue value: Value) throws {
        guard case .string(let text) = value else { throw Self.mismatch(value) }
        guard let id = Self(rawValue: text) else { throw TodayError.invalidArgs(Self.problem(text)) }
        self = id
    }

    public static var dbusType: DBusType { .string }
    public var dbusValue: Value { .string(rawValue) }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A bundle id (SPEC section 3): reverse-DNS, `[A-Za-z0-9.-]`, at most 255
/// bytes, no empty component. Widgets, apps and the arguments that name
/// them (`widget_id`, `bundle_id`) are bundle ids.
public struct BundleID: CheckedIdentifier {
    public let rawValue: String

    public init?(rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    public static func isValid(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 255 else { return false }
        let allowed = id.utf8.allSatisfy { byte in
            byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || (48...57).contains(byte) || (65...90).contains(byte)
                || (97...122).contains(byte)
        }
        return allowed && !id.split(separator: ".", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    public static func problem(_ text: String) -> String {
        "'\(text.prefix(300))' is not a bundle id: reverse-DNS, [A-Za-z0-9.-], at most 255 bytes, such as tech.agostini.app.LatestPost"
    }
}

/// An app group id (SPEC section 5): `group.` and reverse-DNS characters,
/// at most 255 bytes, no `..`.
public struct GroupID: CheckedIdentifier {
    public let rawValue: String

    public init?(rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    public static func isValid(_ id: String) -> Bool {
        id.hasPrefix("group.") && id.count > 6 && BundleID.isValid(id)
    }

    public static func problem(_ text: String) -> String {
        "'\(text.prefix(300))' is not a group id: 'group.' and reverse-DNS characters, at most 255 bytes, no '..'"
    }
}
