import Dispatch
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// A container app found in a bundle folder.
public struct AppManifest: Sendable, Equatable {
    public var bundleIdentifier: String
    public var path: String
    public var displayName: String
    /// The app's executable (resolved, inside the bundle); nil when the
    /// manifest names none.
    public var executable: String?
    /// URL schemes of CFBundleURLTypes, as declared.
    public var urlSchemes: [String]
    /// App groups of its entitlements.
    public var groups: [String]
    /// Ids of all its extensions, widgets or not.
    public var extensionIdentifiers: [String]
}

/// A widget extension found in a bundle folder.
public struct WidgetManifest: Sendable, Equatable {
    public var bundleIdentifier: String
    public var containerBundleIdentifier: String
    public var displayName: String
    public var iconPath: String
    public var preferredHeight: Double
    public var marginInsets: Insets
    public var updateInterval: UInt32
    public var groups: [String]
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

    /// Every localization of the display name, by language tag.
    public var localizedDisplayNames: [String: String] = [:]

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
    public var bundleIDs: Set<String> = []
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
            let result = Result { try load(app: apps[index]) }.mapError { error in
                error as? BundleProblem ?? BundleProblem(file: apps[index], key: "-", message: "\(error)")
            }
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
        do {
            let (app, widgets) = try Self.load(app: path)
            add(app, widgets, allowDuplicates: allowDuplicates)
        } catch let problem as BundleProblem {
            problems.append(problem)
        } catch {
            problems.append(BundleProblem(file: path, key: "-", message: "\(error)"))
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
        let appName = try string(info, "CFBundleDisplayName", in: infoPath) ?? string(info, "CFBundleName", in: infoPath) ?? appID
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
        var extensionIDs: [String] = []
        let plugIns = app + "/PlugIns"
        for name in FileSystem.entries(plugIns).sorted() where name.hasSuffix(".appex") {
            let appex = plugIns + "/" + name
            let path = appex + "/Info.plist"
            let extensionInfo = try infoPlist(appex)
            let id = try bundleID(extensionInfo, in: path)
            guard id.hasPrefix(appID + ".") else {
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
            let baseName = try string(extensionInfo, "CFBundleDisplayName", in: path) ?? string(extensionInfo, "CFBundleName", in: path) ?? id
            let localizedNames = try Localization.displayNames(of: appex)
            let displayName = Localization.choose(localizedNames, for: languages) ?? baseName
            widgets.append(
                WidgetManifest(
                    bundleIdentifier: id, containerBundleIdentifier: appID, displayName: displayName, iconPath: iconPath,
                    preferredHeight: height, marginInsets: insets, updateInterval: UInt32(interval), groups: groups, path: appex,
                    executable: providerExecutable, updateTimeout: UInt32(timeout), memoryLimit: UInt64(memory),
                    providerBusName: busName, timeline: timeline, networkClient: entitlements.networkClient,
                    localizedDisplayNames: localizedNames))
        }
        let app = AppManifest(
            bundleIdentifier: appID, path: app, displayName: appName, executable: appExecutable, urlSchemes: schemes,
            groups: appGroups, extensionIdentifiers: extensionIDs)
        return (app, widgets)
    }

    // MARK: Rules

    static func infoPlist(_ bundle: String) throws -> PlistDictionary {
        let path = bundle + "/Info.plist"
        let value: PlistValue
        do {
            value = try Plist.read(contentsOf: path)
        } catch where !FileSystem.exists(path) {
            throw BundleProblem(file: path, key: "-", message: "missing; every bundle needs an Info.plist")
        } catch {
            throw BundleProblem(file: path, key: "-", message: "not a readable property list (\(error)); fix or remove it")
        }
        guard let dictionary = value.dictionary else {
            throw BundleProblem(file: path, key: "-", message: "the root must be a <dict>, not <\(value.typeName)>")
        }
        return dictionary
    }

    static func bundleID(_ info: PlistDictionary, in file: String) throws -> String {
        guard let id = try string(info, "CFBundleIdentifier", in: file) else {
            throw BundleProblem(file: file, key: "CFBundleIdentifier", message: "missing; add it as a <string> such as org.example.App")
        }
        guard isValidBundleID(id) else {
            throw BundleProblem(file: file, key: "CFBundleIdentifier", message: "'\(id.prefix(300))' is not reverse-DNS: [A-Za-z0-9.-], at most 255 bytes, no empty part")
        }
        return id
    }

    static func string(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String = "") throws -> String? {
        guard let value = dictionary[key] else { return nil }
        guard let text = value.string else {
            throw BundleProblem(file: file, key: prefix + key, message: "must be a <string>, not <\(value.typeName)>")
        }
        return text
    }

    static func dictionary(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String = "") throws -> PlistDictionary? {
        guard let value = dictionary[key] else { return nil }
        guard let result = value.dictionary else {
            throw BundleProblem(file: file, key: prefix + key, message: "must be a <dict>, not <\(value.typeName)>")
        }
        return result
    }

    static func number(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String) throws -> Double? {
        guard let value = dictionary[key] else { return nil }
        switch value {
        case .real(let d): return d
        case .integer(let i): return Double(i)
        default: throw BundleProblem(file: file, key: prefix + key, message: "must be a <real>, not <\(value.typeName)>")
        }
    }

    static func boolean(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String) throws -> Bool? {
        guard let value = dictionary[key] else { return nil }
        guard let flag = value.bool else {
            throw BundleProblem(file: file, key: prefix + key, message: "must be <true/> or <false/>, not <\(value.typeName)>")
        }
        return flag
    }

    static func integer(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String) throws -> Int64? {
        guard let value = dictionary[key] else { return nil }
        guard let number = value.int64 else {
            throw BundleProblem(file: file, key: prefix + key, message: "must be an <integer>, not <\(value.typeName)>")
        }
        return number
    }

    /// Reverse-DNS: `[A-Za-z0-9.-]`, at most 255 bytes, no empty component.
    public static func isValidBundleID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 255 else { return false }
        guard id.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) else { return false }
        return !id.split(separator: ".", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    /// `group.` followed by reverse-DNS characters, at most 255 bytes, no `..`.
    public static func isValidGroupID(_ id: String) -> Bool {
        id.hasPrefix("group.") && id.count > 6 && isValidBundleID(id)
    }

    /// A well-known D-Bus name (the D-Bus specification's rules): two or
    /// more elements of `[A-Za-z0-9_-]` separated by dots, none starting
    /// with a digit, at most 255 bytes.
    public static func isWellKnownBusName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 255 else { return false }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.utf8.first, !(48...57).contains(first) else { return false }
            return element.utf8.allSatisfy {
                (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 || $0 == 45
            }
        }
    }

    /// An RFC 3986 scheme: a letter, then letters, digits, `+`, `-`, `.`.
    public static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.utf8.first, (65...90).contains(first) || (97...122).contains(first), scheme.utf8.count <= 64 else { return false }
        return scheme.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 43 || $0 == 45 || $0 == 46 }
    }

    /// The URL schemes of CFBundleURLTypes.
    static func urlSchemes(_ info: PlistDictionary, in file: String) throws -> [String] {
        guard let value = info["CFBundleURLTypes"] else { return [] }
        guard let types = value.array else {
            throw BundleProblem(file: file, key: "CFBundleURLTypes", message: "must be an <array> of <dict>, not <\(value.typeName)>")
        }
        var schemes: [String] = []
        for (index, type) in types.enumerated() {
            let key = "CFBundleURLTypes[\(index)].CFBundleURLSchemes"
            guard let entry = type.dictionary, let list = entry["CFBundleURLSchemes"]?.array else {
                throw BundleProblem(file: file, key: key, message: "each URL type needs CFBundleURLSchemes, an <array> of <string>")
            }
            for item in list {
                guard let scheme = item.string, isValidScheme(scheme) else {
                    throw BundleProblem(file: file, key: key, message: "'\(item.string ?? item.typeName)' is not a URL scheme: a letter, then letters, digits, '+', '-' or '.'")
                }
                guard !["file", "http", "https"].contains(scheme.lowercased()) else {
                    throw BundleProblem(file: file, key: key, message: "'\(scheme)' belongs to the system; declare a scheme of the app's own")
                }
                schemes.append(scheme)
            }
        }
        return schemes
    }

    /// A CFBundleExecutable: a relative path that stays inside its bundle
    /// once symlinks are resolved and names an executable regular file.
    /// Returns the resolved path.
    static func executable(_ name: String, inside bundle: String, file: String) throws -> String {
        guard !name.isEmpty, !name.hasPrefix("/") else {
            throw BundleProblem(file: file, key: "CFBundleExecutable", message: "'\(name)' must be a path relative to the bundle")
        }
        switch resolve(bundle + "/" + name, inside: bundle) {
        case .success(let path): return path
        case .failure(let problem): throw BundleProblem(file: file, key: "CFBundleExecutable", message: problem.description)
        }
    }

    /// A file named in a manifest (an icon): inside the bundle, regular.
    static func resource(_ name: String, inside bundle: String, key: String, file: String) throws -> String {
        guard !name.isEmpty, !name.hasPrefix("/") else {
            throw BundleProblem(file: file, key: key, message: "'\(name)' must be a path relative to the bundle")
        }
        guard let real = realpath(bundle + "/" + name, nil) else {
            throw BundleProblem(file: file, key: key, message: "'\(name)' is not in the bundle; add the file or remove the key")
        }
        defer { free(real) }
        let resolved = String(cString: real)
        guard let root = realpath(bundle, nil) else { return resolved }
        defer { free(root) }
        guard resolved.hasPrefix(String(cString: root) + "/") else {
            throw BundleProblem(file: file, key: key, message: "'\(name)' leads outside the bundle; keep the file inside")
        }
        return resolved
    }

    struct ExecutableProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// Where an executable really is: a regular, executable file that
    /// stays inside `bundle` once symlinks are resolved.
    static func resolve(_ path: String, inside bundle: String) -> Result<String, ExecutableProblem> {
        let name = path.hasPrefix(bundle + "/") ? String(path.dropFirst(bundle.count + 1)) : path
        guard let real = realpath(path, nil) else {
            return .failure(ExecutableProblem(description: "'\(name)' is not in the bundle (\(String(cString: strerror(errno)))); build and install the executable"))
        }
        let resolved = String(cString: real)
        free(real)
        guard let bundleReal = realpath(bundle, nil) else {
            return .failure(ExecutableProblem(description: "cannot resolve the bundle folder \(bundle)"))
        }
        let root = String(cString: bundleReal)
        free(bundleReal)
        guard resolved.hasPrefix(root + "/") else {
            return .failure(ExecutableProblem(description: "'\(name)' leads outside the bundle (to \(resolved)); keep the executable inside"))
        }
        var info = stat()
        guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(ExecutableProblem(description: "'\(name)' is not a regular file"))
        }
        guard access(resolved, X_OK) == 0 else {
            return .failure(ExecutableProblem(description: "'\(name)' is not executable; chmod +x it"))
        }
        return .success(resolved)
    }

    /// The app groups a bundle's entitlements name (SPEC section 3):
    /// `Entitlements.plist`, or else a single `*.entitlements` file.
    static func entitledGroups(_ bundle: String) throws -> [String] { try entitlements(bundle).groups }

    /// What a bundle's entitlements grant: app groups, and the network
    /// (`com.apple.security.network.client`, which the sandbox honours).
    struct Entitlements {
        var groups: [String] = []
        var networkClient = false
    }

    static func entitlements(_ bundle: String) throws -> Entitlements {
        var path = bundle + "/Entitlements.plist"
        let names = FileSystem.entries(bundle)
        if !names.contains("Entitlements.plist") {
            let candidates = names.filter { $0.hasSuffix(".entitlements") }.sorted()
            guard !candidates.isEmpty else { return Entitlements() }
            guard candidates.count == 1 else {
                throw BundleProblem(file: bundle, key: "-", message: "has \(candidates.count) *.entitlements files (\(candidates.joined(separator: ", "))); keep one, or name it Entitlements.plist")
            }
            path = bundle + "/" + candidates[0]
        }
        let value: PlistValue
        do {
            value = try Plist.read(contentsOf: path)
        } catch {
            throw BundleProblem(file: path, key: "-", message: "not a readable property list (\(error)); fix or remove it")
        }
        let network = "com.apple.security.network.client"
        if let flag = value[network], flag.bool == nil {
            throw BundleProblem(file: path, key: network, message: "must be <true/> or <false/>, not <\(flag.typeName)>")
        }
        let networkClient = value[network]?.bool ?? false
        let key = "com.apple.security.application-groups"
        guard let entry = value[key] else { return Entitlements(networkClient: networkClient) }
        guard let list = entry.array else {
            throw BundleProblem(file: path, key: key, message: "must be an <array> of <string> group ids, not <\(entry.typeName)>")
        }
        var groups: [String] = []
        for item in list {
            guard let group = item.string, isValidGroupID(group) else {
                throw BundleProblem(file: path, key: key, message: "'\(item.string ?? item.typeName)' is not a group id: 'group.' and reverse-DNS characters, at most 255 bytes, no '..'")
            }
            if !groups.contains(group) { groups.append(group) }
        }
        return Entitlements(groups: groups, networkClient: networkClient)
    }
}
