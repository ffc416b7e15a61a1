import Glibc
import Posix

/// Plain POSIX file-system queries, for scans that touch thousands of
/// files and cannot afford more than one system call per question.
package enum FileSystem {
    /// The names in a folder, without `.` and `..`; empty when unreadable.
    package static func entries(_ folder: String) -> [String] {
        (try? Files.entries(folder)) ?? []
    }

    /// Whether something is at `path`, following symlinks.
    static func exists(_ path: String) -> Bool {
        Files.exists(path)
    }

    /// `program` as it would be run: itself where it is a path (and can
    /// be run), else the first of the `path` folders' that can be run.
    static func program(_ program: String, path: [String]) -> String? {
        if program.contains("/") { return Files.isExecutable(program) ? program : nil }
        return path.lazy.map { $0 + "/" + program }.first(where: Files.isExecutable)
    }

    /// Whether `path` is a regular file, following symlinks.
    static func isRegularFile(_ path: String) -> Bool {
        guard let info = try? Files.status(path) else { return false }
        return info.st_mode & S_IFMT == S_IFREG
    }

    /// Whether `path` is a folder, following symlinks.
    static func isDirectory(_ path: String) -> Bool {
        guard let info = try? Files.status(path) else { return false }
        return info.st_mode & S_IFMT == S_IFDIR
    }
}

extension FileSystem {
    /// Writes all of `data` to `fd` (standard output or error), however
    /// many writes that takes; gives up on an error.
    package static func writeAll(_ fd: Int32, _ data: [UInt8]) {
        try? FileDescriptor(borrowing: fd).write(all: data)
    }

    package static func writeAll(_ fd: Int32, _ text: String) { FileDescriptor(borrowing: fd).writeAll(text) }
}

/// Which file a path names, and its version: device, inode, size and
/// modification time, as stat(2) gives them.
package struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64
    let modifiedNanoseconds: Int64

    /// Nil where the path cannot be looked at.
    package init?(of path: String) {
        guard let info = try? Files.status(path) else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}
