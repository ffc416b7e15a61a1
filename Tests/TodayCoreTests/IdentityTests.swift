import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Who may call what (SPEC section 7), against the real daemon and, where a
/// fixture /proc is needed, against the service in this process.
@Suite(.showsDaemonLogs) struct IdentityTests {
    /// A provider's call can arrive before todayd has recorded the pid it
    /// just started; while a start is under way the lookup waits for it.
    @Test func aProviderCallingBeforeItsPidIsRecordedIsKnown() async throws {
        let providers = RunningProviders()
        let identities = Identities(providers: providers)
        providers.starting()
        async let found = identities.provider(startedAs: getpid())
        // The absence of a record: the lookup waits for the start before the pid comes.
        try await Task.sleep(for: .milliseconds(30))
        providers.started(getpid(), "org.example.App.W")
        #expect(await found == "org.example.App.W")
        // Once it is gone, and nothing is being started, the process is
        // no provider's.
        providers.remove(getpid())
        #expect(!providers.isStarting)
        #expect(await identities.provider(startedAs: getpid()) == nil)
    }

    static func bundles() throws -> BundleFolder {
        let bundles = try BundleFolder()
        try bundles.addApp("org.example.Mail", widgets: [.init(name: "Inbox", script: WidgetUpdateTests.newData)])
        try bundles.addApp("org.example.Other", widgets: [.init(name: "W", script: WidgetUpdateTests.newData)])
        return bundles
    }

    static func errorName(_ body: () async throws -> Void) async -> String {
        do {
            try await body()
            return ""
        } catch let error as DBusError {
            return error.name.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func setHasContentNeedsTheWidgetOrItsApp() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let watcher = try await daemon.ready()
        defer { watcher.close() }
        let widget = "org.example.Mail.Inbox"
        let hide: [Value] = [.boolean(false), .string(widget)]

        // gdbus monitor sees the PropertiesChanged that follows.
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        monitor.arguments = ["monitor", "--address", daemon.address, "--dest", Today.busName.rawValue, "--object-path", Today.widgetPath(widget).rawValue]
        let monitorOutput = Pipe()
        monitor.standardOutput = monitorOutput
        monitor.standardError = FileHandle.nullDevice
        try monitor.run()
        // gdbus subscribes, then asks who owns the name: once it says, the
        // bus has its rule.
        var seen = try await read(monitorOutput) { $0.contains("is owned by") }
        #expect(seen.contains("is owned by"), "gdbus monitor started: \(seen)")

        let anonymous = try Connection(address: daemon.address)
        defer { anonymous.close() }
        let notRegistered = await Self.errorName { try await anonymous.center("SetHasContent", hide) }
        #expect(notRegistered == "io.github.todayd.Today1.Error.NotRegistered")

        let foreign = try Connection(address: daemon.address)
        defer { foreign.close() }
        try await foreign.center("RegisterApp", [.string("org.example.Other")])
        #expect(await Self.errorName { try await foreign.center("SetHasContent", hide) } == "io.github.todayd.Today1.Error.NotEntitled")
        #expect(await Self.errorName { try await foreign.center("RegisterApp", [.string("org.example.Mail")]) } == "io.github.todayd.Today1.Error.AlreadyRegistered")
        #expect(await Self.errorName { try await anonymous.center("RegisterApp", [.string("org.example.Unknown")]) } == "io.github.todayd.Today1.Error.NoSuchBundle")
        #expect(await Self.errorName { try await anonymous.center("RegisterApp", [.string("not a bundle id")]) } == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(await Self.errorName { try await anonymous.center("SetHasContent", [.boolean(false), .string("org.example.Nope")]) } == "io.github.todayd.Today1.Error.NoSuchWidget")
        #expect(try await watcher.property(widget, "HasContent") == .boolean(true))

        let app = try Connection(address: daemon.address)
        defer { app.close() }
        try await app.center("RegisterApp", [.string("org.example.Mail")])
        try await app.center("SetHasContent", hide)
        #expect(try await watcher.property(widget, "HasContent") == .boolean(false))

        let extensionItself = try Connection(address: daemon.address)
        defer { extensionItself.close() }
        try await extensionItself.center("RegisterApp", [.string(widget)])
        try await extensionItself.center("SetHasContent", [.boolean(true), .string(widget)])
        #expect(try await watcher.property(widget, "HasContent") == .boolean(true))

        // A widget without content is left out of UpdateAll.
        try await app.center("SetHasContent", hide)
        let all = try await watcher.center("UpdateAll")
        #expect(all.body.first?.stringDictionary?.keys.sorted() == ["org.example.Other.W"])

        seen += try await read(monitorOutput) { $0.contains("{'HasContent': <true>") }
        kill(monitor.processIdentifier, SIGKILL)
        await exited(monitor)
        #expect(seen.contains("org.freedesktop.DBus.Properties.PropertiesChanged ('io.github.todayd.Today1.Widget', {'HasContent': <false>"), "\(seen)")
        #expect(seen.contains("{'HasContent': <true>"), "\(seen)")
    }

    @Test func aProviderIsItsWidgetWhileItRuns() async throws {
        // The provider calls SetHasContent about itself over the bus, with
        // no RegisterApp, through a child process (dbus-send).
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Self",
            widgets: [
                .init(name: "W", script: """
                    if dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply --dest=io.github.todayd.Today1 /io/github/todayd/Today1 \
                        io.github.todayd.Today1.Center.SetHasContent boolean:false string:"$TODAY_WIDGET_ID" > /dev/null 2>&1
                    then echo '{"result": "no-data"}'; else echo '{"result": "failed"}'; fi
                    """)
            ])
        try bundles.addApp(
            "org.example.Foreign",
            widgets: [
                .init(name: "W", script: """
                    if dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply --dest=io.github.todayd.Today1 /io/github/todayd/Today1 \
                        io.github.todayd.Today1.Center.SetHasContent boolean:false string:org.example.Self.W 2>&1 | grep -q NotEntitled
                    then echo '{"result": "no-data"}'; else echo '{"result": "failed"}'; fi
                    """)
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        #expect(try await connection.widget("org.example.Foreign.W", "PerformUpdate").body == [.string("no-data")])
        #expect(try await connection.widget("org.example.Self.W", "PerformUpdate").body == [.string("no-data")])
        #expect(try await connection.property("org.example.Self.W", "HasContent") == .boolean(false))
    }

    @Test func aFlatpakAppIsItsAppID() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("flatpak")
        defer { try? FileManager.default.removeItem(at: home) }
        // A fixture /proc where this process lives in a Flatpak sandbox.
        let proc = home.appendingPathComponent("proc")
        let root = proc.appendingPathComponent("\(getpid())/root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("[Application]\nname=org.example.Mail\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n".utf8)
            .write(to: root.appendingPathComponent(".flatpak-info"))
        try await withService(bundles: bundles.path, home: home, procRoot: proc.path) { client, _ in
            let hide: [Value] = [.boolean(false), .string("org.example.Mail.Inbox")]
            #expect(await Self.errorName { try await client.center("RegisterApp", [.string("org.example.Other")]) } == "org.freedesktop.DBus.Error.AccessDenied")
            try await client.center("SetHasContent", hide)
            #expect(try await client.property("org.example.Mail.Inbox", "HasContent") == .boolean(false))
            #expect(await Self.errorName { try await client.center("SetHasContent", [.boolean(false), .string("org.example.Other.W")]) } == "io.github.todayd.Today1.Error.NotEntitled")
        }
    }

    @Test func anotherUserIsRefused() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("foreign")
        defer { try? FileManager.default.removeItem(at: home) }
        try await withService(bundles: bundles.path, home: home, userID: getuid() &+ 1) { client, _ in
            for call in [
                { _ = try await client.center("ListWidgets") },
                { _ = try await client.property("org.example.Mail.Inbox", "Snapshot") },
                { _ = try await client.widget("org.example.Mail.Inbox", "PerformUpdate") },
            ] as [@Sendable () async throws -> Void] {
                #expect(await Self.errorName(call) == "org.freedesktop.DBus.Error.AccessDenied")
            }
        }
    }
}
