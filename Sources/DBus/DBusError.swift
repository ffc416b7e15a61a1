/// An error that travels over D-Bus: its name and a message a person can act on.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    public var name: ErrorName
    public var message: String

    public init(_ name: ErrorName, _ message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name.rawValue): \(message)" }

    public static func failed(_ message: String) -> DBusError { DBusError(.failed, message) }
    public static func invalidArgs(_ message: String) -> DBusError { DBusError(.invalidArgs, message) }
    public static func disconnected(_ message: String) -> DBusError { DBusError(.disconnected, message) }
}

/// Errors thrown by handlers that know their D-Bus form. Anything else a
/// handler throws is answered as `org.freedesktop.DBus.Error.Failed`.
public protocol DBusErrorConvertible: Error {
    var dbusError: DBusError { get }
}

extension DBusError: DBusErrorConvertible {
    public var dbusError: DBusError { self }
}

extension ErrorName {
    public static let failed = ErrorName("org.freedesktop.DBus.Error.Failed")
    public static let noMemory = ErrorName("org.freedesktop.DBus.Error.NoMemory")
    public static let serviceUnknown = ErrorName("org.freedesktop.DBus.Error.ServiceUnknown")
    public static let nameHasNoOwner = ErrorName("org.freedesktop.DBus.Error.NameHasNoOwner")
    public static let authFailed = ErrorName("org.freedesktop.DBus.Error.AuthFailed")
    public static let noReply = ErrorName("org.freedesktop.DBus.Error.NoReply")
    public static let timeout = ErrorName("org.freedesktop.DBus.Error.Timeout")
    public static let disconnected = ErrorName("org.freedesktop.DBus.Error.Disconnected")
    public static let invalidArgs = ErrorName("org.freedesktop.DBus.Error.InvalidArgs")
    public static let accessDenied = ErrorName("org.freedesktop.DBus.Error.AccessDenied")
    public static let limitsExceeded = ErrorName("org.freedesktop.DBus.Error.LimitsExceeded")
    public static let unknownMethod = ErrorName("org.freedesktop.DBus.Error.UnknownMethod")
    public static let unknownObject = ErrorName("org.freedesktop.DBus.Error.UnknownObject")
    public static let unknownInterface = ErrorName("org.freedesktop.DBus.Error.UnknownInterface")
    public static let unknownProperty = ErrorName("org.freedesktop.DBus.Error.UnknownProperty")
    public static let propertyReadOnly = ErrorName("org.freedesktop.DBus.Error.PropertyReadOnly")
    public static let notSupported = ErrorName("org.freedesktop.DBus.Error.NotSupported")
}
