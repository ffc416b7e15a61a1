import Glibc

/// Calls on paths: a file's status, folders, renames and removals, the
/// permission bits. Each retries when a signal interrupts it and throws
/// one `Errno` when it fails.
public enum Files {
    /// The status of `path`; of a symlink itself with `followingLinks` false.
    /// The corresponding C functions are `stat` and `lstat`.
    public static func status(_ path: String, followingLinks: Bool = true) throws(Errno) -> stat {
        var info = stat()
        _ = try retryingInterrupts(.stat) { followingLinks ? stat(path, &info) : lstat(path, &info) }
        return info
    }

    /// Whether `path` is a folder (not a symlink to one).
    public static func isFolder(_ path: String) -> Bool {
        guard let info = try? status(path, followingLinks: false) else { return false }
        return info.st_mode & S_IFMT == S_IFDIR
    }

    /// Whether something is at `path`, following symlinks.
    public static func exists(_ path: String) -> Bool {
        (try? status(path)) != nil
    }

    /// Creates the folder `path`. The corresponding C function is `mkdir`.
    public static func makeFolder(_ path: String, mode: mode_t) throws(Errno) {
        _ = try retryingInterrupts(.mkdir) { mkdir(path, mode) }
    }

    /// Removes the empty folder `path`. The corresponding C function is `rmdir`.
    public static func removeFolder(_ path: String) throws(Errno) {
        _ = try retryingInterrupts(.unlink) { rmdir(path) }
    }

    /// Sets the permission bits of `path`. The corresponding C function is `chmod`.
    public static func changeMode(_ path: String, _ mode: mode_t) throws(Errno) {
        _ = try retryingInterrupts(.chmod) { chmod(path, mode) }
    }

    /// Renames `path` to `newPath`. The corresponding C function is `rename`.
    public static func rename(_ path: String, to newPath: String) throws(Errno) {
        _ = try retryingInterrupts(.rename) { Glibc.rename(path, newPath) }
    }

    /// Removes the file `path`. The corresponding C function is `unlink`.
    public static func unlink(_ path: String) throws(Errno) {
        _ = try retryingInterrupts(.unlink) { Glibc.unlink(path) }
    }

    /// Where the symlink `path` points. The corresponding C function is `readlink`.
    public static func linkTarget(_ path: String) throws(Errno) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = try retryingInterrupts(.stat) { readlink(path, &buffer, buffer.count - 1) }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Files {
    /// The names in folder `path` (without `.` and `..`), in the order the
    /// file system gives them. The corresponding C functions are `opendir`
    /// and `readdir`.
    public static func entries(_ path: String) throws(Errno) -> [String] {
        if let injected = Faults.take(.open) { throw injected }
        guard let folder = opendir(path) else { throw Errno.current }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The first bytes of the file at `path`, at most `limit`: for the
    /// small files of /proc, read in one call.
    public static func head(_ path: String, limit: Int) throws(Errno) -> [UInt8] {
        let file = try FileDescriptor.open(path, O_RDONLY)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 1)
        defer { buffer.deallocate() }
        let count = try file.read(into: buffer)
        return Array(buffer[0..<count])
    }
}

extension Files {
    /// `path` with every symlink, `.` and `..` resolved, absolute.
    /// The corresponding C function is `realpath`.
    public static func realPath(_ path: String) throws(Errno) -> String {
        if let injected = Faults.take(.stat) { throw injected }
        guard let resolved = realpath(path, nil) else { throw Errno.current }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether this process may run the file at `path`.
    /// The corresponding C function is `access` (X_OK).
    public static func isExecutable(_ path: String) -> Bool {
        access(path, X_OK) == 0
    }

    /// Makes a symlink at `path` that points to `target`.
    /// The corresponding C function is `symlink`.
    public static func makeSymlink(_ path: String, to target: String) throws(Errno) {
        _ = try retryingInterrupts(.open) { symlink(target, path) }
    }
}

extension FileDescriptor {
    /// Whether `rawValue` is an open descriptor of this process.
    /// The corresponding C function is `fcntl` (F_GETFD).
    public static func isOpen(_ rawValue: Int32) -> Bool {
        fcntl(rawValue, F_GETFD) >= 0
    }

    /// Another descriptor for the same open file, owned.
    /// The corresponding C function is `fcntl` (F_DUPFD_CLOEXEC).
    public func duplicate() throws(Errno) -> FileDescriptor {
        FileDescriptor(owning: try retryingInterrupts(.dup) { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) })
    }

    /// Makes `target` (0, 1 or 2, say) a descriptor for this open file.
    /// The corresponding C function is `dup2`.
    public func duplicate(onto target: Int32) throws(Errno) {
        _ = try retryingInterrupts(.dup) { dup2(rawValue, target) }
    }

    /// The width of the terminal this descriptor is, in columns; nil for
    /// anything else. The corresponding C function is `ioctl` (TIOCGWINSZ).
    public var terminalColumns: Int? {
        var size = winsize()
        guard ioctl(rawValue, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}
