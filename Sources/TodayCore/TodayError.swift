import DBus

/// The service's errors, each mapped to its D-Bus name in one table.
public enum TodayError: Error, Equatable, DBusErrorConvertible, CustomStringConvertible {
    case noSuchWidget(String)
    case noSuchGroup(String)
    case noSuchBundle(String)
    case invalidManifest(String)
    case invalidArgs(String)

    public var dbusError: DBusError {
        switch self {
        case .noSuchWidget(let id):
            DBusError(Self.name("NoSuchWidget"), "no widget '\(id)' is installed; `todayctl list` shows those that are")
        case .noSuchGroup(let id):
            DBusError(Self.name("NoSuchGroup"), "no installed bundle is entitled to the app group '\(id)'")
        case .noSuchBundle(let id):
            DBusError(Self.name("NoSuchBundle"), "no bundle '\(id)' is installed in the bundle folders")
        case .invalidManifest(let reason):
            DBusError(Self.name("InvalidManifest"), reason)
        case .invalidArgs(let reason):
            DBusError(.invalidArgs, reason)
        }
    }

    public var description: String { dbusError.message }

    static func name(_ suffix: String) -> ErrorName {
        // Every suffix above is a plain identifier, so the name is valid.
        ErrorName(rawValue: "io.github.todayd.Today1.Error." + suffix) ?? .failed
    }
}
