import FoundationEssentials
import Glibc

/// Which desktop entry opens a MIME type, as the freedesktop.org
/// mime-apps specification 1.0.1 says: mimeapps.list files in their lookup
/// order (desktop-specific ones from XDG_CURRENT_DESKTOP first at each
/// level), Default Applications that are installed and associated, then
/// the most preferred associated entry: Added Associations in file order,
/// minus Removed Associations of that file or an earlier one, then
/// entries whose MimeType lists the type, in folder precedence and then
/// desktop-id order. Hidden entries, entries whose TryExec is missing and
/// entries that are not `Type=Application` count as not installed.
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

    /// The entry a desktop id names, or nil when it is not installed.
    public func application(_ id: String) -> Application? {
        for folder in applicationFolders {
            // ids map `-` to `/` in subfolders; try the flat name first.
            for candidate in Self.candidatePaths(id, in: folder) where FileSystem.exists(candidate) {
                return installed(id: id, file: candidate)
            }
        }
        return nil
    }

    static func candidatePaths(_ id: String, in folder: String) -> [String] {
        var paths = [folder + "/" + id]
        let parts = id.split(separator: "-")
        if parts.count > 1 {
            for split in 1..<parts.count {
                paths.append(folder + "/" + parts[..<split].joined(separator: "/") + "/" + parts[split...].joined(separator: "-"))
            }
        }
        return paths
    }

    /// The entry in `file` when it counts as installed; the first file
    /// with an id decides, so a hidden one hides those below it.
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
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        for folder in path where !folder.isEmpty {
            let candidate = folder + "/" + name
            var info = stat()
            if stat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Every desktop id in the applications folders, first folder winning,
    /// with the MIME types its file lists.
    func allApplications() -> [(id: String, folderIndex: Int, file: String)] {
        var seen = Set<String>()
        var result: [(String, Int, String)] = []
        for (index, folder) in applicationFolders.enumerated() {
            for (id, file) in Self.desktopFiles(in: folder, prefix: "").sorted(by: { $0.0 < $1.0 }) where seen.insert(id).inserted {
                result.append((id, index, file))
            }
        }
        return result
    }

    static func desktopFiles(in folder: String, prefix: String, depth: Int = 0) -> [(String, String)] {
        guard depth < 8 else { return [] }
        var files: [(String, String)] = []
        for name in FileSystem.entries(folder) {
            let path = folder + "/" + name
            if name.hasSuffix(".desktop") {
                files.append((prefix + name, path))
            } else if FileSystem.isDirectory(path) {
                files += desktopFiles(in: path, prefix: prefix + name + "-", depth: depth + 1)
            }
        }
        return files
    }

    /// The parsed groups of one mimeapps.list: group → type → desktop ids.
    static func readList(_ path: String) -> [String: [String: [String]]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let entry = try? DesktopEntry(parsing: text, anyKeys: true)
        else { return [:] }
        var result: [String: [String: [String]]] = [:]
        for group in ["Default Applications", "Added Associations", "Removed Associations"] {
            for key in entry.groups[group]?.keys ?? [:].keys {
                result[group, default: [:]][key.lowercased()] = entry.list(key, group: group)
            }
        }
        return result
    }

    /// Entries associated with `type`, most preferred first.
    public func associated(_ type: String) -> [Application] {
        let type = type.lowercased()
        var ordered: [String] = []
        var blacklist = Set<String>()
        for (path, desktopSpecific) in listFiles where !desktopSpecific {
            let list = Self.readList(path)
            for id in list["Added Associations"]?[type] ?? [] where !blacklist.contains(id) && !ordered.contains(id) {
                ordered.append(id)
            }
            blacklist.formUnion(list["Removed Associations"]?[type] ?? [])
        }
        var result: [Application] = []
        var taken = Set<String>()
        for id in ordered {
            if let app = application(id), taken.insert(id).inserted { result.append(app) }
        }
        for (id, _, file) in allApplications() where !blacklist.contains(id) && !taken.contains(id) {
            guard let app = installed(id: id, file: file) else { continue }
            if app.entry.list("MimeType").contains(where: { $0.lowercased() == type }) {
                taken.insert(id)
                result.append(app)
            }
        }
        return result
    }

    /// The entry that opens `type`: the first installed and associated
    /// default, else the most preferred association.
    public func defaultApplication(_ type: String) -> Application? {
        let type = type.lowercased()
        let associations = associated(type)
        let associatedIDs = Set(associations.map(\.id))
        for (path, _) in listFiles {
            for id in Self.readList(path)["Default Applications"]?[type] ?? [] where associatedIDs.contains(id) {
                if let app = application(id) { return app }
            }
        }
        return associations.first
    }
}
