import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// Randomized XDG configurations, resolved by todayd's MimeApps and by a
/// small model of the mime-apps 1.0.1 algorithm written here from the
/// spec's text alone: levels in precedence order, Added and Removed
/// Associations level by level (applying to desktop files of that level
/// or a later one), desktop files of each level in id order, then Default
/// Applications of every list in lookup order. The two must agree on every
/// configuration. A failure prints the seed and the configuration.
@Suite struct MimeAppsDifferentialTests {
    static let types = ["x-scheme-handler/alpha", "x-scheme-handler/beta"]
    /// Desktop ids and the paths (below an applications folder) that give them.
    static let ids: [(id: String, paths: [String])] = [
        ("a.desktop", ["a.desktop"]),
        ("b.desktop", ["b.desktop"]),
        ("c.desktop", ["c.desktop"]),
        ("x-y.desktop", ["x-y.desktop", "x/y.desktop"]),
        ("my-vendor-viewer.desktop", ["my-vendor-viewer.desktop", "my-vendor/viewer.desktop", "my/vendor-viewer.desktop", "my/vendor/viewer.desktop"]),
        ("org.example.Sub.desktop", ["org.example.Sub.desktop"]),
    ]
    static let desktops = [[], ["gnome"], ["kde"], ["ubuntu", "gnome"], ["XFCE"]]

    struct DesktopFile {
        var id: String
        var path: String
        var types: [String]
        var hidden: Bool
        var application: Bool
    }

    struct List {
        var defaults: [String: [String]] = [:]
        var added: [String: [String]] = [:]
        var removed: [String: [String]] = [:]
    }

    /// One configuration: the levels' folders (config home, config dirs,
    /// then applications folders), the desktop files of each applications
    /// level, and the lists of each level (plain, and by desktop name).
    struct Configuration {
        var desktops: [String]
        var configLevels: Int
        var dataLevels: Int
        var files: [[DesktopFile]]
        var plain: [List?]
        var specific: [[String: List]]

        var levels: Int { configLevels + dataLevels }
    }

    /// A configuration; `plainOnly` leaves out what GLib reads its own way
    /// (Added and Removed Associations, Hidden, entries that are not
    /// applications), for the comparison with `gio mime`.
    static func generate(_ rng: inout SeededGenerator, plainOnly: Bool = false) -> Configuration {
        let configLevels = Int.random(in: 1...3, using: &rng)
        let dataLevels = Int.random(in: 1...3, using: &rng)
        var files: [[DesktopFile]] = []
        for _ in 0..<dataLevels {
            var level: [DesktopFile] = []
            for (id, paths) in ids where Int.random(in: 0..<3, using: &rng) > 0 {
                let types = Self.types.filter { _ in Bool.random(using: &rng) }
                level.append(
                    DesktopFile(
                        id: id, path: paths.randomElement(using: &rng) ?? id, types: types,
                        hidden: !plainOnly && Int.random(in: 0..<8, using: &rng) == 0,
                        application: plainOnly || Int.random(in: 0..<12, using: &rng) > 0))
            }
            files.append(level)
        }
        func someIDs() -> [String] {
            (0..<Int.random(in: 0...3, using: &rng)).compactMap { _ in
                Int.random(in: 0..<10, using: &rng) == 0 ? "missing.desktop" : ids.randomElement(using: &rng)?.id
            }
        }
        // GLib takes a default that does not list the type; the spec
        // passes over it. Where the two are compared, defaults name only
        // applications that list it.
        var listing: [String: Set<String>] = [:]
        for file in files.reversed().joined() { listing[file.id] = Set(file.types) }
        func someDefaults(_ type: String) -> [String] {
            someIDs().filter { !plainOnly || listing[$0]?.contains(type) == true }
        }
        func someList(associations: Bool) -> List? {
            guard Int.random(in: 0..<3, using: &rng) > 0 else { return nil }
            var list = List()
            for type in types {
                if Bool.random(using: &rng) { list.defaults[type] = someDefaults(type) }
                if associations, Bool.random(using: &rng) { list.added[type] = someIDs() }
                if associations, Int.random(in: 0..<3, using: &rng) == 0 { list.removed[type] = someIDs() }
            }
            return list
        }
        let desktops = Self.desktops.randomElement(using: &rng) ?? []
        var plain: [List?] = []
        var specific: [[String: List]] = []
        for _ in 0..<(configLevels + dataLevels) {
            plain.append(someList(associations: !plainOnly))
            var lists: [String: List] = [:]
            for desktop in desktops { lists[desktop.lowercased()] = someList(associations: false) }
            specific.append(lists)
        }
        return Configuration(desktops: desktops, configLevels: configLevels, dataLevels: dataLevels, files: files, plain: plain, specific: specific)
    }

    // MARK: The model

    static func modelDefault(_ c: Configuration, _ type: String) -> String? {
        modelAnswer(c, type).id
    }

    /// The model's answer, and when it is the first of a level's desktop
    /// files rather than a default, the others it was chosen among: the
    /// spec leaves their order open (the model takes id order, GLib its
    /// mimeinfo.cache's).
    static func modelAnswer(_ c: Configuration, _ type: String) -> (id: String?, among: Set<String>) {
        // The winning file of each id: the first applications level holding it.
        var winner: [String: (level: Int, file: DesktopFile)] = [:]
        for (offset, level) in c.files.enumerated() {
            for file in level where winner[file.id] == nil { winner[file.id] = (c.configLevels + offset, file) }
        }
        func installed(_ id: String) -> Bool {
            guard let file = winner[id]?.file else { return false }
            return file.application && !file.hidden
        }
        var associated: [String] = []
        var firstLevel: Set<String> = []
        var blacklist = Set<String>()
        for level in 0..<c.levels {
            if firstLevel.isEmpty { firstLevel = Set(associated) }
            for id in c.plain[level]?.added[type] ?? [] {
                if blacklist.contains(id) || associated.contains(id) || !installed(id) { continue }
                if let w = winner[id], w.level < level { continue }  // a desktop file above this level: ignored
                associated.append(id)
            }
            blacklist.formUnion(c.plain[level]?.removed[type] ?? [])
            if level >= c.configLevels {
                for file in c.files[level - c.configLevels].sorted(by: { $0.id < $1.id }) {
                    guard winner[file.id]?.level == level, installed(file.id), file.types.contains(type) else { continue }
                    if blacklist.contains(file.id) || associated.contains(file.id) { continue }
                    associated.append(file.id)
                }
            }
        }
        for level in 0..<c.levels {
            var lists = c.desktops.compactMap { c.specific[level][$0.lowercased()] }
            if let plain = c.plain[level] { lists.append(plain) }
            for list in lists {
                for id in list.defaults[type] ?? [] where associated.contains(id) { return (id, [id]) }
            }
        }
        if firstLevel.isEmpty { firstLevel = Set(associated) }
        return (associated.first, firstLevel)
    }

    // MARK: Writing it out

    static func write(_ c: Configuration, under root: URL, rng: inout SeededGenerator) throws -> [String: String] {
        let configFolders = (0..<c.configLevels).map { root.appendingPathComponent("config\($0)").path }
        let dataFolders = (0..<c.dataLevels).map { root.appendingPathComponent("data\($0)").path }
        let levelFolders = configFolders + dataFolders.map { $0 + "/applications" }
        func put(_ text: String, _ path: String) throws {
            // Some files end their lines with CRLF.
            let content = Bool.random(using: &rng) ? text.replacingOccurrences(of: "\n", with: "\r\n") : text
            try FileManager.default.createDirectory(atPath: PathText.parent(of: path), withIntermediateDirectories: true)
            try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        }
        for (offset, level) in c.files.enumerated() {
            for file in level {
                var text = "[Desktop Entry]\nType=\(file.application ? "Application" : "Link")\nName=\(file.id)\nExec=true %u\n"
                if !file.types.isEmpty { text += "MimeType=\(file.types.joined(separator: ";"));\n" }
                if file.hidden { text += "Hidden=true\n" }
                try put(text, dataFolders[offset] + "/applications/" + file.path)
            }
        }
        func listText(_ list: List) -> String {
            var text = "# written by MimeAppsDifferentialTests\n"
            for (group, entries) in [("Default Applications", list.defaults), ("Added Associations", list.added), ("Removed Associations", list.removed)] {
                for type in entries.keys.sorted() {
                    let ids = entries[type] ?? []
                    // A group given twice, and a key given twice (the last counts).
                    text += "[\(group)]\n"
                    if Bool.random(using: &rng) { text += "\(type)=stale.desktop;\n" }
                    text += "\(type)=\(ids.joined(separator: ";"))\(ids.isEmpty ? "" : ";")\n"
                }
            }
            return text
        }
        for level in 0..<c.levels {
            if let plain = c.plain[level] { try put(listText(plain), levelFolders[level] + "/mimeapps.list") }
            for (desktop, list) in c.specific[level] { try put(listText(list), levelFolders[level] + "/\(desktop)-mimeapps.list") }
        }
        return [
            "HOME": root.path, "XDG_CONFIG_HOME": configFolders[0], "XDG_CONFIG_DIRS": configFolders.dropFirst().joined(separator: ":"),
            "XDG_DATA_HOME": dataFolders[0], "XDG_DATA_DIRS": dataFolders.dropFirst().joined(separator: ":").isEmpty
                ? root.appendingPathComponent("none").path : dataFolders.dropFirst().joined(separator: ":"),
            "XDG_CURRENT_DESKTOP": c.desktops.joined(separator: ":"), "PATH": "/usr/bin:/bin",
        ]
    }

    /// Thousands of files written and read: off the cooperative pool.
    @Test func todaydAgreesWithTheSpecsAlgorithm() async throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["TODAY_MIME_SEED"] ?? "") ?? 20_261_201
        let count = 250
        let disagreements = try await offThePool { try Self.disagreementsWithTheModel(seed: seed, rounds: count) }
        #expect(disagreements.isEmpty, "seed \(seed) (TODAY_MIME_SEED=\(seed) to repeat), \(disagreements.count) of \(count * Self.types.count):\n\(disagreements.prefix(5).joined(separator: "\n"))")
    }

    /// Where todayd's default application differs from the model's, in
    /// `rounds` random configurations.
    static func disagreementsWithTheModel(seed: UInt64, rounds count: Int) throws -> [String] {
        var rng = SeededGenerator(state: seed)
        let root = try temporaryDirectory("mimeapps")
        var disagreements: [String] = []
        for round in 0..<count {
            let configuration = Self.generate(&rng)
            let folder = root.appendingPathComponent("\(round)")
            let environment = try Self.write(configuration, under: folder, rng: &rng)
            let index = MimeApps(environment: environment).index()
            for type in Self.types {
                let expected = Self.modelDefault(configuration, type)
                let actual = index.defaultApplication(type)?.id
                if expected != actual {
                    disagreements.append("round \(round), \(type): todayd \(actual ?? "none"), the spec \(expected ?? "none"); files under \(folder.path)")
                }
            }
            if disagreements.isEmpty { try? FileManager.default.removeItem(at: folder) }
        }
        // The configurations that disagreed stay for a person to read.
        if disagreements.isEmpty { try? FileManager.default.removeItem(at: root) }
        return disagreements
    }
}

extension MimeAppsDifferentialTests {
    static let gio = "/usr/bin/gio"

    /// GLib's answer (`gio mime TYPE`) for a configuration, or nil when it
    /// names no default.
    static func gioDefault(_ type: String, _ environment: [String: String]) throws -> String? {
        let settings = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let result = try runBlocking(["-i"] + settings + [gio, "mime", type])
        // "Default application for “TYPE”: ID" is the first line when there is one.
        guard let line = result.output.split(separator: "\n").first, line.hasPrefix("Default application"),
            let colon = line.lastIndex(of: ":")
        else { return nil }
        return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }

    /// Where GLib follows the spec (default applications and desktop
    /// files' MimeType, in every level, dashed subfolders and CRLF lines
    /// included), `gio mime` agrees with the model and with todayd. GLib
    /// reads a folder's MIME types from its mimeinfo.cache, so each
    /// applications folder gets one from update-desktop-database.
    /// Hundreds of gio runs one after another: off the cooperative pool.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: gio), "needs gio (libglib2.0-bin)"))
    func gioAgreesWhereItFollowsTheSpec() async throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["TODAY_MIME_SEED"] ?? "") ?? 20_261_202
        let count = 60
        let disagreements = try await offThePool { try Self.disagreementsWithGio(seed: seed, rounds: count) }
        #expect(disagreements.isEmpty, "seed \(seed) (TODAY_MIME_SEED=\(seed) to repeat), \(disagreements.count) of \(count * Self.types.count):\n\(disagreements.prefix(5).joined(separator: "\n"))")
    }

    /// Where gio, the model and todayd do not agree, in `rounds` random
    /// configurations of what GLib follows.
    static func disagreementsWithGio(seed: UInt64, rounds count: Int) throws -> [String] {
        var rng = SeededGenerator(state: seed)
        let root = try temporaryDirectory("mimeapps-gio")
        var disagreements: [String] = []
        for round in 0..<count {
            let configuration = Self.generate(&rng, plainOnly: true)
            let folder = root.appendingPathComponent("\(round)")
            var environment = try Self.write(configuration, under: folder, rng: &rng)
            environment["GIO_USE_VFS"] = "local"
            // GLib finds a folder's MIME types in its mimeinfo.cache only.
            for level in 0..<configuration.dataLevels {
                let applications = folder.appendingPathComponent("data\(level)/applications").path
                if FileManager.default.fileExists(atPath: applications) {
                    _ = try runBlocking(["update-desktop-database", applications])
                }
            }
            let index = MimeApps(environment: environment).index()
            for type in Self.types {
                let (expected, among) = Self.modelAnswer(configuration, type)
                let glib = try Self.gioDefault(type, environment)
                let actual = index.defaultApplication(type)?.id
                let glibAgrees = glib == expected || glib.map { among.contains($0) } == true
                if !glibAgrees || expected != actual {
                    disagreements.append(
                        "round \(round), \(type): the spec \(expected ?? "none"), gio \(glib ?? "none"), todayd \(actual ?? "none"); files under \(folder.path)")
                }
            }
            if disagreements.isEmpty { try? FileManager.default.removeItem(at: folder) }
        }
        if disagreements.isEmpty { try? FileManager.default.removeItem(at: root) }
        return disagreements
    }
}
