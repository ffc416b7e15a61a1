import CSystem
import FoundationEssentials
import Glibc
import Posix

/// `todayctl install` and `uninstall` (SPEC section 12): a bundle checked
/// as `lint` checks it, copied whole beside its place, then moved in with
/// one rename (or swapped with the bundle it replaces), so todayd, which
/// rescans on every change, only ever sees the whole old or the whole new
/// bundle.
public struct BundleInstaller: Sendable {
    public let directories: Directories
    /// The folder installed into: the highest-precedence one unless given.
    public let folder: String

    public init(directories: Directories, folder: String? = nil) {
        self.directories = directories
        self.folder = folder ?? directories.bundleFolders[0]
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Installs the `.app` at `source`; returns the path it now has.
    public func install(_ source: String) throws -> String {
        let source = source.hasSuffix("/") ? String(source.dropLast()) : source
        guard source.hasSuffix(".app"), FileSystem.isDirectory(source) else {
            throw Failure(description: "\(source) is not a .app bundle folder")
        }
        let (_, problems) = BundleCatalog.lint([source])
        guard problems.isEmpty else {
            throw Failure(description: "not installed: \(problems.count) problem\(problems.count == 1 ? "" : "s") (`todayctl lint \(source)` shows them):\n" + problems.map(\.description).joined(separator: "\n"))
        }
        let info = try BundleCatalog.infoPlist(source)
        let id = try BundleCatalog.bundleID(info, in: source + "/Info.plist")
        // A bundle of this id in a folder that comes first would win anyway.
        for other in directories.bundleFolders.prefix(while: { $0 != folder }) {
            if let shadow = Self.bundle(id.rawValue, in: other) {
                throw Failure(description: "not installed: \(shadow) has the same id (\(id)) in a folder that comes first, and would be the one todayd uses; uninstall it first, or install with --dir \(other)")
            }
        }
        try DurableFile.makeFolder(folder)
        let existing = Self.bundle(id.rawValue, in: folder)
        let name = existing.map(PathText.lastComponent) ?? PathText.lastComponent(of: source)
        let staging = ".\(name).installing.\(getpid())"
        let stagingPath = folder + "/" + staging
        try? removeTree(stagingPath)
        do {
            try copyTree(source, to: stagingPath)
        } catch {
            try? removeTree(stagingPath)
            throw Failure(description: "cannot copy \(source) into \(folder): \(error)")
        }
        let opened: FileDescriptor
        do {
            opened = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)
        } catch {
            throw Failure(description: "cannot open \(folder): \(error)")
        }
        if existing != nil {
            let status = today_rename_exchange(opened.rawValue, staging, name)
            guard status == 0 else {
                try? removeTree(stagingPath)
                throw Failure(description: "cannot replace \(folder)/\(name): \(Errno(status))")
            }
            // The old bundle is now at the staging name, out of todayd's sight.
            try? removeTree(stagingPath)
        } else {
            do {
                try opened.rename(staging, to: name)
            } catch {
                try? removeTree(stagingPath)
                throw Failure(description: "cannot move the bundle into \(folder): \(error)")
            }
        }
        try? opened.sync()
        return folder + "/" + name
    }

    /// Removes the bundle with `id` from the folder; returns its old path.
    public func uninstall(_ id: String) throws -> String {
        guard let path = Self.bundle(id, in: folder) else {
            let elsewhere = directories.bundleFolders.compactMap { Self.bundle(id, in: $0) }
            throw Failure(description: "no bundle \(id) in \(folder)" + (elsewhere.isEmpty ? "" : "; it is installed at \(elsewhere.joined(separator: ", ")) (use --dir)"))
        }
        // Out of sight in one rename, then removed.
        let hidden = folder + "/.\(PathText.lastComponent(of: path)).removing.\(getpid())"
        do {
            try Files.rename(path, to: hidden)
        } catch {
            throw Failure(description: "cannot remove \(path): \(error)")
        }
        try removeTree(hidden)
        DurableFile.syncFolder(folder)
        return path
    }

    /// The `.app` in `folder` whose Info.plist has `id`.
    static func bundle(_ id: String, in folder: String) -> String? {
        for app in BundleCatalog.appBundles(in: folder) {
            if let info = try? BundleCatalog.infoPlist(app), info["CFBundleIdentifier"]?.string == id { return app }
        }
        return nil
    }

    /// Copies a folder tree: files with their modes, symlinks as links.
    func copyTree(_ source: String, to target: String) throws {
        guard let info = try? Files.status(source, followingLinks: false) else { throw Failure(description: "cannot read \(source)") }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            do {
                try Files.makeFolder(target, mode: 0o755)
            } catch {
                throw Failure(description: "cannot create \(target): \(error)")
            }
            for name in FileSystem.entries(source) { try copyTree(source + "/" + name, to: target + "/" + name) }
            try? Files.changeMode(target, info.st_mode & 0o7777)
        case S_IFLNK:
            guard let link = SandboxPlan.symlink(source), (try? Files.makeSymlink(target, to: link)) != nil else {
                throw Failure(description: "cannot copy the link \(source)")
            }
        case S_IFREG:
            let input: FileDescriptor, output: FileDescriptor
            do {
                input = try FileDescriptor.open(source, O_RDONLY)
            } catch {
                throw Failure(description: "cannot read \(source): \(error)")
            }
            do {
                output = try FileDescriptor.open(target, O_WRONLY | O_CREAT | O_EXCL, mode: info.st_mode & 0o777)
            } catch {
                throw Failure(description: "cannot create \(target): \(error)")
            }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count: Int
                do {
                    count = try buffer.withUnsafeMutableBytes { chunk in try input.read(into: chunk) }
                } catch {
                    throw Failure(description: "cannot read \(source): \(error)")
                }
                if count == 0 { break }
                do {
                    try output.write(all: buffer[0..<count])
                } catch {
                    throw Failure(description: "cannot write \(target): \(error)")
                }
            }
            do {
                try output.sync()
                try output.changeMode(info.st_mode & 0o7777)
                try output.close()
            } catch {
                throw Failure(description: "cannot write \(target): \(error)")
            }
        default:
            throw Failure(description: "\(source) is neither a file, a folder nor a link")
        }
    }

    func removeTree(_ path: String) throws {
        guard let info = try? Files.status(path, followingLinks: false) else { return }
        do {
            if info.st_mode & S_IFMT == S_IFDIR {
                for name in FileSystem.entries(path) { try removeTree(path + "/" + name) }
                try Files.removeFolder(path)
            } else {
                try Files.unlink(path)
            }
        } catch let error as Errno {
            throw Failure(description: "cannot remove \(path): \(error)")
        }
    }
}
