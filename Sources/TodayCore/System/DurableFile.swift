import FoundationEssentials
import Glibc
import Posix

/// Files written so that a crash at any instant leaves the old or the new
/// content, never a mix (SPEC section 4): a temporary file in the same
/// folder, fsynced, renamed over the old one, then the folder fsynced.
/// Folders are 0700 and files 0600 whatever the umask.
public enum DurableFile {
    public struct Failure: Error, CustomStringConvertible {
        public var path: String
        public var operation: String
        public var error: Errno
        public var description: String { "cannot \(operation) \(path): \(error)" }
    }

    /// Creates `path` and its missing parents, each 0700.
    public static func makeFolder(_ path: String) throws {
        if Files.isFolder(path) { return }
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            if Files.isFolder(current) { continue }
            do {
                try Files.makeFolder(current, mode: 0o700)
                // Whatever the umask.
                try? Files.changeMode(current, 0o700)
            } catch Errno.exists {
            } catch {
                throw Failure(path: current, operation: "create the folder", error: error)
            }
        }
        guard Files.isFolder(path) else {
            throw Failure(path: path, operation: "use the folder (it is not a folder)", error: .notADirectory)
        }
    }

    /// Replaces the file at `path` with `data`, durably; with `sync`
    /// false, in one step but not yet flushed to the disk (the caller
    /// flushes it soon, with others): a killed process loses nothing, a
    /// power cut what was not flushed.
    public static func write(_ data: Data, to path: String, sync: Bool = true) throws {
        let folder = PathText.parent(of: path)
        try makeFolder(folder)
        let opened: FileDescriptor
        do {
            opened = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)
        } catch {
            throw Failure(path: folder, operation: "open the folder", error: error)
        }
        try write(data, named: PathText.lastComponent(of: path), in: opened, path: path, sync: sync)
    }

    /// Replaces the file the user keeps at `path` with `data`, durably, as
    /// `write(_:to:)` does; where `path` is a symbolic link (a dotfile
    /// manager's: stow, chezmoi, a dotfiles repository), the file it leads
    /// to is the one replaced, beside it, so that the link stays and the
    /// change reaches the file it names. A target that cannot be written
    /// (a read-only store such as Nix's) is refused, not replaced by a
    /// file of todayd's in its place.
    public static func write(_ data: Data, toUsersFile path: String) throws {
        try write(data, to: try linkEnd(of: path))
    }

    /// The file that `path` leads to through its symbolic links (only the
    /// last component is followed, as open() follows it); `path` itself
    /// where it is no link, or does not exist yet. A relative target is
    /// read from the link's folder. At most 40 links, as the kernel
    /// follows; more is refused.
    static func linkEnd(of path: String) throws -> String {
        var current = path
        for _ in 0..<40 {
            let target: String
            do {
                target = try Files.linkTarget(current)
            } catch where error == Errno(EINVAL) || error == .noSuchFile {
                // No link (EINVAL), or nothing there yet: written in place,
                // named through its folder's real path where a link led
                // there (so that a message names `dotfiles/x`, not
                // `config/../dotfiles/x`).
                guard current != path, let folder = try? Files.realPath(PathText.parent(of: current)) else { return current }
                return (folder == "/" ? "" : folder) + "/" + PathText.lastComponent(of: current)
            } catch {
                throw Failure(path: current, operation: "read the link", error: error)
            }
            current = target.hasPrefix("/") ? target : PathText.parent(of: current) + "/" + target
        }
        throw Failure(path: path, operation: "follow the links of", error: .tooManyLinks)
    }

    /// Replaces the file `name` in the open folder `folder` with `data`,
    /// durably, without following a symlink; `path` names it in errors.
    public static func write(_ data: Data, named name: String, in folder: FileDescriptor, path: String, sync: Bool = true) throws {
        let temporary = ".\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600, in: folder)
        } catch {
            throw Failure(path: path, operation: "create a temporary file next to", error: error)
        }
        var step = "write"
        do throws(Errno) {
            try file.changeMode(0o600)
            try file.write(all: data)
            step = "sync"
            if sync { try file.sync() }
            step = "write"
            try file.close()
            step = "replace"
            try folder.rename(temporary, to: name)
        } catch {
            // Nothing half-written stays: the old file is as it was.
            try? folder.unlink(temporary)
            throw Failure(path: path, operation: step, error: error)
        }
        if sync { try? folder.sync() }
    }

    /// The process that wrote `file`, when it is named as `write` names
    /// its temporary files: `.<name>.<pid>.<random>.tmp`.
    static func writer(ofTemporary file: String) -> pid_t? {
        guard file.hasPrefix("."), file.hasSuffix(".tmp") else { return nil }
        let parts = file.dropFirst().dropLast(4).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, UInt32(parts[parts.count - 1]) != nil, let owner = pid_t(parts[parts.count - 2]), owner > 0
        else { return nil }
        return owner
    }

    /// Removes the temporary files that `write` left in `folder` when the
    /// process writing them was killed before it could rename them: those
    /// of `write`'s naming whose process is gone and whose name starts with
    /// `.` and `matching`. Returns the names removed.
    @discardableResult
    public static func removeLeftovers(in folder: String, matching prefix: String = "") -> [String] {
        var removed: [String] = []
        for file in FileSystem.entries(folder) where file.hasPrefix("." + prefix) {
            guard let pid = writer(ofTemporary: file) else { continue }
            // A process of that number that still runs may be writing it.
            if pid != getpid(), Processes.exists(pid) { continue }
            if (try? Files.unlink(folder + "/" + file)) != nil { removed.append(file) }
        }
        if !removed.isEmpty { syncFolder(folder) }
        return removed
    }

    /// Removes `path` and makes the removal durable; no error when absent.
    public static func remove(_ path: String) throws {
        do {
            try Files.unlink(path)
        } catch Errno.noSuchFile {
        } catch {
            throw Failure(path: path, operation: "remove", error: error)
        }
        syncFolder(PathText.parent(of: path))
    }

    static func syncFolder(_ folder: String) {
        try? FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY).sync()
    }
}
