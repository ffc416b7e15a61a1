import FoundationEssentials
import Glibc
import Posix

/// The bubblewrap sandbox an exec provider runs in (SPEC section 11): the
/// system read-only, the widget's app read-only, its own container
/// read-write as HOME and working folder, its groups' containers, a private
/// /tmp, the session bus socket, a minimal /dev, its own /proc, every
/// namespace unshared (the network kept only with
/// `com.apple.security.network.client`), a new session, no new
/// privileges, ended with todayd. The command line is plain value code.
public struct SandboxPlan: Sendable, Equatable {
    public var bwrap: String
    /// The container app's folder, which holds the widget's `.appex`.
    public var appFolder: String
    public var container: String
    public var groupContainers: [String]
    public var network: Bool
    /// The session bus address the provider is given.
    public var busAddress: String?
    /// Folders of the Swift runtime (or other libraries) the provider loads
    /// from outside /usr.
    public var libraryFolders: [String]
    /// Files and folders the user named in the widget's settings, which a
    /// provider entitled to user-selected files reads (bound read-only
    /// where they exist).
    public var userFiles: [String]

    public init(
        bwrap: String, appFolder: String, container: String, groupContainers: [String], network: Bool, busAddress: String?,
        libraryFolders: [String], userFiles: [String] = []
    ) {
        self.userFiles = userFiles
        self.bwrap = bwrap
        self.appFolder = appFolder
        self.container = container
        self.groupContainers = groupContainers
        self.network = network
        self.busAddress = busAddress
        self.libraryFolders = libraryFolders
    }

    /// What of /etc programs need: the dynamic linker's cache, TLS
    /// certificates, name resolution, the time zone, users and groups.
    public static let etc = [
        "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl/certs", "/etc/ca-certificates", "/etc/pki/tls/certs",
        "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/localtime",
        "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/alternatives",
    ]

    /// The bus socket's path, for an address of the `unix:path=` kind.
    /// An abstract socket belongs to the network namespace: with one, the
    /// network cannot be unshared.
    public var busSocket: (path: String?, abstract: Bool) {
        guard let busAddress else { return (nil, false) }
        for address in busAddress.split(separator: ";") {
            guard address.hasPrefix("unix:") else { continue }
            for part in address.dropFirst(5).split(separator: ",") {
                if part.hasPrefix("path=") { return (Self.unescape(String(part.dropFirst(5))), false) }
                if part.hasPrefix("abstract=") { return (nil, true) }
            }
        }
        return (nil, false)
    }

    /// D-Bus address values escape bytes as `%XX`.
    static func unescape(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// bwrap's arguments, then `command`; `exists` answers for the paths
    /// that are bound only where they are (the host's layout varies).
    public func arguments(command: [String], exists: (String) -> Bool = Self.exists, symlink: (String) -> String? = Self.symlink) -> [String] {
        systemArguments(exists: exists, symlink: symlink) + ownArguments(command: command)
    }

    /// The first part of `arguments`, the same for every provider with the
    /// same network: namespaces, the system's folders, /tmp, /dev, /proc.
    func systemArguments(exists: (String) -> Bool = Self.exists, symlink: (String) -> String? = Self.symlink) -> [String] {
        var args = ["--die-with-parent", "--new-session", "--unshare-all"]
        if network || busSocket.abstract { args.append("--share-net") }
        args += ["--ro-bind", "/usr", "/usr"]
        // Merged /usr (links) or not (folders).
        for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            if let target = symlink(top) {
                args += ["--symlink", target, top]
            } else if exists(top) {
                args += ["--ro-bind", top, top]
            }
        }
        for path in Self.etc where exists(path) { args += ["--ro-bind", path, path] }
        // The private /tmp first: what is bound below may lie in the host's.
        return args + ["--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc"]
    }

    /// The rest of `arguments`: this provider's libraries, bundle,
    /// containers and bus socket, then its command.
    func ownArguments(command: [String]) -> [String] {
        var args: [String] = []
        let socket = busSocket
        for folder in libraryFolders where !folder.hasPrefix("/usr/") { args += ["--ro-bind", folder, folder] }
        args += ["--ro-bind", appFolder, appFolder]
        // Before the container: a folder named that holds it does not hide it.
        for path in userFiles where Self.bindable(path) { args += ["--ro-bind-try", path, path] }
        args += ["--bind", container, container]
        for group in groupContainers { args += ["--bind", group, group] }
        if let path = socket.path { args += ["--bind", path, path] }
        args += ["--setenv", "HOME", container, "--chdir", container, "--"]
        return args + command
    }

    /// Whether a path the user named may be bound: not the root, nor what
    /// the sandbox makes of its own (/proc, /dev, /sys).
    static func bindable(_ path: String) -> Bool {
        let parts = path.split(separator: "/")
        guard path.hasPrefix("/"), let top = parts.first, !parts.contains(".."), !parts.contains(".") else { return false }
        return !["proc", "dev", "sys"].contains(top)
    }

    /// The first MiB of a file: where an executable's program headers and
    /// dynamic section are (the string table may lie further: read it all
    /// when the file is small enough).
    static func readHeaders(_ path: String) -> Data? {
        guard let file = try? FileDescriptor.open(path, O_RDONLY), let info = try? file.status() else { return nil }
        let size = min(Int(info.st_size), 64 << 20)
        var data = Data(count: size)
        var offset = 0
        while offset < size {
            let count = data.withUnsafeMutableBytes { buffer in
                (try? file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]), at: offset)) ?? 0
            }
            guard count > 0 else { break }
            offset += count
        }
        return data.prefix(offset)
    }

    public static func exists(_ path: String) -> Bool { Files.exists(path) }

    /// Where the symlink `path` points; nil where it is no symlink.
    public static func symlink(_ path: String) -> String? {
        guard let target = try? Files.linkTarget(path), !target.isEmpty else { return nil }
        return target
    }

    /// The folders an executable loads libraries from outside the system's:
    /// its ELF RUNPATH (or RPATH) entries, `$ORIGIN` resolved. Swift
    /// programs name the toolchain's runtime folder there.
    public static func libraryFolders(of executable: String) -> [String] {
        guard let data = readHeaders(executable) else { return [] }
        let origin = PathText.parent(of: executable)
        return ELFRunPath.entries(data).map { $0.replacingScalars("$ORIGIN", with: origin).replacingScalars("${ORIGIN}", with: origin) }
            .filter { $0.hasPrefix("/") && FileSystem.isDirectory($0) }
    }
}

/// The RUNPATH and RPATH entries of a 64-bit little-endian ELF file.
enum ELFRunPath {
    static func entries(_ data: Data) -> [String] {
        let bytes = [UInt8](data)
        guard bytes.count > 64, bytes[0..<4] == [0x7F, 0x45, 0x4C, 0x46], bytes[4] == 2, bytes[5] == 1 else { return [] }
        func u16(_ at: Int) -> Int? { at + 2 <= bytes.count ? Int(bytes[at]) | Int(bytes[at + 1]) << 8 : nil }
        func u64(_ at: Int) -> UInt64? {
            guard at + 8 <= bytes.count else { return nil }
            return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << UInt64(8 * $1) }
        }
        func u32(_ at: Int) -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << UInt32(8 * $1) }
        }
        guard let phoff = u64(32).flatMap({ Int(exactly: $0) }), let phentsize = u16(54), let phnum = u16(56), phentsize >= 56 else { return [] }
        // Program headers: the loads (to map addresses to offsets) and the dynamic section.
        var loads: [(vaddr: UInt64, offset: UInt64, size: UInt64)] = []
        var dynamic: (offset: Int, size: Int)?
        for index in 0..<phnum {
            let at = phoff + index * phentsize
            guard let type = u32(at), let offset = u64(at + 8), let vaddr = u64(at + 16), let filesz = u64(at + 32) else { return [] }
            if type == 1 { loads.append((vaddr, offset, filesz)) }
            if type == 2, let o = Int(exactly: offset), let s = Int(exactly: filesz) { dynamic = (o, s) }
        }
        guard let dynamic else { return [] }
        var strtab: UInt64?
        var paths: [UInt64] = []
        var at = dynamic.offset
        while at + 16 <= min(bytes.count, dynamic.offset + dynamic.size), let tag = u64(at), tag != 0, let value = u64(at + 8) {
            if tag == 5 { strtab = value }
            if tag == 29 || tag == 15 { paths.append(value) }  // DT_RUNPATH, DT_RPATH
            at += 16
        }
        guard let strtab, let load = loads.first(where: { strtab >= $0.vaddr && strtab < $0.vaddr + $0.size }) else { return [] }
        let tableOffset = strtab - load.vaddr + load.offset
        return paths.flatMap { offset -> [String] in
            guard let start = Int(exactly: tableOffset + offset), start < bytes.count else { return [] }
            let end = bytes[start...].firstIndex(of: 0) ?? bytes.count
            return String(decoding: bytes[start..<end], as: UTF8.self).split(separator: ":").map(String.init)
        }
    }
}

/// Whether providers can be confined here, found out once at start: bwrap
/// installed, and the kernel letting it make its namespaces.
public enum SandboxSupport: Sendable, Equatable {
    case available(bwrap: String)
    case unavailable(reason: String)

    public static func probe(path: [String]) -> SandboxSupport {
        guard let bwrap = path.lazy.map({ $0 + "/bwrap" }).first(where: Files.isExecutable) else {
            return .unavailable(reason: "bwrap is not installed (Debian package bubblewrap)")
        }
        let probe = ["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--new-session", "true"]
        var limits = ProviderLimits()
        limits.timeout = .seconds(5)
        guard var child = try? SpawnedProcess(bwrap, arguments: CStrings([bwrap] + probe), directory: "/", environment: CStrings(["PATH=/usr/bin:/bin"])) else {
            return .unavailable(reason: "\(bwrap) cannot be started")
        }
        guard child.communicate(input: Data(), limits: limits, log: { _ in }, beforeReap: {}).ending == .exited(0) else {
            return .unavailable(reason: "\(bwrap) cannot make its namespaces here (does the kernel refuse unprivileged user namespaces?)")
        }
        return .available(bwrap: bwrap)
    }
}
