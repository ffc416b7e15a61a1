import CDBus
import Glibc

/// A D-Bus object path such as `/io/github/todayd/Today1`, checked on creation.
public struct ObjectPath: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// Nil when `rawValue` is not a valid object path.
    public init?(rawValue: String) {
        guard Validation.isValid(rawValue, dbus_validate_path) else { return nil }
        self.rawValue = rawValue
    }

    /// A path written in the source: a literal must be valid.
    public init(_ literal: StaticString) {
        guard let path = ObjectPath(rawValue: "\(literal)") else {
            preconditionFailure("invalid object path literal \(literal)")
        }
        self = path
    }

    public static let root = ObjectPath("/")

    public var description: String { rawValue }

    public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// This path with one more element, escaped so that any string fits.
    public func appending(escaped element: String) -> ObjectPath {
        let escaped = ObjectPath.escape(element)
        let raw = rawValue == "/" ? "/" + escaped : rawValue + "/" + escaped
        // Escaping yields only [A-Za-z0-9_], so the result is always valid.
        return ObjectPath(unchecked: raw)
    }

    /// The path that holds this one, or nil for the root.
    public var parent: ObjectPath? {
        guard rawValue != "/" else { return nil }
        guard let slash = rawValue.lastIndex(of: "/") else { return nil }
        let raw = slash == rawValue.startIndex ? "/" : String(rawValue[..<slash])
        return ObjectPath(unchecked: raw)
    }

    /// True when `self` lies strictly below `ancestor`.
    public func isDescendant(of ancestor: ObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return rawValue != "/" }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    /// Escapes one path element: every byte outside `[A-Za-z0-9]` becomes `_`
    /// and two lower-case hex digits; the empty string becomes `_`.
    public static func escape(_ element: String) -> String {
        if element.isEmpty { return "_" }
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(element.utf8.count)
        for byte in element.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "_"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Reverses `escape`; nil when `escaped` is not something `escape` yields.
    public static func unescape(_ escaped: String) -> String? {
        if escaped == "_" { return "" }
        var bytes: [UInt8] = []
        var iterator = Array(escaped.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "_") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue)
                else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    init(unchecked raw: String) { rawValue = raw }
}

/// A bus name: a unique name (`:1.42`) or a well-known one (`io.github.todayd.Today1`).
public struct BusName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard Validation.isValid(rawValue, dbus_validate_bus_name) else { return nil }
        self.rawValue = rawValue
    }
    public init(_ literal: StaticString) {
        guard let name = BusName(rawValue: "\(literal)") else { preconditionFailure("invalid bus name \(literal)") }
        self = name
    }
    public var description: String { rawValue }
    public static let bus = BusName("org.freedesktop.DBus")
}

/// An interface name such as `org.freedesktop.DBus.Properties`.
public struct InterfaceName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard Validation.isValid(rawValue, dbus_validate_interface) else { return nil }
        self.rawValue = rawValue
    }
    public init(_ literal: StaticString) {
        guard let name = InterfaceName(rawValue: "\(literal)") else {
            preconditionFailure("invalid interface name \(literal)")
        }
        self = name
    }
    public var description: String { rawValue }

    public static let properties = InterfaceName("org.freedesktop.DBus.Properties")
    public static let introspectable = InterfaceName("org.freedesktop.DBus.Introspectable")
    public static let peer = InterfaceName("org.freedesktop.DBus.Peer")
    public static let objectManager = InterfaceName("org.freedesktop.DBus.ObjectManager")
    public static let bus = InterfaceName("org.freedesktop.DBus")
}

/// A method or signal name such as `GetAll`.
public struct MemberName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard Validation.isValid(rawValue, dbus_validate_member) else { return nil }
        self.rawValue = rawValue
    }
    public init(_ literal: StaticString) {
        guard let name = MemberName(rawValue: "\(literal)") else { preconditionFailure("invalid member name \(literal)") }
        self = name
    }
    public var description: String { rawValue }
}

/// The members of the freedesktop interfaces that clients name.
extension MemberName {
    public static let get = MemberName("Get")
    public static let getAll = MemberName("GetAll")
    public static let propertiesChanged = MemberName("PropertiesChanged")
    public static let interfacesAdded = MemberName("InterfacesAdded")
    public static let interfacesRemoved = MemberName("InterfacesRemoved")
    public static let getManagedObjects = MemberName("GetManagedObjects")
    public static let nameOwnerChanged = MemberName("NameOwnerChanged")
    public static let getNameOwner = MemberName("GetNameOwner")
    public static let introspect = MemberName("Introspect")
}

/// An error name such as `org.freedesktop.DBus.Error.InvalidArgs`.
public struct ErrorName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard Validation.isValid(rawValue, dbus_validate_error_name) else { return nil }
        self.rawValue = rawValue
    }
    public init(_ literal: StaticString) {
        guard let name = ErrorName(rawValue: "\(literal)") else { preconditionFailure("invalid error name \(literal)") }
        self = name
    }
    public var description: String { rawValue }
}

enum Validation {
    typealias Validator = (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t

    /// Runs a libdbus validator; strings with NUL bytes are never valid names.
    /// The corresponding C functions are `dbus_validate_path` and its siblings.
    static func isValid(_ string: String, _ validator: Validator) -> Bool {
        guard !containsNUL(string) else { return false }
        return string.withCString { validator($0, nil) != 0 }
    }

    /// True when `string` can travel as a D-Bus string: no NUL byte
    /// (Swift strings are always valid UTF-8).
    static func isTransportable(_ string: String) -> Bool {
        !containsNUL(string)
    }

    /// Whether a NUL byte is in `string`: memchr over its UTF-8 storage,
    /// which every string crossing the bus passes through.
    static func containsNUL(_ string: String) -> Bool {
        let found = string.utf8.withContiguousStorageIfAvailable { bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, 0, bytes.count) != nil
        }
        return found ?? string.utf8.contains(0)
    }
}
