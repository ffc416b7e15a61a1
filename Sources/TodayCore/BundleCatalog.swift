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

    public static func == (a: WidgetManifest, b: WidgetManifest) -> Bool {
        a.bundleIdentifier == b.bundleIdentifier && a.containerBundleIdentifier == b.containerBundleIdentifier
            && a.displayName == b.displayName && a.iconPath == b.iconPath && a.preferredHeight == b.preferredHeight
            && a.marginInsets == b.marginInsets && a.updateInterval == b.updateInterval && a.groups == b.groups
            && a.path == b.path
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
                    seenApps.insert(appID)
                    catalog.widgets += widgets
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

    /// Reverse-DNS: `[A-Za-z0-9.-]`, at most 255 bytes, no empty component.
    public static func isValidBundleID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 255 else { return false }
        guard id.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) else { return false }
        return !id.split(separator: ".", omittingEmptySubsequences: false).contains { $0.isEmpty }
    }

    static func entitledGroups(_ bundle: String) -> [String] {
        let files = FileManager.default
        var path = bundle + "/Entitlements.plist"
        if !files.fileExists(atPath: path) {
            let candidates = ((try? files.contentsOfDirectory(atPath: bundle)) ?? []).filter { $0.hasSuffix(".entitlements") }
            guard candidates.count == 1 else { return [] }
            path = bundle + "/" + candidates[0]
        }
        guard let value = try? Plist.read(contentsOf: path),
            let groups = value["com.apple.security.application-groups"]?.array
        else { return [] }
        return groups.compactMap(\.string)
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
            let height = attributes["TodayPreferredHeight"]?.double ?? 0
            let insets = attributes["TodayMarginInsets"]?.dictionary ?? [:]
            let interval = attributes["TodayUpdateInterval"]?.int64 ?? 0
            guard interval == 0 || (60...Int64(UInt32.max)).contains(interval) else {
                throw BundleProblem(file: path, key: "TodayUpdateInterval", message: "must be 0 or at least 60 seconds")
            }
            let displayName = try string(extensionInfo, "CFBundleDisplayName", in: path, required: false)
                ?? string(extensionInfo, "CFBundleName", in: path, required: false) ?? id
            widgets.append(
                WidgetManifest(
                    bundleIdentifier: id, containerBundleIdentifier: appID, displayName: displayName,
                    iconPath: iconPath, preferredHeight: height,
                    marginInsets: (insets["top"]?.double ?? 0, insets["left"]?.double ?? 0, insets["bottom"]?.double ?? 0, insets["right"]?.double ?? 0),
                    updateInterval: UInt32(interval), groups: entitledGroups(appex), path: appex))
        }
        return (appID, widgets)
    }
}

extension BundleProblem: Error {}
