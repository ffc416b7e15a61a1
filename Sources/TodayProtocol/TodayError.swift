import DBus

/// The service's errors, each mapped to its D-Bus name in one table.
public enum TodayError: Error, Equatable, DBusErrorConvertible, CustomStringConvertible {
    case noSuchWidget(String)
    case noSuchGroup(String)
    case noSuchBundle(String)
    case invalidManifest(String)
    case invalidArgs(String)
    case notRegistered(String)
    case notEntitled(String)
    case alreadyRegistered(String)
    /// A caller that may not make this call at all.
    case notAllowed(String)
    case providerFailed(String)
    case noSuchKey(String)
    case tooLarge(String)
    case storage(String)
    case invalidURL(String)
    case noHandler(String)
    /// The widget's current snapshot offers no such action.
    case noSuchAction(widget: String, action: String)
    /// No notification of that id in the list.
    case noSuchNotification(UInt32)
    /// The notification offers no such action.
    case noSuchNotificationAction(UInt32, String)

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
        case .notRegistered(let what):
            DBusError(Self.name("NotRegistered"), "\(what) needs to know which bundle is calling: call RegisterApp(bundle_id) first on this connection")
        case .notEntitled(let reason):
            DBusError(Self.name("NotEntitled"), reason)
        case .alreadyRegistered(let reason):
            DBusError(Self.name("AlreadyRegistered"), reason)
        case .notAllowed(let reason):
            DBusError(.accessDenied, reason)
        case .providerFailed(let reason):
            DBusError(Self.name("ProviderFailed"), reason)
        case .noSuchKey(let key):
            DBusError(Self.name("NoSuchKey"), "no key '\(key)' in the group's defaults")
        case .tooLarge(let reason):
            DBusError(Self.name("TooLarge"), reason)
        case .storage(let reason):
            DBusError(.failed, reason)
        case .invalidURL(let reason):
            DBusError(Self.name("InvalidURL"), reason)
        case .noHandler(let reason):
            DBusError(Self.name("NoHandler"), reason)
        case .noSuchAction(let widget, let action):
            DBusError(
                Self.name("NoSuchAction"),
                "the current snapshot of '\(widget)' offers no action '\(action.prefix(64))'; `todayctl show \(widget)` lists its actions")
        case .noSuchNotification(let id):
            DBusError(Self.name("NoSuchNotification"), "no notification \(id) in the list; `todayctl notifications` lists them")
        case .noSuchNotificationAction(let id, let key):
            DBusError(Self.name("NoSuchAction"), "notification \(id) offers no action '\(key.prefix(64))'")
        }
    }

    public var description: String { dbusError.message }

    static func name(_ suffix: String) -> ErrorName {
        // Every suffix above is a plain identifier, so the name is valid.
        ErrorName(rawValue: "io.github.todayd.Today1.Error." + suffix) ?? .failed
    }
}
