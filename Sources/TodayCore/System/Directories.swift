import FoundationEssentials
import TodayProtocol

/// The XDG base directories todayd uses, with the specification's defaults
/// when a variable is unset or empty. Built from an environment so tests
/// pass their own.
public struct Directories: Sendable, Equatable {
    /// The user's home (HOME): where a `~/` of a widget's settings points.
    public var home: String
    public var dataHome: String
    public var dataDirs: [String]
    public var cacheHome: String
    public var stateHome: String
    /// The user's settings (XDG_CONFIG_HOME).
    public var configHome: String
    /// Folders given with `--bundles`, lowest precedence.
    public var extraBundleFolders: [String]

    public init(environment: [String: String], extraBundleFolders: [String] = []) {
        func value(_ name: String) -> String? {
            guard let v = environment[name], !v.isEmpty, v.hasPrefix("/") else { return nil }
            return v
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? FileManager.default.homeDirectoryForCurrentUser.path
        self.home = home
        dataHome = value("XDG_DATA_HOME") ?? home + "/.local/share"
        cacheHome = value("XDG_CACHE_HOME") ?? home + "/.cache"
        stateHome = value("XDG_STATE_HOME") ?? home + "/.local/state"
        configHome = value("XDG_CONFIG_HOME") ?? home + "/.config"
        dataDirs = (value("XDG_DATA_DIRS") ?? "/usr/local/share/:/usr/share/")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        self.extraBundleFolders = extraBundleFolders
    }

    /// App-group containers (SPEC section 4): `<groupsFolder>/<group id>/`.
    public var groupsFolder: String { dataHome + "/todayd/groups" }

    /// An extension's own container (SPEC section 4).
    public func container(of bundleID: String) -> String { dataHome + "/todayd/containers/" + bundleID }
    public func container(of bundleID: BundleID) -> String { container(of: bundleID.rawValue) }

    /// The bundle folders, highest precedence first (SPEC section 3).
    public var bundleFolders: [String] {
        var folders = [dataHome + "/todayd/bundles"]
        folders += dataDirs.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/todayd/bundles" }
        folders += extraBundleFolders
        var seen = Set<String>()
        return folders.filter { seen.insert($0).inserted }
    }
}
