import CDBus
import FoundationEssentials
import Glibc
import Synchronization

/// A `dbus-daemon --session` of our own: for `todayd --private-bus` and for
/// tests, which pass its address explicitly instead of touching the
/// session's bus.
public final class BusDaemon: Sendable {
    /// The address to connect to, as the daemon printed it.
    public let address: String
    let pid: pid_t
    private let stopped = Mutex(false)

    private let configFolder: String?

    /// Starts the daemon and waits for its address. With `serviceFolders`,
    /// the bus activates the services whose `.service` files are there
    /// (and only those).
    /// `environment` is the daemon's, and so that of the services it starts.
    public init(
        executable: String = "/usr/bin/dbus-daemon", serviceFolders: [String]? = nil, environment: [String: String]? = nil
    ) throws {
        var configFolder: String?
        let arguments: [String]
        if let serviceFolders {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bus-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("session.conf")
            try Data(Self.configuration(serviceFolders: serviceFolders).utf8).write(to: file)
            arguments = ["--config-file=\(file.path)", "--nofork", "--nopidfile", "--print-address"]
            configFolder = folder.path
        } else {
            arguments = ["--session", "--nofork", "--nopidfile", "--print-address"]
        }
        self.configFolder = configFolder
        let (pid, output) = try Self.spawn(executable, arguments: arguments, environment: environment)
        let line = BusDaemon.readLine(fileDescriptor: output)
        close(output)
        guard !line.isEmpty else {
            kill(pid, SIGKILL)
            _ = waitpid(pid, nil, 0)
            if let configFolder { try? FileManager.default.removeItem(atPath: configFolder) }
            throw DBusError.failed("\(executable) printed no address; is the dbus-daemon package installed?")
        }
        self.pid = pid
        self.address = line
    }

    /// Starts the daemon with posix_spawn (Foundation's Process would add a
    /// SIGCHLD handler that wakes threads whenever any child of this process
    /// ends, providers included): standard output a pipe, whose read end
    /// is returned, standard error /dev/null, no other descriptor, an empty
    /// signal mask and default signal dispositions.
    private static func spawn(
        _ executable: String, arguments: [String], environment: [String: String]?
    ) throws -> (pid_t, Int32) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw DBusError.failed("cannot make a pipe: \(String(cString: strerror(errno)))") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        defer { close(ends[1]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else: a file this process has open for writing, held by
        // the bus for its life, could not be executed meanwhile (ETXTBSY).
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        let status = envp.map { posix_spawn(&pid, executable, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard status == 0 else {
            close(ends[0])
            throw DBusError.failed("cannot start \(executable): \(String(cString: strerror(status))); is the dbus-daemon package installed?")
        }
        return (pid, ends[0])
    }

    /// A session bus configuration that activates services only from `serviceFolders`.
    static func configuration(serviceFolders: [String]) -> String {
        func escaped(_ text: String) -> String {
            text.replacingScalars("&", with: "&amp;").replacingScalars("<", with: "&lt;")
        }
        return """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <keep_umask/>
              <listen>unix:tmpdir=/tmp</listen>
              <auth>EXTERNAL</auth>
            \(serviceFolders.map { "  <servicedir>\(escaped($0))</servicedir>" }.joined(separator: "\n"))
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
    }

    /// Reads one line, byte by byte so nothing after it is consumed.
    public static func readLine(fileDescriptor: Int32) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(fileDescriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Stops the daemon, and removes the socket it listened on. SIGKILL: a
    /// bus holds nothing worth flushing; the daemon does not remove its
    /// socket then, so this does.
    public func stop() {
        // Once reaped, the pid may belong to someone else: stop only once.
        guard !stopped.withLock({ was in defer { was = true }; return was }) else { return }
        if let configFolder { try? FileManager.default.removeItem(atPath: configFolder) }
        guard kill(pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        if let socket = Self.socketPath(of: address) { unlink(socket) }
    }

    /// The file of a `unix:path=…` address, unescaped (D-Bus specification,
    /// "Server Addresses"); nil for any other kind of address.
    package static func socketPath(of address: String) -> String? {
        guard address.hasPrefix("unix:") else { return nil }
        for pair in address.dropFirst(5).split(separator: ",") where pair.hasPrefix("path=") {
            var bytes: [UInt8] = []
            var rest = Substring(pair.dropFirst(5)).utf8[...]
            while let byte = rest.popFirst() {
                guard byte == UInt8(ascii: "%") else {
                    bytes.append(byte)
                    continue
                }
                guard rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16) else {
                    return nil
                }
                bytes.append(value)
                rest = rest.dropFirst(2)
            }
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }

    deinit { stop() }
}

/// Runs `body` with a fresh bus and a connection to it, closing both after.
public func withPrivateBus<T>(_ body: (BusDaemon, Connection) async throws -> T) async throws -> T {
    let bus = try BusDaemon()
    let connection = try Connection(address: bus.address)
    defer {
        connection.close()
        bus.stop()
    }
    return try await body(bus, connection)
}
