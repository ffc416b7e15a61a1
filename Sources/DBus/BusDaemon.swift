import CDBus
import CSystem
import Dispatch
import FoundationEssentials
import Glibc
import Posix
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
        let line = BusDaemon.readLine(output)
        try? output.close()
        guard !line.isEmpty else {
            try? Processes.signal(pid, SIGKILL)
            _ = try? Processes.reap(pid)
            if let configFolder { try? FileManager.default.removeItem(atPath: configFolder) }
            throw DBusError.failed("\(executable) printed no address; is the dbus-daemon package installed?")
        }
        self.pid = pid
        self.address = line
    }

    /// `init` for async code: the wait for the daemon's address is made on
    /// a thread of its own, not on the caller's, which in a task is one of
    /// the few the cooperative pool has (a hundred tests starting a bus
    /// each would otherwise hold the pool until their buses answer).
    public static func start(
        executable: String = "/usr/bin/dbus-daemon", serviceFolders: [String]? = nil, environment: [String: String]? = nil
    ) async throws -> BusDaemon {
        try await withCheckedThrowingContinuation { continuation in
            do throws(Errno) {
                try Threads.detach {
                    continuation.resume(
                        with: Result { try BusDaemon(executable: executable, serviceFolders: serviceFolders, environment: environment) })
                }
            } catch {
                continuation.resume(throwing: DBusError.failed("cannot start a thread to start \(executable): \(error)"))
            }
        }
    }

    /// Starts the daemon with `today_spawn` (Foundation's Process would
    /// add a SIGCHLD handler that wakes threads whenever any child of this
    /// process ends, providers included): standard output a pipe, whose
    /// read end is returned, standard error /dev/null, no other descriptor,
    /// an empty signal mask and default signal dispositions. It is started
    /// from `Starter`'s thread, which lasts as long as this process, and
    /// gets SIGTERM when that thread ends: a process killed outright, or
    /// crashing, takes its private bus (and the bus's socket) with it.
    private static func spawn(
        _ executable: String, arguments: [String], environment: [String: String]?
    ) throws -> (pid_t, FileDescriptor) {
        let ends: (read: FileDescriptor, write: FileDescriptor)
        do {
            ends = try FileDescriptor.pipe()
        } catch {
            throw DBusError.failed("cannot make a pipe: \(error)")
        }
        // The daemon's end: closed here once it is started.
        let output = ends.write.rawValue
        let started = Mutex<(pid: pid_t, error: Int32)>((-1, 0))
        Starter.run { onStarterThread in
            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
            defer { envp?.forEach { free($0) } }
            // Standard error to /dev/null; with the starter thread, the bus
            // ends when it does (and dbus-daemon then removes its socket).
            var request = today_spawn_request(
                path: nil, argv: nil, envp: nil, input: -1, output: output, error: -1, directory: nil,
                nice: today_process_nice(), flags: onStarterThread ? Int32(TODAY_SPAWN_ENDS_WITH_THREAD) : 0)
            var pid: pid_t = 0
            func start(_ envp: UnsafePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
                executable.withCString { path in
                    argv.withUnsafeBufferPointer { argv in
                        request.path = path
                        request.argv = argv.baseAddress
                        request.envp = envp
                        return today_spawn(&request, &pid)
                    }
                }
            }
            let error = envp.map { envp in envp.withUnsafeBufferPointer { start($0.baseAddress) } } ?? start(environ)
            started.withLock { $0 = (error == 0 ? pid : -1, error) }
        }
        let (pid, error) = started.withLock { $0 }
        withExtendedLifetime(ends.write) {}
        guard pid > 0 else {
            throw DBusError.failed("cannot start \(executable): \(Errno(error)); is the dbus-daemon package installed?")
        }
        return (pid, ends.read)
    }

    /// The one thread that starts private buses, and never ends.
    private final class Starter: Sendable {
        /// Nil where no thread could be made.
        static let shared: Starter? = {
            let starter = Starter()
            return (try? Threads.detach { starter.loop() }) == nil ? nil : starter
        }()

        private let jobs = Mutex<[@Sendable () -> Void]>([])
        private let wake = DispatchSemaphore(value: 0)

        private func loop() -> Never {
            while true {
                wake.wait()
                for job in jobs.withLock({ jobs in defer { jobs = [] }; return jobs }) { job() }
            }
        }

        /// Runs `body` on the starter's thread and waits for it; `body` is
        /// told whether it runs there. Where there is no such thread, it
        /// runs on the calling thread (and the bus does not end with the
        /// process).
        static func run(_ body: @escaping @Sendable (_ onStarterThread: Bool) -> Void) {
            guard let starter = shared else { return body(false) }
            let done = DispatchSemaphore(value: 0)
            starter.jobs.withLock {
                $0.append {
                    body(true)
                    done.signal()
                }
            }
            starter.wake.signal()
            done.wait()
        }
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
    public static func readLine(_ file: FileDescriptor) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = (try? withUnsafeMutableBytes(of: &byte) { try file.read(into: $0) }) ?? -1
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
        guard (try? Processes.signal(pid, SIGKILL)) != nil else { return }
        _ = try? Processes.reap(pid)
        if let socket = Self.socketPath(of: address) { try? Files.unlink(socket) }
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
    let bus = try await BusDaemon.start()
    let connection = try Connection(address: bus.address)
    defer {
        connection.close()
        bus.stop()
    }
    return try await body(bus, connection)
}
