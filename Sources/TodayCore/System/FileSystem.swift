import Glibc
import Posix

/// Plain POSIX file-system queries, for scans that touch thousands of
/// files and cannot afford more than one system call per question.
package enum FileSystem {
    /// The names in a folder, without `.` and `..`; empty when unreadable.
    package static func entries(_ folder: String) -> [String] {
        guard let stream = opendir(folder) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

extension FileSystem {
    /// Writes all of `data` to `fd` (standard output or error), however
    /// many writes that takes; gives up on an error.
    package static func writeAll(_ fd: Int32, _ data: [UInt8]) {
        try? FileDescriptor(borrowing: fd).write(all: data)
    }

    package static func writeAll(_ fd: Int32, _ text: String) { writeAll(fd, Array(text.utf8)) }
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
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}
