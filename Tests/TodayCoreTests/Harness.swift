import DBus
import Foundation
import Posix
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

enum Paths {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The debug build's, or TODAY_TEST_TODAYD's (make flood times the
    /// release build: the rate a flood is held to is a release's figure).
    static let todayd = ProcessInfo.processInfo.environment["TODAY_TEST_TODAYD"] ?? root.appendingPathComponent(".build/debug/todayd").path
    static let todayctl = root.appendingPathComponent(".build/debug/todayctl").path
    /// The example bundles as `make test` assembles them (manifests from
    /// data/examples, executables from Examples/).
    /// Suites that start X servers and GTK programs run on their own after
    /// the rest (`make test` sets TODAY_TEST_DISPLAY=1 for them): many X
    /// servers beside the timed tests would load a small machine.
    static let displaySuites = ProcessInfo.processInfo.environment["TODAY_TEST_DISPLAY"] != nil
    static let examples = root.appendingPathComponent(".build/examples").path
}

/// The real todayd binary on a private bus, with an XDG tree of its own
/// under `home` (kept across restarts when the same home is passed again).
final class TodayDaemon: @unchecked Sendable {
    // @unchecked: fields are set once in init and only read after.
    let process = Process()
    let address: String
    let home: URL
    /// Where its standard error goes (when not to `standardError`): a
    /// file, so that a daemon that logs much never waits for a reader.
    let logPath: String
    /// Standard output: the bus address line, then what apps todayd
    /// started wrote (they inherit it).
    let output = Pipe()

    /// Starts todayd on a bus of its own, or on the bus at `address`;
    /// through `launcher` (a command that ends by executing its last
    /// arguments) when one is given; its standard error to the file
    /// `standardError` (appended to) instead of `log`.
    init(
        bundles: [String], home: URL? = nil, extra: [String] = [], address: String? = nil, path: String? = nil,
        environment more: [String: String] = [:], launcher: [String] = [], verbose: Bool = true, standardError: String? = nil
    ) throws {
        self.home = try home ?? temporaryDirectory("todayd")
        logPath = standardError ?? DaemonLogs.newPath()
        DaemonLogs.current?.add(logPath)
        let command = launcher + [Paths.todayd]
        process.executableURL = URL(fileURLWithPath: command[0])
        let bus = address.map { ["--address", $0] } ?? ["--private-bus"]
        process.arguments = Array(command.dropFirst()) + bus + (verbose ? ["--verbose"] : []) + bundles.flatMap { ["--bundles", $0] } + extra
        var environment = Self.environment(home: self.home)
        if let path { environment["PATH"] = path }
        environment.merge(more) { _, given in given }
        process.environment = environment
        process.standardOutput = output
        if let standardError, let file = FileHandle(forWritingAtPath: standardError) {
            file.seekToEndOfFile()
            process.standardError = file
        } else {
            process.standardError = try DaemonLogs.file(at: logPath)
        }
        try process.run()
        self.address =
            address
            ?? BusDaemon.readLine(FileDescriptor(owning: dup(output.fileHandleForReading.fileDescriptor))).replacingOccurrences(of: "DBUS_SESSION_BUS_ADDRESS=", with: "")
    }

    /// Runs `body` with todayd installed (scripts/install) under a prefix of
    /// its own and a bus that starts it at the first call through the
    /// installed service file, the examples its only bundles; and a client
    /// on that bus, before todayd runs.
    static func withActivatableBus(_ body: (BusDaemon, String, Connection) async throws -> Void) async throws {
        let root = try temporaryDirectory("activation")
        defer { try? FileManager.default.removeItem(at: root) }
        let (bus, prefix) = try await activatableBus(in: root)
        defer { bus.stop() }
        let client = try Connection(address: bus.address)
        defer { client.close() }
        #expect(try await client.callBus(MemberName("NameHasOwner"), [.string(Today.busName.rawValue)]).body == [.boolean(false)])
        try await body(bus, prefix, client)
    }

    private static func activatableBus(in root: URL) async throws -> (bus: BusDaemon, prefix: String) {
        let prefix = root.appendingPathComponent("prefix").path
        let install = try await run([Paths.root.appendingPathComponent("scripts/install").path, Paths.root.appendingPathComponent(".build/debug").path, prefix])
        #expect(install.status == 0, "\(install.error)")
        var environment = Self.environment(home: root)
        environment["XDG_DATA_DIRS"] = root.path + "/shared"
        try FileManager.default.createDirectory(atPath: root.path + "/shared/todayd", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.path + "/shared/todayd/bundles", withDestinationPath: Paths.examples)
        return (try await BusDaemon.start(serviceFolders: [prefix + "/share/dbus-1/services"], environment: environment), prefix)
    }

    static func environment(home: URL) -> [String: String] {
        [
            "HOME": home.path, "XDG_DATA_HOME": home.path + "/data", "XDG_DATA_DIRS": home.path + "/none",
            "XDG_CACHE_HOME": home.path + "/cache", "XDG_STATE_HOME": home.path + "/state", "PATH": "/usr/bin:/bin",
        ]
    }

    /// Waits until the daemon owns its name, and returns a connection to
    /// its bus; throws, saying so, after 10 s without it.
    func ready() async throws -> Connection {
        let connection = try await Connection.connect(address: address)
        do {
            _ = try await connection.waitForOwner(of: Today.busName, timeout: .seconds(10))
        } catch {
            connection.close()
            throw DBusError.failed("todayd did not take \(Today.busName.rawValue) within 10 s (\(process.isRunning ? "it runs" : "it exited with \(process.terminationStatus)"))")
        }
        return connection
    }

    /// Stops the daemon with SIGTERM and returns its exit status.
    @discardableResult
    func stop(keepHome: Bool = false) -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        if !keepHome { try? FileManager.default.removeItem(at: home) }
        return process.terminationStatus
    }

    /// What todayd's standard output holds past the address line (apps it
    /// started write there), so far.
    var outputText: String {
        var text = ""
        var ready = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
        while poll(&ready, 1, 0) > 0, ready.revents & Int16(POLLIN) != 0 {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    /// What the daemon logged so far.
    var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}


/// A program that runs beside a test, its standard output in a pipe for
/// `read(_:until:)`; killed by `stop()` (or at the latest by `deinit`).
final class Background {
    let process = Process()
    let output = Pipe()

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = output
        try process.run()
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}


/// The logs of the daemons a test started, added to every issue the test
/// records, so that a failure shows what todayd said. Suites that start
/// daemons have the trait `.showsDaemonLogs`.
final class DaemonLogs: Sendable {
    @TaskLocal static var current: DaemonLogs?

    private let paths = Locked<[String]>([])

    func add(_ path: String) { paths.withLock { $0.append(path) } }

    /// `issue` with the end of each daemon's log as a comment.
    func annotate(_ issue: Issue) -> Issue {
        var issue = issue
        for (index, path) in paths.value.enumerated() {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(no log)"
            let tail = text.count > 8000 ? "…" + text.suffix(8000) : Substring(text)
            issue.comments.append(Comment(rawValue: "todayd's log (daemon \(index + 1), \(path)):\n\(tail)"))
        }
        return issue
    }

    /// A fresh log file name (the daemon's logs are removed when the test ends).
    static func newPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("todayd-log-\(UUID().uuidString)").path
    }

    static func file(at path: String) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        guard let file = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteUnknown) }
        file.seekToEndOfFile()
        return file
    }

    func removeAll() {
        for path in paths.value where path.contains("todayd-log-") { try? FileManager.default.removeItem(atPath: path) }
    }
}

/// Adds the logs of the daemons a test starts to the issues it records.
struct ShowsDaemonLogs: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Suites get their scope too; only a test's own run collects logs.
        guard testCase != nil || !test.isSuite else { return try await function() }
        let logs = DaemonLogs()
        defer { logs.removeAll() }
        try await DaemonLogs.$current.withValue(logs) {
            try await IssueHandlingTrait.compactMapIssues { logs.annotate($0) }.provideScope(for: test, testCase: testCase, performing: function)
        }
    }
}

extension Trait where Self == ShowsDaemonLogs {
    static var showsDaemonLogs: ShowsDaemonLogs { ShowsDaemonLogs() }
}

/// A bundle folder written by a test: container apps with widget
/// extensions whose providers are small shell scripts.
struct BundleFolder {
    let url: URL
    var path: String { url.path }

    init() throws { url = try temporaryDirectory("bundles") }
    init(url: URL) { self.url = url }

    struct Widget {
        var name: String
        var script: String?
        var attributes: PlistDictionary = [:]
        var groups: [String] = []
        var busName: String?
    }

    /// Writes `<app>.app` with id `appID` and the given widgets, each
    /// `<appID>.<name>`.
    func addApp(_ appID: String, name: String? = nil, version: String = "1", widgets: [Widget]) throws {
        let app = url.appendingPathComponent("\(name ?? appID).app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        try write(
            [
                "CFBundleIdentifier": .string(appID), "CFBundleVersion": .string(version),
                "CFBundleShortVersionString": .string(version + ".0"),
            ], to: app.appendingPathComponent("Info.plist"))
        for widget in widgets {
            let appex = app.appendingPathComponent("PlugIns/\(widget.name).appex")
            try FileManager.default.createDirectory(at: appex, withIntermediateDirectories: true)
            var attributes = widget.attributes
            if let busName = widget.busName { attributes["TodayProviderBusName"] = .string(busName) }
            var info: PlistDictionary = [
                "CFBundleIdentifier": .string("\(appID).\(widget.name)"), "CFBundleDisplayName": .string(widget.name),
                "CFBundleVersion": .string(version), "CFBundleShortVersionString": .string(version + ".0"),
                "NSExtension": .dictionary([
                    "NSExtensionPointIdentifier": .string("com.apple.widget-extension"),
                    "NSExtensionPrincipalClass": .string("TodayViewController"),
                    "NSExtensionAttributes": .dictionary(attributes),
                ]),
            ]
            if let script = widget.script {
                info["CFBundleExecutable"] = .string("provider")
                let file = appex.appendingPathComponent("provider")
                try writeExecutable("#!/bin/sh\n" + script + "\n", to: file.path)
            }
            try write(info, to: appex.appendingPathComponent("Info.plist"))
            if !widget.groups.isEmpty {
                try write(
                    ["com.apple.security.application-groups": .array(widget.groups.map(PlistValue.string))],
                    to: appex.appendingPathComponent("Entitlements.plist"))
            }
        }
    }

    func write(_ dictionary: PlistDictionary, to file: URL) throws {
        try Plist.write(.dictionary(dictionary), format: .xml).write(to: file)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

extension Connection {
    @discardableResult
    func center(_ member: String, _ arguments: [Value] = [], timeout: Duration = .seconds(25)) async throws -> Message {
        try await call(Today.busName, path: Today.managerPath, interface: Today.center.name, member: MemberName(rawValue: member) ?? MemberName("Invalid"), arguments, timeout: timeout)
    }

    @discardableResult
    func widget(_ id: String, _ member: String, _ arguments: [Value] = []) async throws -> Message {
        try await call(Today.busName, path: Today.widgetPath(id), interface: Today.widget.name, member: MemberName(rawValue: member) ?? MemberName("Invalid"), arguments)
    }

    func property(_ id: String, _ name: String) async throws -> Value {
        let reply = try await call(
            Today.busName, path: Today.widgetPath(id), interface: .properties, member: MemberName("Get"),
            [.string(Today.widget.name.rawValue), .string(name)])
        return reply.body.first?.unwrapped ?? .string("")
    }
}

/// The service in this process, on a private bus of its own and owning its
/// name, for tests that inject what the daemon cannot take from outside
/// (a fixture /proc, another user id, a clock). `body` gets a client
/// connection and the bus.
func withService(
    bundles: String, home: URL, userID: UInt32 = getuid(), procRoot: String = "/proc",
    clock: ServiceClock = .system,
    _ body: (Connection, BusDaemon) async throws -> Void
) async throws {
    try await withService(bundles: bundles, home: home, userID: userID, procRoot: procRoot, clock: clock) { _, client, bus in
        try await body(client, bus)
    }
}

/// `withService`, with the service itself for tests that reach into it.
func withService(
    bundles: String, home: URL, userID: UInt32 = getuid(), procRoot: String = "/proc",
    clock: ServiceClock = .system,
    _ body: (TodayService, Connection, BusDaemon) async throws -> Void
) async throws {
    try await withPrivateBus { bus, serviceConnection in
        let directories = Directories(environment: TodayDaemon.environment(home: home), extraBundleFolders: [bundles])
        let service = TodayService(
            connection: serviceConnection, directories: directories, log: Logger(verbose: false), userID: userID,
            procRoot: procRoot, clock: clock)
        service.reload()
        try await service.start()
        _ = try await serviceConnection.requestName(Today.busName, flags: [.doNotQueue])
        let client = try Connection(address: bus.address)
        defer { client.close() }
        try await body(service, client, bus)
        await service.stop()
    }
}
