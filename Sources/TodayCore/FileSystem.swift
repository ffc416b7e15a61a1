import Glibc

/// Plain POSIX file-system queries, for scans that touch thousands of
/// files and cannot afford more than one system call per question.
enum FileSystem {
    /// The names in a folder, without `.` and `..`; empty when unreadable.
    static func entries(_ folder: String) -> [String] {
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
