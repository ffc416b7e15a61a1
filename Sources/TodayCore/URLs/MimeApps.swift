import FoundationEssentials
import Posix
import Glibc

/// Which desktop entry opens a MIME type, as the freedesktop.org
/// mime-apps specification 1.0.1 says. The levels, in precedence order,
/// are XDG_CONFIG_HOME, each XDG_CONFIG_DIRS entry, then each
/// `applications` folder (XDG_DATA_HOME, then XDG_DATA_DIRS). The entries
/// associated with a type are gathered level by level: that level's Added
/// Associations (minus what an earlier level removed, and only for
/// desktop files of that level or a later one), then its Removed
/// Associations join the blacklist, then that level's own desktop files
/// whose MimeType lists the type, in desktop-id order. The default is the
/// first installed and associated entry of the Default Applications of
/// the mimeapps.list files in lookup order (desktop-specific ones from
/// XDG_CURRENT_DESKTOP first at each level), else the first associated
/// one. Hidden entries, entries whose TryExec is missing and entries that
/// are not `Type=Application` count as not installed.
public struct MimeApps: Sendable {
    public var configHome: String
    public var configDirs: [String]
    public var dataHome: String
    public var dataDirs: [String]
    public var desktops: [String]
    public var path: [String]
    public var locale: String?

    public init(environment: [String: String]) {
        func value(_ name: String) -> String? {
            guard let v = environment[name], !v.isEmpty else { return nil }
            return v
        }
        let home = value("HOME") ?? FileManager.default.homeDirectoryForCurrentUser.path
        configHome = value("XDG_CONFIG_HOME") ?? home + "/.config"
        configDirs = (value("XDG_CONFIG_DIRS") ?? "/etc/xdg").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        dataHome = value("XDG_DATA_HOME") ?? home + "/.local/share"
        dataDirs = (value("XDG_DATA_DIRS") ?? "/usr/local/share:/usr/share").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        desktops = (value("XDG_CURRENT_DESKTOP") ?? "").split(separator: ":").map { $0.lowercased() }.filter { !$0.isEmpty }
        path = (value("PATH") ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        locale = value("LC_ALL") ?? value("LC_MESSAGES") ?? value("LANG")
    }

    /// The `applications` folders, highest precedence first.
    public var applicationFolders: [String] {
        ([dataHome] + dataDirs).map { Self.trimmed($0) + "/applications" }
    }

    /// The mimeapps.list files in lookup order, each marked desktop-specific or not.
    public var listFiles: [(path: String, desktopSpecific: Bool)] {
        var files: [(String, Bool)] = []
        for folder in [configHome] + configDirs + applicationFolders.prefix(1) + applicationFolders.dropFirst() {
            let base = Self.trimmed(folder)
            for desktop in desktops { files.append((base + "/\(desktop)-mimeapps.list", true)) }
            files.append((base + "/mimeapps.list", false))
        }
        return files
    }

    static func trimmed(_ folder: String) -> String {
        folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
    }

    /// An installed desktop entry: its id, file and parsed content.
    public struct Application: Sendable, Equatable {
        public var id: String
        public var file: String
        public var entry: DesktopEntry
    }

    /// The folder of each level, in precedence order: the config folders,
    /// then the applications folders.
    public var levelFolders: [String] {
        ([configHome] + configDirs).map(Self.trimmed) + applicationFolders
    }

    /// Reads every folder and list this configuration names, once.
    public func index() -> MimeIndex { MimeIndex(self) }

    /// The entry a desktop id names, or nil when it is not installed.
    public func application(_ id: String) -> Application? { index().application(id) }

    /// Entries associated with `type`, most preferred first.
    public func associated(_ type: String) -> [Application] { index().associated(type) }

    /// The entry that opens `type`.
    public func defaultApplication(_ type: String) -> Application? { index().defaultApplication(type) }

    /// The entry in `file` when it counts as installed.
    func installed(id: String, file: String) -> Application? {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8), let entry = try? DesktopEntry(parsing: text) else {
            return nil
        }
        guard entry.string("Type") == "Application", !entry.bool("Hidden") else { return nil }
        if let tryExec = entry.string("TryExec"), !tryExec.isEmpty, findProgram(tryExec) == nil { return nil }
        return Application(id: id, file: file, entry: entry)
    }

    /// An executable by absolute path or through PATH.
    public func findProgram(_ name: String) -> String? {
        if name.contains("/") { return Files.isExecutable(name) ? name : nil }
        for folder in path where !folder.isEmpty {
            let candidate = folder + "/" + name
            if let info = try? Files.status(candidate), info.st_mode & S_IFMT == S_IFREG, Files.isExecutable(candidate) { return candidate }
        }
        return nil
    }

    /// The desktop files under an applications folder, by desktop id
    /// (`vendor/app.desktop` is `vendor-app.desktop`), and the folders
    /// walked.
    static func desktopFiles(in folder: String, prefix: String, depth: Int = 0, into files: inout [(String, String)], folders: inout [String]) {
        guard depth < 8 else { return }
        folders.append(folder)
        for name in FileSystem.entries(folder) {
            let path = folder + "/" + name
            if name.hasSuffix(".desktop") {
                files.append((prefix + name, path))
            } else if FileSystem.isDirectory(path) {
                desktopFiles(in: path, prefix: prefix + name + "-", depth: depth + 1, into: &files, folders: &folders)
            }
        }
    }
}

/// What the applications folders and mimeapps.list files of one
/// configuration hold, read once: every winning desktop id, parsed, and
/// every list. Resolving from it touches no file.
public struct MimeIndex: Sendable {
    public let configuration: MimeApps
    /// The folder of each level, in precedence order.
    let levels: [String]
    /// The level and file of each desktop id's winning file.
    let winners: [String: (level: Int, file: String)]
    /// The installed entries among the winners.
    let installed: [String: MimeApps.Application]
    /// The MIME types (lower case) each installed entry lists.
    let types: [String: Set<String>]
    /// The desktop ids whose winning file is at each level, sorted.
    let idsByLevel: [[String]]
    /// Each mimeapps.list that exists, by path.
    let lists: [String: List]
    /// Every folder read, for a watcher to follow.
    public let folders: [String]

    /// One mimeapps.list: group → type (lower case) → desktop ids.
    struct List: Sendable {
        var defaults: [String: [String]] = [:]
        var added: [String: [String]] = [:]
        var removed: [String: [String]] = [:]
    }

    init(_ configuration: MimeApps) {
        self.configuration = configuration
        let configLevels = ([configuration.configHome] + configuration.configDirs).map(MimeApps.trimmed)
        let applicationFolders = configuration.applicationFolders
        levels = configuration.levelFolders
        var winners: [String: (Int, String)] = [:]
        var idsByLevel = [[String]](repeating: [], count: levels.count)
        var folders = configLevels
        for (offset, folder) in applicationFolders.enumerated() {
            let level = configLevels.count + offset
            var files: [(String, String)] = []
            MimeApps.desktopFiles(in: folder, prefix: "", into: &files, folders: &folders)
            for (id, file) in files.sorted(by: { $0.0 < $1.0 }) where winners[id] == nil {
                winners[id] = (level, file)
                idsByLevel[level].append(id)
            }
        }
        self.winners = winners
        self.idsByLevel = idsByLevel
        self.folders = folders
        var installed: [String: MimeApps.Application] = [:]
        for (id, winner) in winners {
            if let app = configuration.installed(id: id, file: winner.1) { installed[id] = app }
        }
        self.installed = installed
        types = installed.mapValues { Set($0.entry.list("MimeType").map { $0.lowercased() }) }
        var lists: [String: List] = [:]
        for (path, _) in configuration.listFiles {
            if let list = Self.readList(path) { lists[path] = list }
        }
        self.lists = lists
    }

    static func readList(_ path: String) -> List? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let entry = try? DesktopEntry(parsing: text, anyKeys: true)
        else { return nil }
        func group(_ name: String) -> [String: [String]] {
            var result: [String: [String]] = [:]
            for key in entry.groups[name]?.keys.sorted() ?? [] { result[key.lowercased(), default: []] += entry.list(key, group: name) }
            return result
        }
        return List(defaults: group("Default Applications"), added: group("Added Associations"), removed: group("Removed Associations"))
    }

    /// The entry a desktop id names, or nil when it is not installed.
    public func application(_ id: String) -> MimeApps.Application? { installed[id] }

    /// Entries associated with `type`, most preferred first; `usable`
    /// passes over entries as if they were not installed.
    public func associated(_ type: String, usable: (MimeApps.Application) -> Bool = { _ in true }) -> [MimeApps.Application] {
        let type = type.lowercased()
        var result: [MimeApps.Application] = []
        var taken = Set<String>()
        var blacklist = Set<String>()
        for (level, folder) in levels.enumerated() {
            let list = lists[folder + "/mimeapps.list"]
            // An association made here applies to desktop files here or below.
            for id in list?.added[type] ?? [] where !blacklist.contains(id) && !taken.contains(id) {
                guard let winner = winners[id], winner.level >= level, let app = installed[id], usable(app) else { continue }
                taken.insert(id)
                result.append(app)
            }
            blacklist.formUnion(list?.removed[type] ?? [])
            for id in idsByLevel[level] where !blacklist.contains(id) && !taken.contains(id) {
                guard types[id]?.contains(type) == true, let app = installed[id], usable(app) else { continue }
                taken.insert(id)
                result.append(app)
            }
        }
        return result
    }

    /// The entry that opens `type`: the first installed and associated
    /// default, else the most preferred association.
    public func defaultApplication(_ type: String, usable: (MimeApps.Application) -> Bool = { _ in true }) -> MimeApps.Application? {
        let type = type.lowercased()
        let associations = associated(type, usable: usable)
        let associatedIDs = Set(associations.map(\.id))
        for (path, _) in configuration.listFiles {
            for id in lists[path]?.defaults[type] ?? [] where associatedIDs.contains(id) {
                if let app = installed[id] { return app }
            }
        }
        return associations.first
    }
}
