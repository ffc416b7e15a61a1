import FoundationEssentials
import Glibc

/// Files written so that a crash at any instant leaves the old or the new
/// content, never a mix (SPEC section 4): a temporary file in the same
/// folder, fsynced, renamed over the old one, then the folder fsynced.
/// Folders are 0700 and files 0600 whatever the umask.
public enum DurableFile {
    public struct Failure: Error, CustomStringConvertible {
        public var path: String
        public var operation: String
        public var code: Int32
        public var description: String { "cannot \(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// Creates `path` and its missing parents, each 0700.
    public static func makeFolder(_ path: String) throws {
        var existing = stat()
        if lstat(path, &existing) == 0, (existing.st_mode & S_IFMT) == S_IFDIR { return }
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) == 0 {
                chmod(current, 0o700)
            } else if errno != EEXIST {
                throw Failure(path: current, operation: "create the folder", code: errno)
            }
        }
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Failure(path: path, operation: "use the folder (it is not a folder)", code: ENOTDIR)
        }
    }

    /// Replaces the file at `path` with `data`, durably.
    public static func write(_ data: Data, to path: String) throws {
        let folder = PathText.parent(of: path)
        try makeFolder(folder)
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(path: folder, operation: "open the folder", code: errno) }
        defer { close(fd) }
        try write(data, named: PathText.lastComponent(of: path), in: fd, path: path)
    }

    /// Replaces the file `name` in the open folder `folder` with `data`,
    /// durably, without following a symlink; `path` names it in errors.
    public static func write(_ data: Data, named name: String, in folder: Int32, path: String) throws {
        let temporary = ".\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: path, operation: "create a temporary file next to", code: errno) }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        do {
            fchmod(fd, 0o600)
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw Failure(path: path, operation: "write", code: errno)
                    }
                    offset += written
                }
            }
            guard fsync(fd) == 0 else { throw Failure(path: path, operation: "sync", code: errno) }
            closed = true
            guard close(fd) == 0 else { throw Failure(path: path, operation: "write", code: errno) }
            guard renameat(folder, temporary, folder, name) == 0 else { throw Failure(path: path, operation: "replace", code: errno) }
        } catch {
            unlinkat(folder, temporary, 0)
            throw error
        }
        fsync(folder)
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
            if pid != getpid(), kill(pid, 0) == 0 || errno == EPERM { continue }
            if unlink(folder + "/" + file) == 0 { removed.append(file) }
        }
        if !removed.isEmpty { syncFolder(folder) }
        return removed
    }

    /// Removes `path` and makes the removal durable; no error when absent.
    public static func remove(_ path: String) throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw Failure(path: path, operation: "remove", code: errno) }
        syncFolder(PathText.parent(of: path))
    }

    static func syncFolder(_ folder: String) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
