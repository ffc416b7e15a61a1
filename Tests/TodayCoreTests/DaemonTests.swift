import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The real todayd binary on a private bus, driven by busctl and by our client.
@Suite(.showsDaemonLogs) struct DaemonTests {
    static let todayd = Paths.todayd
    static let examples = Paths.examples
    typealias Daemon = TodayDaemon

    func busctl(_ daemon: Daemon, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--address=\(daemon.address)"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Waits until the daemon owns its name; fails the test, saying so, otherwise.
    func waitForName(_ daemon: Daemon) async throws {
        try await daemon.ready().close()
    }

    @Test func servesTheExampleWidgets() async throws {
        let daemon = try Daemon(bundles: [Self.examples])
        try await waitForName(daemon)
        let list = try busctl(daemon, ["call", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Center", "ListWidgets"])
        #expect(list == "ao 3 \"/io/github/todayd/Today1/widgets/tech_2eagostini_2eapp_2eLatestPost\" \"/io/github/todayd/Today1/widgets/com_2ee_2dlegion_2eTraffic_2eWidget\" \"/io/github/todayd/Today1/widgets/org_2eexample_2eTram_2eDepartures\"\n")
        let traffic = "/io/github/todayd/Today1/widgets/com_2ee_2dlegion_2eTraffic_2eWidget"
        #expect(try busctl(daemon, ["get-property", "io.github.todayd.Today1", traffic, "io.github.todayd.Today1.Widget", "PreferredHeight"]) == "d 350\n")
        #expect(try busctl(daemon, ["get-property", "io.github.todayd.Today1", traffic, "io.github.todayd.Today1.Widget", "Groups"]) == "as 1 \"group.traffic\"\n")
        #expect(try busctl(daemon, ["get-property", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Center", "Version"]) == "s \"\(Today.version)\"\n")

        // A second daemon on the same bus refuses to start.
        let second = Process()
        second.executableURL = URL(fileURLWithPath: Self.todayd)
        second.arguments = ["--address", daemon.address]
        let err = Pipe()
        second.standardError = err
        try second.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        await exited(second)
        #expect(second.terminationStatus == 1)
        #expect(message.contains("already taken"), "\(message)")

        #expect(daemon.stop() == 0)
    }

    @Test func reloadFollowsTheBundleFolder() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bundles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let daemon = try Daemon(bundles: [folder.path])
        try await waitForName(daemon)
        let connection = try Connection(address: daemon.address)
        defer { connection.close() }
        let added = Locked<[String]>([])
        try await connection.subscribe(MatchRule(path: Today.managerPath, interface: .objectManager)) { message in
            added.value.append("\(message.member ?? ""):\(message.body.first?.string ?? "")")
        }
        try FileManager.default.copyItem(atPath: Self.examples + "/Traffic.app", toPath: folder.path + "/Traffic.app")
        try await connection.call(Today.busName, path: Today.managerPath, interface: Today.center.name, member: MemberName("Reload"))
        let reply = try await connection.call(Today.busName, path: Today.managerPath, interface: Today.center.name, member: MemberName("ListWidgets"))
        #expect(reply.body == [.objectPaths([Today.widgetPath("com.e-legion.Traffic.Widget")])])
        try FileManager.default.removeItem(atPath: folder.path + "/Traffic.app")
        kill(daemon.process.processIdentifier, SIGHUP)
        _ = try await eventually { added.value.count >= 4 }
        let widget = Today.widgetPath("com.e-legion.Traffic.Widget").rawValue
        let group = Today.groupPath("group.traffic").rawValue
        #expect(added.value == ["InterfacesAdded:\(group)", "InterfacesAdded:\(widget)", "InterfacesRemoved:\(group)", "InterfacesRemoved:\(widget)"])
        #expect(daemon.stop() == 0)
    }

    @Test func aBrokenBundleIsSkippedWithAReason() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(atPath: folder.path + "/Bad.app", withIntermediateDirectories: true)
        try Data("<plist><dict><key>CFBundleIdentifier</key><string>bad id!</string></dict></plist>".utf8)
            .write(to: folder.appendingPathComponent("Bad.app/Info.plist"))
        try FileManager.default.copyItem(atPath: Self.examples + "/Traffic.app", toPath: folder.path + "/Traffic.app")
        let catalog = BundleCatalog.scan([folder.path])
        #expect(catalog.widgets.map(\.bundleIdentifier.rawValue) == ["com.e-legion.Traffic.Widget"])
        #expect(catalog.problems.count == 1)
        #expect(catalog.problems.first?.key == "CFBundleIdentifier")
        #expect(catalog.problems.first?.file.hasSuffix("Bad.app/Info.plist") == true)
    }
}

/// What survives a restart, what busctl shows, and providers on the bus.
@Suite(.showsDaemonLogs) struct DaemonLifecycleTests {
    @Test func aRestartKeepsSnapshotsAndFlags() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Keep", widgets: [.init(name: "W", script: WidgetUpdateTests.newData)])
        let id = "org.example.Keep.W"
        let first = try TodayDaemon(bundles: [bundles.path])
        do {
            let connection = try await first.ready()
            defer { connection.close() }
            try await connection.widget(id, "PerformUpdate")
            try await connection.center("RegisterApp", [.string("org.example.Keep")])
            try await connection.center("SetHasContent", [.boolean(false), .string(id)])
        }
        #expect(first.stop(keepHome: true) == 0)
        // Make the provider fail: what the panel sees must come from the cache.
        try writeExecutable("#!/bin/sh\nexit 1\n", to: bundles.url.appendingPathComponent("org.example.Keep.app/PlugIns/W.appex/provider").path)

        let second = try TodayDaemon(bundles: [bundles.path], home: first.home)
        defer { second.stop() }
        let connection = try await second.ready()
        defer { connection.close() }
        #expect(try await connection.property(id, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("Fresh"))
        #expect(try await connection.property(id, "HasContent") == .boolean(false))
        #expect(try await connection.property(id, "LastResult") == .string("new-data"))
        #expect(try await connection.property(id, "LastUpdated").uint64 ?? 0 > 0)
        // The files are plain XML property lists.
        let snapshotFile = first.home.path + "/cache/todayd/snapshots/\(id).plist"
        #expect(try await run(["plutil", "-lint", snapshotFile]).status == 0)
        var info = stat()
        #expect(stat(first.home.path + "/state/todayd/widgets/\(id).plist", &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    /// Started without standard input and error, todayd puts /dev/null
    /// there before it opens anything, so that no file of its own (the
    /// bus, dispatch's epoll) takes their numbers and gets log lines.
    @Test func closedStandardDescriptorsAreReopened() async throws {
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        let home = try temporaryDirectory("todayd")
        defer { try? FileManager.default.removeItem(at: home) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exec \"$0\" --verbose --address \"$1\" <&- 2>&-", Paths.todayd, bus.address]
        process.environment = TodayDaemon.environment(home: home)
        try process.run()
        defer {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        let connection = try Connection(address: bus.address)
        defer { connection.close() }
        _ = try await connection.waitForOwner(of: Today.busName, timeout: .seconds(10))
        for fd in [0, 2] {
            let target = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/fd/\(fd)")
            #expect(target == "/dev/null", "descriptor \(fd) is \(target)")
        }
        #expect(try await connection.center("ListWidgets").body.count == 1)
    }

    /// todayd's main thread sleeps in sigsuspend while it serves; a
    /// provider's exit must not wake it (nor dispatch's signal thread).
    @Test func aProviderExitWakesNoSignalWaiter() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // The sleep lets the thread that started the provider return from
        // posix_spawn, which blocks every signal while it runs, before the
        // provider ends.
        try bundles.addApp("org.example.Quiet", widgets: [.init(name: "W", script: "sleep 0.05\necho '{\"result\": \"no-data\"}'")])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        let pid = daemon.process.processIdentifier
        func mainThreadSwitches() -> Int { voluntarySwitches(task: "/proc/\(pid)/task/\(pid)") }
        let before = mainThreadSwitches()
        for _ in 0..<10 {
            #expect(try await connection.widget("org.example.Quiet.W", "PerformUpdate").body == [.string("no-data")])
        }
        let after = mainThreadSwitches()
        #expect(before >= 0 && after >= 0 && after - before < 5, "the main thread woke \(after - before) times during 10 provider runs")
    }

    @Test func aKilledDaemonTakesItsPrivateBusWithIt() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        connection.close()
        let pid = daemon.process.processIdentifier
        let children = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ")
        }
        let bus = try #require(children.compactMap { pid_t($0) }.first, "todayd --private-bus has its bus as a child")
        let socket = try #require(BusDaemon.socketPath(of: daemon.address))
        #expect(FileManager.default.fileExists(atPath: socket))
        kill(pid, SIGKILL)
        await exited(daemon.process)
        // The bus gets SIGTERM as todayd ends, and removes its socket.
        func running() -> Bool {
            let stat = (try? String(contentsOfFile: "/proc/\(bus)/stat", encoding: .utf8)) ?? ""
            let state = stat.split(separator: ")").last?.split(separator: " ").first
            return !stat.isEmpty && state != "Z"
        }
        _ = try await eventually { !running() && !FileManager.default.fileExists(atPath: socket) }
        #expect(!running(), "the bus (\(bus)) outlived todayd")
        #expect(!FileManager.default.fileExists(atPath: socket), "\(socket) is left")
    }

    @Test func busctlShowsTheObjects() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        connection.close()
        let tree = try await run(["busctl", "--address=\(daemon.address)", "tree", "--list", Today.busName.rawValue])
        #expect(tree.output.split(separator: "\n").sorted() == [
            "/", "/io", "/io/github", "/io/github/todayd", "/io/github/todayd/Today1", "/io/github/todayd/Today1/groups",
            "/io/github/todayd/Today1/groups/group_2eagostini_2etech_2esharedData", "/io/github/todayd/Today1/groups/group_2etraffic",
            "/io/github/todayd/Today1/groups/group_2etram", "/io/github/todayd/Today1/widgets",
            "/io/github/todayd/Today1/widgets/com_2ee_2dlegion_2eTraffic_2eWidget",
            "/io/github/todayd/Today1/widgets/org_2eexample_2eTram_2eDepartures",
            "/io/github/todayd/Today1/widgets/tech_2eagostini_2eapp_2eLatestPost",
            // The notification server's objects (SPEC section 14), on the same connection.
            "/org", "/org/freedesktop", "/org/freedesktop/Notifications", "/org/gtk", "/org/gtk/Notifications",
        ].sorted())
        let widget = try await run([
            "busctl", "--address=\(daemon.address)", "introspect", Today.busName.rawValue,
            Today.widgetPath("tech.agostini.app.LatestPost").rawValue, Today.widget.name.rawValue,
        ])
        let lines = widget.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(lines.contains(where: { $0.starts(with: [".PerformUpdate", "method", "-", "s"]) }), "\(widget.output)")
        #expect(lines.contains(where: { $0.starts(with: [".Updated", "signal", "s", "-"]) }))
        #expect(lines.contains(where: { $0.starts(with: [".UpdateInterval", "property", "u", "900", "emits-change"]) }))
        #expect(lines.contains(where: { $0.starts(with: [".BundleIdentifier", "property", "s", "\"tech.agostini.app.LatestPost\"", "const"]) }))
        for name in ["Snapshot", "LastResult", "LastFailure", "LastUpdated", "NextScheduledUpdate", "ScheduledUpdatesLeftToday", "HasContent", "MarginInsets", "PreferredHeight", "DisplayName", "IconPath", "Groups", "ContainerBundleIdentifier"] {
            #expect(lines.contains(where: { $0.first == "." + name }), "\(name)")
        }
        let center = try await run([
            "busctl", "--address=\(daemon.address)", "introspect", Today.busName.rawValue, Today.managerPath.rawValue,
        ])
        for member in ["ListWidgets", "SetHasContent", "PerformUpdate", "UpdateAll", "RegisterApp", "Reload", "Version", "BundleDirectories", "GetManagedObjects"] {
            #expect(center.output.contains("." + member + " "), "\(member)")
        }
    }

    @Test func aProviderOnTheBus() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Bus",
            widgets: [
                .init(name: "Live", busName: "org.example.Bus.Provider"),
                .init(name: "Dated", attributes: ["TodayTimeline": .boolean(true)], busName: "org.example.Bus.Provider"),
                .init(name: "Slow", attributes: ["TodayUpdateTimeout": .integer(1)], busName: "org.example.Bus.Slow"),
                .init(name: "Absent", busName: "org.example.Bus.Absent"),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }

        // Two providers served from this process.
        let provider = try Connection(address: daemon.address)
        defer { provider.close() }
        let previous = Locked<[Value]>([])
        // The slow provider answers only once the test is done with it,
        // long after its 1 s limit.
        let (slowAnswer, answerSlowly) = AsyncStream<Void>.makeStream()
        defer { answerSlowly.finish() }
        provider.objects.export(
            Today.providerPath,
            [
                ExportedInterface(
                    Today.provider,
                    methods: [
                        "PerformUpdate": { call in
                            previous.withLock { $0.append(call.arguments[0]) }
                            if call.message.destination == "org.example.Bus.Slow" {
                                for await _ in slowAnswer {}
                            }
                            return [.string("new-data"), .vardict([("title", .string("from the bus")), ("count", .int32(3))])]
                        },
                        "PerformAction": { call in
                            [.string("new-data"), .vardict([("title", .string("pressed \(call.arguments[0].string ?? "")")), ("count", .int32(4))])]
                        },
                        // Kinds without parameters or families are never asked for an instance.
                        "PerformUpdateIn": { _ in throw DBusError.failed("not configurable: PerformUpdate is called") },
                        "GetTimelineIn": { _ in throw DBusError.failed("not configurable: GetTimeline is called") },
                        "PerformActionIn": { _ in throw DBusError.failed("not configurable: PerformAction is called") },
                        // Widgets with TodayTimeline are asked for dated entries.
                        "GetTimeline": { _ in
                            let now = UInt64(Date().timeIntervalSince1970) * 1_000_000
                            let entry = { (date: UInt64, title: String, relevance: Double) in
                                Value.vardict([("date", .uint64(date)), ("snapshot", .vardict([("title", .string(title))])), ("relevance", .double(relevance))])
                            }
                            return [
                                .string("new-data"),
                                .array(.dictionary(key: .string, value: .variant), [entry(now + 3_600_000_000, "later", 0.5), entry(now - 10_000_000, "now", 2)]),
                                .vardict([("kind", .string("after")), ("after", .uint64(now + 7_200_000_000))]),
                            ]
                        },
                    ])
            ])
        _ = try await provider.requestName(BusName("org.example.Bus.Provider"), flags: [.doNotQueue])
        _ = try await provider.requestName(BusName("org.example.Bus.Slow"), flags: [.doNotQueue])

        #expect(try await connection.widget("org.example.Bus.Live", "PerformUpdate").body == [.string("new-data")])
        let snapshot = try await connection.property("org.example.Bus.Live", "Snapshot").stringDictionary
        #expect(snapshot?["title"]?.unwrapped == .string("from the bus"))
        #expect(snapshot?["count"]?.unwrapped == .int64(3))
        // The second run receives the first one's snapshot.
        try await connection.widget("org.example.Bus.Live", "PerformUpdate")
        #expect(previous.value.last?.stringDictionary?["title"]?.unwrapped == .string("from the bus"))

        // GetTimeline: the entry whose date has come is shown, the other waits.
        let dated = "org.example.Bus.Dated"
        #expect(try await connection.widget(dated, "PerformUpdate").body == [.string("new-data")])
        #expect(try await connection.property(dated, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("now"))
        #expect(try await connection.property(dated, "Relevance") == .double(2))
        #expect(try await connection.property(dated, "ReloadPolicy") == .string("after"))
        let next = try await connection.property(dated, "NextEntryDate").uint64 ?? 0
        #expect(next > UInt64(Date().timeIntervalSince1970 + 3500) * 1_000_000)
        let entries = try await connection.widget(dated, "GetTimeline").body.first
        #expect(entries?.type.signature == "a(ta{sv}d)")
        #expect(entries?.elements?.count == 2)

        let start = ContinuousClock.now
        #expect(try await connection.widget("org.example.Bus.Slow", "PerformUpdate").body == [.string("failed")])
        #expect(ContinuousClock.now - start < .seconds(3))
        #expect(try await connection.property("org.example.Bus.Slow", "LastFailure") == .string("timeout"))

        #expect(try await connection.widget("org.example.Bus.Absent", "PerformUpdate").body == [.string("failed")])
        #expect(try await connection.property("org.example.Bus.Absent", "LastFailure") == .string("no-provider"))
    }
}
