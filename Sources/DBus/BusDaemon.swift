import Foundation
import Glibc
import Synchronization

/// A `dbus-daemon --session` of our own: for `todayd --private-bus` and for
/// tests, which pass its address explicitly instead of touching the
/// session's bus.
public final class BusDaemon: Sendable {
    /// The address to connect to, as the daemon printed it.
    public let address: String
    private let process: Process
    private let stopped = Mutex(false)

    private let configFolder: String?

    /// Starts the daemon and waits for its address. With `serviceFolders`,
    /// the bus activates the services whose `.service` files are there
    /// (and only those).
    /// `environment` is the daemon's, and so that of the services it starts.
    public init(
        executable: String = "/usr/bin/dbus-daemon", serviceFolders: [String]? = nil, environment: [String: String]? = nil
    ) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        if let environment { process.environment = environment }
        var configFolder: String?
        if let serviceFolders {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bus-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("session.conf")
            try Data(Self.configuration(serviceFolders: serviceFolders).utf8).write(to: file)
            process.arguments = ["--config-file=\(file.path)", "--nofork", "--nopidfile", "--print-address"]
            configFolder = folder.path
        } else {
            process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address"]
        }
        self.configFolder = configFolder
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = BusDaemon.readLine(output.fileHandleForReading)
        guard !line.isEmpty else {
            kill(process.processIdentifier, SIGKILL)
            throw DBusError.failed("\(executable) printed no address; is the dbus-daemon package installed?")
        }
        self.process = process
        self.address = line
    }

    /// A session bus configuration that activates services only from `serviceFolders`.
    static func configuration(serviceFolders: [String]) -> String {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
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
    public static func readLine(_ handle: FileHandle) -> String {
        var line = Data()
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    /// Stops the daemon. SIGKILL: a bus holds nothing worth flushing, and
    /// processes started from some threads inherit a mask that blocks SIGTERM.
    public func stop() {
        // Once reaped, the pid may belong to someone else: stop only once.
        guard !stopped.withLock({ was in defer { was = true }; return was }) else { return }
        if let configFolder { try? FileManager.default.removeItem(atPath: configFolder) }
        let pid = process.processIdentifier
        guard kill(pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
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
