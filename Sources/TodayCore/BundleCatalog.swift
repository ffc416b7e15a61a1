import DBus
import Foundation
import PropertyList

/// A widget extension found in a bundle folder.
public struct WidgetManifest: Sendable, Equatable {
    public var bundleIdentifier: String
    public var containerBundleIdentifier: String
    public var displayName: String
    public var iconPath: String
    public var preferredHeight: Double
    public var marginInsets: (top: Double, left: Double, bottom: Double, right: Double)
    public var updateInterval: UInt32
    public var groups: [String]
    public var path: String
    /// The provider executable's path inside the bundle; nil when the
    /// manifest names none.
    public var executable: String?
    /// TodayUpdateTimeout, in seconds.
    public var updateTimeout: UInt32 = 10
    /// TodayMemoryLimit, in bytes.
    public var memoryLimit: UInt64 = 64 << 20
    /// TodayProviderBusName: the provider answers on the bus.
    public var providerBusName: String?

    public static func == (a: WidgetManifest, b: WidgetManifest) -> Bool {
        a.bundleIdentifier == b.bundleIdentifier && a.containerBundleIdentifier == b.containerBundleIdentifier
            && a.displayName == b.displayName && a.iconPath == b.iconPath && a.preferredHeight == b.preferredHeight
            && a.marginInsets == b.marginInsets && a.updateInterval == b.updateInterval && a.groups == b.groups
            && a.path == b.path && a.executable == b.executable && a.updateTimeout == b.updateTimeout
            && a.memoryLimit == b.memoryLimit && a.providerBusName == b.providerBusName
    }
}

/// One reason a bundle was not loaded: the file, the key and what to do.
public struct BundleProblem: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var key: String
    public var message: String
    public var description: String { "\(file): \(key): \(message)" }
}

/// What the bundle folders hold: the widgets that passed the rules, and
/// the problems of those that did not.
public struct BundleCatalog: Sendable {
    public var widgets: [WidgetManifest] = []
    /// Every installed bundle id: container apps and all their extensions.
    public var bundleIDs: Set<String> = []
    public var problems: [BundleProblem] = []

    /// Scans `folders` in precedence order; the first folder holding a
    /// bundle id wins.
    public static func scan(_ folders: [String]) -> BundleCatalog {
        var catalog = BundleCatalog()
        var seenApps = Set<String>()
        let files = FileManager.default
        for folder in folders {
            guard let names = try? files.contentsOfDirectory(atPath: folder) else { continue }
            for name in names.sorted() where name.hasSuffix(".app") {
                let app = folder + "/" + name
                do {
                    let (appID, widgets) = try loadApp(at: app, skippingIDs: seenApps)
                    if seenApps.insert(appID).inserted {
                        catalog.widgets += widgets
                        catalog.bundleIDs.insert(appID)
                        catalog.bundleIDs.formUnion(widgets.map(\.bundleIdentifier))
                    }
                } catch let problem as BundleProblem {
                    catalog.problems.append(problem)
                } catch {
                    catalog.problems.append(BundleProblem(file: app, key: "-", message: "\(error)"))
                }
            }
        }
        catalog.widgets.sort {
            ($0.displayName, $0.bundleIdentifier) < ($1.displayName, $1.bundleIdentifier)
        }
        return catalog
    }

    static func infoPlist(_ bundle: String) throws -> PlistDictionary {
        let path = bundle + "/Info.plist"
        let value: PlistValue
        do {
            value = try Plist.read(contentsOf: path)
        } catch {
            throw BundleProblem(file: path, key: "-", message: "not a readable property list (\(error)); fix or remove it")
        }
        guard let dictionary = value.dictionary else {
            throw BundleProblem(file: path, key: "-", message: "the root must be a <dict>")
        }
        return dictionary
    }

    static func string(_ dictionary: PlistDictionary, _ key: String, in file: String, required: Bool = true) throws -> String? {
        guard let value = dictionary[key] else {
            if required { throw BundleProblem(file: file, key: key, message: "missing; add it as a <string>") }
            return nil
        }
        guard let text = value.string else {
            throw BundleProblem(file: file, key: key, message: "must be a <string>, not <\(value.typeName)>")
        }
        return text
    }

    static func number(_ dictionary: PlistDictionary, _ key: String, in file: String) throws -> Double? {
        guard let value = dictionary[key] else { return nil }
        switch value {
        case .real(let d): return d
        case .integer(let i): return Double(i)
        default: throw BundleProblem(file: file, key: key, message: "must be a <real>, not <\(value.typeName)>")
        }
    }

    static func integer(_ dictionary: PlistDictionary, _ key: String, in file: String) throws -> Int64? {
        guard let value = dictionary[key] else { return nil }
        guard let number = value.int64 else {
            throw BundleProblem(file: file, key: key, message: "must be an <integer>, not <\(value.typeName)>")
        }
        return number
    }

    /// Reverse-DNS: `[A-Za-z0-9.-]`, at most 255 bytes, no empty component.
    public static func isValidBundleID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 255 else { return false }
        guard id.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) else { return false }
        return !id.split(separator: ".", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    /// The app groups a bundle's entitlements name (SPEC section 3):
    /// `Entitlements.plist`, or else a single `*.entitlements` file.
    static func entitledGroups(_ bundle: String) throws -> [String] {
        let files = FileManager.default
        var path = bundle + "/Entitlements.plist"
        if !files.fileExists(atPath: path) {
            let candidates = ((try? files.contentsOfDirectory(atPath: bundle)) ?? []).filter { $0.hasSuffix(".entitlements") }
            guard !candidates.isEmpty else { return [] }
            guard candidates.count == 1 else {
                throw BundleProblem(file: bundle, key: "-", message: "has \(candidates.count) *.entitlements files; keep one, or name it Entitlements.plist")
            }
            path = bundle + "/" + candidates[0]
        }
        let value: PlistValue
        do {
            value = try Plist.read(contentsOf: path)
        } catch {
            throw BundleProblem(file: path, key: "-", message: "not a readable property list (\(error)); fix or remove it")
        }
        let key = "com.apple.security.application-groups"
        guard let entry = value[key] else { return [] }
        guard let groups = entry.array?.compactMap(\.string), groups.count == entry.array?.count else {
            throw BundleProblem(file: path, key: key, message: "must be an <array> of <string> group ids")
        }
        for group in groups where !isValidGroupID(group) {
            throw BundleProblem(file: path, key: key, message: "'\(group)' is not a group id: 'group.' and reverse-DNS characters, at most 255 bytes, no '..'")
        }
        return groups
    }

    /// `group.` followed by reverse-DNS characters, at most 255 bytes, no `..`.
    public static func isValidGroupID(_ id: String) -> Bool {
        id.hasPrefix("group.") && id.count > 6 && isValidBundleID(id)
    }

    static func loadApp(at app: String, skippingIDs: Set<String>) throws -> (String, [WidgetManifest]) {
        let info = try infoPlist(app)
        let infoPath = app + "/Info.plist"
        guard let appID = try string(info, "CFBundleIdentifier", in: infoPath), isValidBundleID(appID) else {
            throw BundleProblem(file: infoPath, key: "CFBundleIdentifier", message: "must be reverse-DNS ([A-Za-z0-9.-], at most 255 bytes)")
        }
        if skippingIDs.contains(appID) { return (appID, []) }
        let version = try string(info, "CFBundleVersion", in: infoPath, required: false)
        let shortVersion = try string(info, "CFBundleShortVersionString", in: infoPath, required: false)
        var iconPath = ""
        if let icon = try string(info, "CFBundleIconFile", in: infoPath, required: false), !icon.contains("/") {
            let candidate = app + "/" + icon
            if FileManager.default.fileExists(atPath: candidate) { iconPath = candidate }
        }
        var widgets: [WidgetManifest] = []
        let plugIns = app + "/PlugIns"
        for name in ((try? FileManager.default.contentsOfDirectory(atPath: plugIns)) ?? []).sorted() where name.hasSuffix(".appex") {
            let appex = plugIns + "/" + name
            let path = appex + "/Info.plist"
            let extensionInfo = try infoPlist(appex)
            guard let id = try string(extensionInfo, "CFBundleIdentifier", in: path), isValidBundleID(id),
                id.hasPrefix(appID + ".")
            else {
                throw BundleProblem(file: path, key: "CFBundleIdentifier", message: "must be reverse-DNS and start with '\(appID).'")
            }
            guard let ext = extensionInfo["NSExtension"]?.dictionary,
                ext["NSExtensionPointIdentifier"]?.string == "com.apple.widget-extension",
                ext["NSExtensionPrincipalClass"] != nil || ext["NSExtensionMainStoryboard"] != nil
            else { continue }
            guard try string(extensionInfo, "CFBundleVersion", in: path, required: false) == version,
                try string(extensionInfo, "CFBundleShortVersionString", in: path, required: false) == shortVersion
            else {
                throw BundleProblem(file: path, key: "CFBundleVersion", message: "CFBundleVersion and CFBundleShortVersionString must equal the container app's")
            }
            let attributes = ext["NSExtensionAttributes"]?.dictionary ?? [:]
            func attribute(_ key: String) -> String { "NSExtension.NSExtensionAttributes.\(key)" }
            let height = try number(attributes, "TodayPreferredHeight", in: path) ?? 0
            guard height >= 0, height.isFinite else {
                throw BundleProblem(file: path, key: attribute("TodayPreferredHeight"), message: "must be 0 or a positive <real>")
            }
            var insets = (top: 0.0, left: 0.0, bottom: 0.0, right: 0.0)
            if let value = attributes["TodayMarginInsets"] {
                guard let dictionary = value.dictionary else {
                    throw BundleProblem(file: path, key: attribute("TodayMarginInsets"), message: "must be a <dict> with top, left, bottom and right")
                }
                insets = (
                    try number(dictionary, "top", in: path) ?? 0, try number(dictionary, "left", in: path) ?? 0,
                    try number(dictionary, "bottom", in: path) ?? 0, try number(dictionary, "right", in: path) ?? 0
                )
            }
            let interval = try integer(attributes, "TodayUpdateInterval", in: path) ?? 0
            guard interval == 0 || (60...Int64(UInt32.max)).contains(interval) else {
                throw BundleProblem(file: path, key: attribute("TodayUpdateInterval"), message: "must be 0 or at least 60 seconds")
            }
            let timeout = try integer(attributes, "TodayUpdateTimeout", in: path) ?? 10
            guard (1...3600).contains(timeout) else {
                throw BundleProblem(file: path, key: attribute("TodayUpdateTimeout"), message: "must be between 1 and 3600 seconds")
            }
            let memory = try integer(attributes, "TodayMemoryLimit", in: path) ?? 64 << 20
            guard memory >= 1 << 20 else {
                throw BundleProblem(file: path, key: attribute("TodayMemoryLimit"), message: "must be at least 1048576 bytes")
            }
            var busName: String?
            if let value = attributes["TodayProviderBusName"] {
                guard let name = value.string, BusName(rawValue: name) != nil, !name.hasPrefix(":") else {
                    throw BundleProblem(file: path, key: attribute("TodayProviderBusName"), message: "must be a well-known D-Bus name such as org.example.App.Provider")
                }
                busName = name
            }
            var executable: String?
            if let name = try string(extensionInfo, "CFBundleExecutable", in: path, required: false) {
                guard !name.isEmpty, !name.hasPrefix("/"), !name.split(separator: "/").contains("..") else {
                    throw BundleProblem(file: path, key: "CFBundleExecutable", message: "must be a path relative to the bundle that stays inside it")
                }
                executable = appex + "/" + name
            }
            let displayName = try string(extensionInfo, "CFBundleDisplayName", in: path, required: false)
                ?? string(extensionInfo, "CFBundleName", in: path, required: false) ?? id
            widgets.append(
                WidgetManifest(
                    bundleIdentifier: id, containerBundleIdentifier: appID, displayName: displayName,
                    iconPath: iconPath, preferredHeight: height,
                    marginInsets: insets, updateInterval: UInt32(interval), groups: try entitledGroups(appex), path: appex,
                    executable: executable, updateTimeout: UInt32(timeout), memoryLimit: UInt64(memory),
                    providerBusName: busName))
        }
        return (appID, widgets)
    }
}

extension BundleProblem: Error {}
