import Dispatch
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

/// A container app found in a bundle folder.
public struct AppManifest: Sendable, Equatable {
    public var bundleIdentifier: BundleID
    public var path: String
    public var displayName: String
    /// The app's executable (resolved, inside the bundle); nil when the
    /// manifest names none.
    public var executable: String?
    /// URL schemes of CFBundleURLTypes, as declared.
    public var urlSchemes: [String]
    /// App groups of its entitlements.
    public var groups: [GroupID]
    /// Ids of all its extensions, widgets or not.
    public var extensionIdentifiers: [BundleID]
}

/// A widget extension found in a bundle folder.
public struct WidgetManifest: Sendable, Equatable {
    public var bundleIdentifier: BundleID
    public var containerBundleIdentifier: BundleID
    public var displayName: String
    public var iconPath: String
    public var preferredHeight: Double
    public var marginInsets: Insets
    public var updateInterval: UInt32
    public var groups: [GroupID]
    public var path: String
    /// The provider executable (resolved, inside the bundle); nil when the
    /// manifest names none.
    public var executable: String?
    /// TodayUpdateTimeout, in seconds.
    public var updateTimeout: UInt32 = 10
    /// TodayMemoryLimit, in bytes.
    public var memoryLimit: UInt64 = 64 << 20
    /// TodayProviderBusName: the provider answers on the bus.
    public var providerBusName: String?
    /// TodayTimeline: a D-Bus provider is asked with GetTimeline.
    public var timeline = false
    /// `com.apple.security.network.client` in the widget's entitlements:
    /// its sandbox keeps the network.
    public var networkClient = false
    /// `com.apple.security.files.user-selected.read-only`: its sandbox
    /// lets it read what its `files` parameters name.
    public var userSelectedFiles = false

    /// Every localization of the display name, by language tag.
    public var localizedDisplayNames: [String: String] = [:]
    /// TodayParameters: what each instance can be configured with (SPEC section 16).
    public var parameters: [WidgetParameter] = []
    /// TodaySupportedFamilies, the first the default.
    public var families: [WidgetFamily] = [.medium]
    /// Whether the manifest declares either: a D-Bus provider is then
    /// asked through the `…In` methods, with the instance's context.
    public var configurable = false
    /// TodayPlaceholder: the gallery's preview, shown without a run.
    public var placeholder: PlistDictionary?

    /// The container app's folder (the `.app` that holds `path`).
    public var appPath: String { PathText.parent(of: PathText.parent(of: path)) }

    public struct Insets: Sendable, Equatable {
        public var top = 0.0, left = 0.0, bottom = 0.0, right = 0.0
    }
}

/// One reason a bundle was not loaded: the file, the key and what to do.
public struct BundleProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var key: String
    public var message: String
    public init(file: String, key: String, message: String) {
        self.file = file
        self.key = key
        self.message = message
    }
    public var description: String { "\(file): \(key): \(message)" }
}

/// What the bundle folders hold: the apps and widgets that passed the
/// rules of SPEC section 3, and the problems of those that did not.
public struct BundleCatalog: Sendable {
    public var apps: [AppManifest] = []
    public var widgets: [WidgetManifest] = []
    /// Every installed bundle id: container apps and all their extensions.
    public var bundleIDs: Set<BundleID> = []
    public var problems: [BundleProblem] = []

    public init() {}

    /// Scans `folders` in precedence order; the first folder holding a
    /// bundle id wins.
    /// todayd's own languages, as gettext picks them (SPEC section 12).
    static let languages = Localization.preferredLanguages(ProcessInfo.processInfo.environment)

    public static func scan(_ folders: [String]) -> BundleCatalog {
        var catalog = BundleCatalog()
        let apps = folders.flatMap(appBundles(in:))
        // Bundles load in parallel; precedence is applied afterwards, in order.
        let loaded = Mutex(Array(repeating: Result<(AppManifest, [WidgetManifest]), BundleProblem>?.none, count: apps.count))
        DispatchQueue.concurrentPerform(iterations: apps.count) { index in
            let result = loadWhole(apps[index])
            loaded.withLock { $0[index] = result }
        }
        for result in loaded.withLock({ $0 }) {
            switch result {
            case .success(let (app, widgets))?: catalog.add(app, widgets)
            case .failure(let problem)?: catalog.problems.append(problem)
            case nil: break
            }
        }
        catalog.widgets.sort { ($0.displayName, $0.bundleIdentifier) < ($1.displayName, $1.bundleIdentifier) }
        return catalog
    }

    /// Checks bundles the way a bundle author runs `todayctl lint`: each
    /// path is a `.app` bundle or a folder of them. Returns how many
    /// bundles were checked and what is wrong with them.
    public static func lint(_ paths: [String]) -> (checked: Int, problems: [BundleProblem]) {
        var catalog = BundleCatalog()
        var checked = 0
        for path in paths {
            guard FileSystem.isDirectory(path) else {
                catalog.problems.append(BundleProblem(file: path, key: "-", message: "no such folder; give a .app bundle or a folder of them"))
                continue
            }
            let apps = path.hasSuffix(".app") ? [path] : appBundles(in: path)
            if apps.isEmpty {
                catalog.problems.append(BundleProblem(file: path, key: "-", message: "holds no .app bundle"))
            }
            for app in apps {
                checked += 1
                catalog.add(app, allowDuplicates: true)
            }
        }
        return (checked, catalog.problems)
    }

    static func appBundles(in folder: String) -> [String] {
        FileSystem.entries(folder).filter { $0.hasSuffix(".app") }.sorted()
            .map { folder + "/" + $0 }
    }

    /// Adds a loaded app unless a folder of higher precedence had its id.
    mutating func add(_ app: AppManifest, _ widgets: [WidgetManifest], allowDuplicates: Bool = false) {
        guard allowDuplicates || !bundleIDs.contains(app.bundleIdentifier) else { return }
        apps.append(app)
        self.widgets += widgets
        bundleIDs.insert(app.bundleIdentifier)
        bundleIDs.formUnion(app.extensionIdentifiers)
    }

    mutating func add(_ path: String, allowDuplicates: Bool = false) {
        switch Self.loadWhole(path) {
        case .success(let (app, widgets)): add(app, widgets, allowDuplicates: allowDuplicates)
        case .failure(let problem): problems.append(problem)
        }
    }

    /// Loads the bundle at `app` (`load`), again where another took its
    /// place while it was read. `todayctl install` swaps a new version in
    /// with one exchange of folders (`BundleInstaller`), so a look sees the
    /// old bundle or the new one, whole; but a load reads many files by
    /// their paths, and one that straddled the exchange read the app of
    /// one version and its widgets of the other: their versions differ and
    /// the bundle would be skipped, its widgets gone until the next scan.
    /// The folder's device and inode, before and after, tell; ten tries at
    /// most (a load on a busy machine can take longer than one install
    /// apart from the next), and then what the last one found.
    static func loadWhole(_ app: String) -> Result<(AppManifest, [WidgetManifest]), BundleProblem> {
        func folder() -> [UInt64]? { FileIdentity(of: app).map { [$0.device, $0.inode] } }
        var tries = 0
        while true {
            let before = folder()
            let result = Result { try load(app: app) }.mapError { error in
                error as? BundleProblem ?? BundleProblem(file: app, key: "-", message: "\(error)")
            }
            tries += 1
            if tries == 10 || folder() == before { return result }
        }
    }

    // MARK: One bundle

    /// Loads a container app and its widget extensions, or says what rule
    /// it breaks.
    public static func load(app: String) throws -> (AppManifest, [WidgetManifest]) {
        let infoPath = app + "/Info.plist"
        let info = try infoPlist(app)
        let appID = try bundleID(info, in: infoPath)
        let version = try string(info, "CFBundleVersion", in: infoPath)
        let shortVersion = try string(info, "CFBundleShortVersionString", in: infoPath)
        let appName = try string(info, "CFBundleDisplayName", in: infoPath) ?? string(info, "CFBundleName", in: infoPath) ?? appID.rawValue
        var iconPath = ""
        if let icon = try string(info, "CFBundleIconFile", in: infoPath) {
            iconPath = try resource(icon, inside: app, key: "CFBundleIconFile", file: infoPath)
        }
        let appExecutable = try string(info, "CFBundleExecutable", in: infoPath).map {
            try executable($0, inside: app, file: infoPath)
        }
        let schemes = try urlSchemes(info, in: infoPath)
        let appGroups = try entitledGroups(app)

        var widgets: [WidgetManifest] = []
        var extensionIDs: [BundleID] = []
        let plugIns = app + "/PlugIns"
        for name in FileSystem.entries(plugIns).sorted() where name.hasSuffix(".appex") {
            let appex = plugIns + "/" + name
            let path = appex + "/Info.plist"
            let extensionInfo = try infoPlist(appex)
            let id = try bundleID(extensionInfo, in: path)
            guard id.rawValue.hasPrefix(appID.rawValue + ".") else {
                throw BundleProblem(file: path, key: "CFBundleIdentifier", message: "'\(id)' must start with its container's id and a dot ('\(appID).')")
            }
            guard try string(extensionInfo, "CFBundleVersion", in: path) == version else {
                throw BundleProblem(file: path, key: "CFBundleVersion", message: "must equal the container app's ('\(version ?? "none")')")
            }
            guard try string(extensionInfo, "CFBundleShortVersionString", in: path) == shortVersion else {
                throw BundleProblem(file: path, key: "CFBundleShortVersionString", message: "must equal the container app's ('\(shortVersion ?? "none")')")
            }
            extensionIDs.append(id)
            let providerExecutable = try string(extensionInfo, "CFBundleExecutable", in: path).map {
                try executable($0, inside: appex, file: path)
            }
            let entitlements = try entitlements(appex)
            let groups = entitlements.groups
            guard let ext = try dictionary(extensionInfo, "NSExtension", in: path),
                try string(ext, "NSExtensionPointIdentifier", in: path, prefix: "NSExtension.") == "com.apple.widget-extension"
            else { continue }
            guard ext["NSExtensionPrincipalClass"] != nil || ext["NSExtensionMainStoryboard"] != nil else {
                throw BundleProblem(file: path, key: "NSExtension", message: "a widget extension needs NSExtensionPrincipalClass or NSExtensionMainStoryboard")
            }
            let prefix = "NSExtension.NSExtensionAttributes."
            let attributes = try dictionary(ext, "NSExtensionAttributes", in: path, prefix: "NSExtension.") ?? [:]
            let height = try number(attributes, "TodayPreferredHeight", in: path, prefix: prefix) ?? 0
            guard height >= 0, height.isFinite else {
                throw BundleProblem(file: path, key: prefix + "TodayPreferredHeight", message: "must be 0 or more")
            }
            var insets = WidgetManifest.Insets()
            if let given = try dictionary(attributes, "TodayMarginInsets", in: path, prefix: prefix) {
                let insetPrefix = prefix + "TodayMarginInsets."
                insets.top = try number(given, "top", in: path, prefix: insetPrefix) ?? 0
                insets.left = try number(given, "left", in: path, prefix: insetPrefix) ?? 0
                insets.bottom = try number(given, "bottom", in: path, prefix: insetPrefix) ?? 0
                insets.right = try number(given, "right", in: path, prefix: insetPrefix) ?? 0
            }
            let interval = try integer(attributes, "TodayUpdateInterval", in: path, prefix: prefix) ?? 0
            guard interval == 0 || (60...Int64(UInt32.max)).contains(interval) else {
                throw BundleProblem(file: path, key: prefix + "TodayUpdateInterval", message: "must be 0 (only on request) or at least 60 seconds, not \(interval)")
            }
            let timeout = try integer(attributes, "TodayUpdateTimeout", in: path, prefix: prefix) ?? 10
            guard (1...3600).contains(timeout) else {
                throw BundleProblem(file: path, key: prefix + "TodayUpdateTimeout", message: "must be between 1 and 3600 seconds, not \(timeout)")
            }
            let memory = try integer(attributes, "TodayMemoryLimit", in: path, prefix: prefix) ?? 64 << 20
            guard memory >= 1 << 20 else {
                throw BundleProblem(file: path, key: prefix + "TodayMemoryLimit", message: "must be at least 1048576 bytes, not \(memory)")
            }
            let busName = try string(attributes, "TodayProviderBusName", in: path, prefix: prefix)
            if let busName, !isWellKnownBusName(busName) {
                throw BundleProblem(file: path, key: prefix + "TodayProviderBusName", message: "'\(busName)' is not a well-known D-Bus name such as org.example.App.Provider")
            }
            let timeline = try boolean(attributes, "TodayTimeline", in: path, prefix: prefix) ?? false
            let declaredParameters = try parameters(attributes, in: path, prefix: prefix)
            let families = try families(attributes, in: path, prefix: prefix)
            let placeholder = try dictionary(attributes, "TodayPlaceholder", in: path, prefix: prefix)
            if let placeholder, let problem = Snapshot.problem(in: placeholder) {
                throw BundleProblem(file: path, key: prefix + "TodayPlaceholder", message: "not a snapshot: \(problem)")
            }
            let baseName = try string(extensionInfo, "CFBundleDisplayName", in: path) ?? string(extensionInfo, "CFBundleName", in: path) ?? id.rawValue
            let tables = try Localization.tables(of: appex)
            let localizedNames = Localization.displayNames(in: tables)
            // Titles of parameters and choices are keys of the same tables.
            let parameters = declaredParameters.map { parameter in
                var localized = parameter
                localized.title = Localization.localized(parameter.title, in: tables, for: languages)
                localized.choices = parameter.choices.map { .init(value: $0.value, title: Localization.localized($0.title, in: tables, for: languages)) }
                return localized
            }
            let displayName = Localization.choose(localizedNames, for: languages) ?? baseName
            widgets.append(
                WidgetManifest(
                    bundleIdentifier: id, containerBundleIdentifier: appID, displayName: displayName, iconPath: iconPath,
                    preferredHeight: height, marginInsets: insets, updateInterval: UInt32(interval), groups: groups, path: appex,
                    executable: providerExecutable, updateTimeout: UInt32(timeout), memoryLimit: UInt64(memory),
                    providerBusName: busName, timeline: timeline, networkClient: entitlements.networkClient,
                    userSelectedFiles: entitlements.userSelectedFiles,
                    localizedDisplayNames: localizedNames, parameters: parameters, families: families,
                    configurable: !declaredParameters.isEmpty || attributes["TodaySupportedFamilies"] != nil, placeholder: placeholder))
        }
        let app = AppManifest(
            bundleIdentifier: appID, path: app, displayName: appName, executable: appExecutable, urlSchemes: schemes,
            groups: appGroups, extensionIdentifiers: extensionIDs)
        return (app, widgets)
    }
}
