import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// todayd on a bus of the test's own, with an empty bundle folder and a
/// home that outlive it, so that it can be stopped or killed and started
/// again on what it kept.
final class RestartableTodayd {
    let bundles: BundleFolder
    let home: URL
    /// Where the bus finds the services it activates (`activating`).
    let services: URL
    let bus: BusDaemon

    /// With `activating`, the bus starts the services whose files are put
    /// in `services`.
    init(_ name: String, activating: Bool = false) async throws {
        bundles = try BundleFolder()
        home = try temporaryDirectory(name)
        services = home.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        bus = try await activating ? BusDaemon.start(serviceFolders: [services.path], environment: TodayDaemon.environment(home: home)) : BusDaemon.start()
    }

    /// A todayd on the bus, once it serves its own name and `name`.
    func start(serving name: BusName = Notifications.freedesktopName, verbose: Bool = true) async throws -> (TodayDaemon, Connection) {
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home, address: bus.address, verbose: verbose)
        let client = try await daemon.ready()
        _ = try await client.waitForOwner(of: name, timeout: .seconds(10))
        return (daemon, client)
    }

    /// Stops the bus and removes the folders; last, after every todayd.
    func remove() {
        bus.stop()
        bundles.remove()
        try? FileManager.default.removeItem(at: home)
    }
}

/// todayd as the notification server (SPEC section 14), through real
/// clients: notify-send, gdbus, and a GApplication written with python3-gi.
@Suite(.showsDaemonLogs) struct NotificationServerTests {
    static let notifySend = "/usr/bin/notify-send"

    /// The list, as ListNotifications gives it.
    static func list(_ client: Connection) async throws -> [[String: Value]] {
        let reply = try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.listNotifications)
        return (reply.body.first?.elements ?? []).map { VariantDictionary($0)?.dictionary ?? [:] }
    }

    static func environment(_ daemon: TodayDaemon) -> [String: String] {
        var environment = TodayDaemon.environment(home: daemon.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
        return environment
    }

    /// todayd with an empty bundle folder (and `home`, where given) once
    /// it serves org.freedesktop.Notifications; `stop` ends it all.
    static func serving(home: URL? = nil) async throws -> (daemon: TodayDaemon, client: Connection, stop: () -> Void) {
        let bundles = try BundleFolder()
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home)
        let stop = {
            daemon.stop()
            bundles.remove()
        }
        do {
            let client = try await daemon.ready()
            _ = try await client.waitForOwner(of: Notifications.freedesktopName, timeout: .seconds(10))
            return (daemon, client, { client.close(); stop() })
        } catch {
            stop()
            throw error
        }
    }

    /// Volume and brightness scripts: each of the four names dunst reads
    /// a stack tag by replaces the app's notification with that tag, in
    /// place; another app's keeps its own.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: notifySend), "needs notify-send (apt-get install libnotify-bin)"))
    func stackTagsByEveryNameDunstReads() async throws {
        let (daemon, client, stop) = try await Self.serving()
        defer { stop() }
        func send(_ app: String, _ hint: String, _ summary: String) async throws -> String {
            let sent = try await run(
                ["DBUS_SESSION_BUS_ADDRESS=\(daemon.address)", Self.notifySend, "--print-id", "--app-name", app, "--hint", "string:\(hint):level", summary])
            #expect(sent.status == 0, "\(sent.error)")
            return sent.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for hint in ["synchronous", "private-synchronous", "x-canonical-private-synchronous", "x-dunst-stack-tag"] {
            let app = "volume-\(hint)"
            let first = try await send(app, hint, "Volume 10%")
            #expect(try await send(app, hint, "Volume 20%") == first, "\(hint)")
            #expect(try await send("other-\(hint)", hint, "Brightness 50%") != first, "\(hint): another app's")
        }
        let summaries = try await Self.list(client).compactMap { $0["summary"]?.string }
        #expect(summaries.filter { $0.hasPrefix("Volume") } == Array(repeating: "Volume 20%", count: 4), "\(summaries)")
        let capabilities = try await run(
            ["gdbus", "call", "--address", daemon.address, "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
             "--method", "org.freedesktop.Notifications.GetCapabilities"])
        #expect(capabilities.output.contains("'x-dunst-stack-tag'") && capabilities.output.contains("'synchronous'"), "\(capabilities.output)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: notifySend), "needs notify-send (apt-get install libnotify-bin)"))
    func notifySendWaitsForTheActionChosenFromTheList() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        _ = try await client.waitForOwner(of: Notifications.freedesktopName, timeout: .seconds(10))
        let server = try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
            [.string(Today.center.name.rawValue), .string("NotificationServer")])
        #expect(server.body.first?.unwrapped == .string("serving"))

        let sender = try Background(
            Self.notifySend, ["--wait", "--print-id", "-a", "Mail", "-u", "critical", "-A", "open=Open", "-A", "later=Later", "New mail",
             #"From <b>Ana</b> & <a href="https://example.org/m/1">Bo</a> <img src="/etc/passwd" alt="[photo]"/><span color="red">!</span>"#],
            environment: Self.environment(daemon))
        defer { sender.stop() }
        #expect(try await eventually(5) { try await Self.list(client).count == 1 })
        let shown = try #require(try await Self.list(client).first)
        // The body's markup reduced to the subset (SPEC section 14).
        #expect(shown["summary"] == .string("New mail") && shown["body"] == .string(#"From <b>Ana</b> &amp; <a href="https://example.org/m/1">Bo</a> [photo]!"#) && shown["app-name"] == .string("Mail"))
        #expect(shown["urgency"] == .byte(2) && shown["open"] == .boolean(true) && shown["source"] == .string("freedesktop"))
        #expect(shown["actions"] == .array(.structure([.string, .string]), [.structure([.string("open"), .string("Open")]), .structure([.string("later"), .string("Later")])]))
        let id = try #require(shown["id"]?.uint64)

        // Chosen from the list: notify-send hears it (ActionInvoked) and ends.
        try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.invokeAction, UInt32(id), "open",
            VariantDictionary([("activation-token", .string("token-1"))]))
        let printed = try await read(sender.output) { $0.contains("open\n") }
        #expect(printed == "\(id)\nopen\n", "\(printed)")
        #expect(try await Self.list(client).isEmpty, "an action takes it out of the list")
    }

    /// Center.NotificationServer, as the property reads.
    static func server(_ client: Connection) async throws -> String {
        let reply = try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
            [.string(Today.center.name.rawValue), .string("NotificationServer")])
        return reply.body.first?.unwrapped.string ?? ""
    }

    @Test func anotherServerKeepsItsNamesAndTodaydTakesOverWhenItLeaves() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        // Another server (as dunst does: replaceable, no queue of its own).
        let other = try Connection(address: bus.address)
        defer { other.close() }
        #expect(try await other.requestName(Notifications.freedesktopName, flags: [.allowReplacement, .doNotQueue]) == .primaryOwner)
        let daemon = try TodayDaemon(bundles: [bundles.path], address: bus.address)
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        // todayd waits in the queue and says who serves.
        var state = ""
        _ = try await eventually(5) {
            state = try await Self.server(client)
            return state.hasPrefix("queued \(other.uniqueName)")
        }
        #expect(state.hasPrefix("queued \(other.uniqueName) ("), "\(state)")
        let owner = try await client.callBus(.getNameOwner, [.string(Notifications.freedesktopName.rawValue)]).value(String.self)
        #expect(owner == other.uniqueName, "the other server keeps its name")
        // Its widgets are served meanwhile, and gtk's name, which nobody had, is todayd's.
        #expect(try await client.center("ListWidgets").body.count == 1)
        #expect(try await client.waitForOwner(of: Notifications.gtkName, timeout: .seconds(5)) != other.uniqueName)
        // The other server exits: the bus hands the name to todayd.
        other.close()
        #expect(try await eventually(5) { try await Self.server(client) == "serving" })
    }

    /// The user's rules (notifications.plist's `Rules`, as dunst's rules
    /// and mako's criteria): what a notification from notify-send matches
    /// gets the rule's settings over its app's policy; a rule with a
    /// mistake is named in the log and left out, and it stays in the file,
    /// with the user's own keys, when todayd writes the settings.
    @Test func rulesSetWhatTheNotificationsTheyMatchDo() async throws {
        let home = try temporaryDirectory("notification-rules")
        defer { try? FileManager.default.removeItem(at: home) }
        let folder = home.path + "/.config/todayd"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = folder + "/notifications.plist"
        let rules: [PlistValue] = [
            .dictionary(["Match": .dictionary(["app-name": .string("Spotify")]), "list": .boolean(false)]),
            .dictionary(["Match": .dictionary(["summary": .string("*failed*")]), "urgency": .string("critical")]),
            .dictionary(["Match": .dictionary(["app-name": .string("Chat"), "category": .string("im.*")]), "timeout": .integer(300)]),
            .dictionary(["Match": .dictionary(["colour": .string("red")]), "banners": .boolean(false)]),
        ]
        try Plist.write(.dictionary(["Rules": .array(rules), "MyNote": .string("rules from my dunstrc")]), format: .xml).write(to: URL(fileURLWithPath: file))
        let (daemon, client, stop) = try await Self.serving(home: home)
        defer { stop() }
        let environment = Self.environment(daemon)
        func send(_ arguments: [String]) async throws -> UInt32 {
            let sent = try await run(["env"] + environment.map { "\($0.key)=\($0.value)" } + [Self.notifySend, "--print-id", "--expire-time=0"] + arguments)
            return try #require(UInt32(sent.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(sent)")
        }
        func entry(_ id: UInt32) async throws -> [String: Value]? { try await Self.list(client).first { $0["id"] == .uint32(id) } }

        #expect(daemon.logText.contains("Rules item 4: Match has no key 'colour'"), "\(daemon.logText)")
        let playing = try await send(["--app-name=Spotify", "Now playing", "Song 2"])
        let failed = try await send(["--app-name=CI", "Build failed", "main, 3 tests"])
        let passed = try await send(["--app-name=CI", "Build passed"])
        let message = try await send(["--app-name=Chat", "--category=im.received", "Ana", "Lunch?"])
        let other = try await send(["--app-name=Chat", "Ana is online"])
        #expect(try await entry(playing) == nil, "kept out of the list")
        #expect(try await entry(failed)?["urgency"] == .byte(2))
        #expect(try await entry(passed)?["urgency"] == .byte(1))
        #expect(try await eventually(5) { try await entry(message)?["open"] == .boolean(false) }, "the rule's 300 ms")
        #expect(try await entry(other)?["open"] == .boolean(true), "no category: as notify-send asked, never")

        // A change through D-Bus writes the settings; the rules and the
        // user's key stay as written, the one with a mistake too.
        _ = try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Set"),
            [.string(Notifications.today.name.rawValue), .string("DoNotDisturb"), .variant(.boolean(true))])
        let written = try Plist.read(contentsOf: file)
        #expect(written["DoNotDisturb"] == .boolean(true))
        #expect(written["Rules"] == .array(rules) && written["MyNote"] == .string("rules from my dunstrc"), "\(written)")
    }

    /// How many the list keeps is the user's (ListLimit, dunst's
    /// history_length, mako's max-history): lowered through todayctl, the
    /// oldest leave at once (NotificationClosed 4 where open); kept across
    /// a kill -9; lowered in the file while todayd was down, the list is
    /// cut at the next start.
    @Test func theListKeepsAsManyAsTheUserSays() async throws {
        let todayd = try await RestartableTodayd("list-limit")
        defer { todayd.remove() }
        var (daemon, client) = try await todayd.start()
        let closed = Locked<[String]>([])
        try await client.subscribe(MatchRule(interface: Notifications.freedesktop.name, member: Notifications.Freedesktop.notificationClosed.name)) { message in
            if let (id, reason) = try? message.values(UInt32.self, UInt32.self) { closed.withLock { $0.append("\(id):\(reason)") } }
        }
        var ids: [UInt32] = []
        for n in 1...5 {
            let sent = try await run(["env", "DBUS_SESSION_BUS_ADDRESS=\(todayd.bus.address)", Self.notifySend, "--print-id", "--expire-time=0", "Mail \(n)"])
            ids.append(try #require(UInt32(sent.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(sent)"))
        }
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "limit"]).output == "1000\n")
        let wrong = try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "limit", "0"])
        #expect(wrong.status == 2 && wrong.error.contains("write a number from 1 to 10000"), "\(wrong)")
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "limit", "3"]).status == 0)
        #expect(try await eventually(5) { closed.value == ["\(ids[1]):4", "\(ids[0]):4"] }, "\(closed.value)")
        #expect(try await Self.list(client).map { $0["id"] } == ids.suffix(3).reversed().map { .uint32($0) })
        #expect(try Plist.read(contentsOf: todayd.home.path + "/.config/todayd/notifications.plist")["ListLimit"] == .integer(3))

        client.close()
        kill(daemon.process.processIdentifier, SIGKILL)
        _ = daemon.stop(keepHome: true)
        let file = URL(fileURLWithPath: todayd.home.path + "/.config/todayd/notifications.plist")
        var settings = try Plist.read(contentsOf: file.path).dictionary ?? [:]
        settings["ListLimit"] = .integer(1)
        try Plist.write(.dictionary(settings), format: .xml).write(to: file)
        (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        #expect(try await Self.list(client).map { $0["id"] } == [.uint32(ids[4])])
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "limit"]).output == "1\n")
    }

    /// StackDuplicates in notifications.plist (dunst's stack_duplicates):
    /// notify-send's same notification again stacks on the open one, which
    /// closes (reason 1) and leaves the list; the count survives a kill.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: notifySend), "needs notify-send (apt-get install libnotify-bin)"))
    func duplicatesStackAsDunstsDo() async throws {
        let todayd = try await RestartableTodayd("stack-duplicates")
        defer { todayd.remove() }
        let folder = todayd.home.path + "/.config/todayd"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Plist.write(.dictionary(["StackDuplicates": .boolean(true)]), format: .xml).write(to: URL(fileURLWithPath: folder + "/notifications.plist"))
        var (daemon, client) = try await todayd.start()
        let closed = Locked<[String]>([])
        try await client.subscribe(MatchRule(interface: Notifications.freedesktop.name, member: Notifications.Freedesktop.notificationClosed.name)) { message in
            if let (id, reason) = try? message.values(UInt32.self, UInt32.self) { closed.withLock { $0.append("\(id):\(reason)") } }
        }
        func send(_ arguments: [String]) async throws -> UInt32 {
            let sent = try await run(["env", "DBUS_SESSION_BUS_ADDRESS=\(todayd.bus.address)", Self.notifySend, "--print-id", "--expire-time=0"] + arguments)
            return try #require(UInt32(sent.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(sent)")
        }
        let first = try await send(["--app-name=CI", "Build failed", "main, 3 tests"])
        let second = try await send(["--app-name=CI", "Build failed", "main, 3 tests"])
        let third = try await send(["--app-name=CI", "Build failed", "main, 3 tests"])
        let other = try await send(["--app-name=CI", "Build failed", "release, 1 test"])
        #expect(try await eventually(5) { closed.value == ["\(first):1", "\(second):1"] }, "\(closed.value)")
        var list = try await Self.list(client)
        #expect(list.map { $0["id"] } == [.uint32(other), .uint32(third)], "\(list)")
        #expect(list.map { $0["duplicates"] } == [nil, .uint32(2)], "\(list)")

        client.close()
        kill(daemon.process.processIdentifier, SIGKILL)
        _ = daemon.stop(keepHome: true)
        (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        list = try await Self.list(client)
        #expect(list.first { $0["id"] == .uint32(third) }?["duplicates"] == .uint32(2), "\(list)")
    }

    /// Where the banners show (BannerPosition, todayd's own property):
    /// set through the bus and by todayctl, kept in notifications.plist
    /// across a restart; a place that is not one is refused, saying which
    /// there are.
    @Test func theBannersPlaceIsTheUsersSetting() async throws {
        let todayd = try await RestartableTodayd("banner-position")
        defer { todayd.remove() }
        var (daemon, client) = try await todayd.start()
        let file = todayd.home.path + "/.config/todayd/notifications.plist"
        let object = ["--address=\(todayd.bus.address)", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Notifications"]
        func get() async throws -> Value? {
            try await client.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
                [.string(Notifications.today.name.rawValue), .string("BannerPosition")]
            ).body.first?.unwrapped
        }
        #expect(try await get() == .string("top-right"))
        #expect(try await run(["busctl", "set-property"] + object + ["BannerPosition", "s", "bottom-left"]).status == 0)
        #expect(try await get() == .string("bottom-left"))
        #expect(try Plist.read(contentsOf: file)["BannerPosition"] == .string("bottom-left"))
        let wrong = try await run(["busctl", "set-property"] + object + ["BannerPosition", "s", "middle"])
        #expect(wrong.status != 0 && wrong.error.contains("top-right, top-left, top, bottom-right, bottom-left or bottom"), "\(wrong.error)")
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "position"]).output == "bottom-left\n")
        let set = try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "position", "top"])
        #expect(set.status == 0, "\(set)")
        let bad = try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "position", "left"])
        #expect(bad.status == 2 && bad.error.contains("'left' is not a place for the banners"), "\(bad)")
        // How long without input before the banners wait (IdleThreshold), the same way.
        #expect(try await run(["busctl", "set-property"] + object + ["IdleThreshold", "u", "300"]).status == 0)
        #expect(try Plist.read(contentsOf: file)["IdleThreshold"] == .integer(300))
        let idle = try await run(["busctl", "set-property"] + object + ["IdleThreshold", "s", "300"])
        #expect(idle.status != 0 && idle.error.contains("property 'IdleThreshold' has type 'u', not 's'"), "\(idle.error)")
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "idle", "5m"]).status == 0)
        // How many at once (BannerLimit), the same way.
        #expect(try await run(["busctl", "set-property"] + object + ["BannerLimit", "u", "2"]).status == 0)
        #expect(try Plist.read(contentsOf: file)["BannerLimit"] == .integer(2))
        let four = try await run(["busctl", "set-property"] + object + ["BannerLimit", "u", "4"])
        #expect(four.status != 0 && four.error.contains("BannerLimit is how many banners show at once: 1, 2 or 3"), "\(four.error)")
        let zero = try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "at-once", "0"])
        #expect(zero.status == 2 && zero.error.contains("write 1, 2 or 3"), "\(zero)")
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "at-once", "1"]).status == 0)
        // Which output they show on (BannerOutput), the same way.
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "output", "DP-2"]).status == 0)
        #expect(try Plist.read(contentsOf: file)["BannerOutput"] == .string("DP-2"))
        let control = try await run(["busctl", "set-property"] + object + ["BannerOutput", "s", "DP\u{1}"])
        #expect(control.status != 0 && control.error.contains("BannerOutput is an output's name"), "\(control.error)")

        client.close()
        _ = daemon.stop(keepHome: true)
        (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        #expect(try await get() == .string("top"))
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "idle"]).output == "300\n")
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "output"]).output == "DP-2\n")
        #expect(try await NotificationCommandTests.todayctl(todayd.bus.address, ["notifications", "at-once"]).output == "1\n")
    }

    /// Do Not Disturb for a while (DoNotDisturbUntil, todayd's own
    /// property): on until its time, then off by itself, announced and
    /// kept in notifications.plist; a time that came while todayd was
    /// down (killed) turns it off at the start.
    @Test func doNotDisturbForAWhileEndsByItself() async throws {
        let todayd = try await RestartableTodayd("dnd-until")
        defer { todayd.remove() }
        var (daemon, client) = try await todayd.start()
        let file = todayd.home.path + "/.config/todayd/notifications.plist"
        let object = ["--address=\(todayd.bus.address)", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Notifications"]
        func get(_ name: String) async throws -> Value? {
            try await client.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
                [.string(Notifications.today.name.rawValue), .string(name)]
            ).body.first?.unwrapped
        }
        let announced = Locked<[[String: Value]]>([])
        try await client.subscribe(MatchRule(path: Today.managerPath, interface: .properties, member: MemberName("PropertiesChanged"))) { message in
            guard message.body.first == .string(Notifications.today.name.rawValue) else { return }
            announced.withLock { $0.append((message.body.dropFirst().first?.stringDictionary ?? [:]).mapValues(\.unwrapped)) }
        }
        func secondsFromNow(_ seconds: UInt64) -> UInt64 { (UInt64(Date().timeIntervalSince1970) + seconds) * 1_000_000 }

        // busctl, as a settings panel would: on for five seconds (room for
        // the looks below on a loaded machine).
        let until = secondsFromNow(5)
        #expect(try await run(["busctl", "set-property"] + object + ["DoNotDisturbUntil", "t", "\(until)"]).status == 0)
        #expect(try await get("DoNotDisturb") == .boolean(true))
        #expect(try await get("DoNotDisturbUntil") == .uint64(until))
        #expect(try Plist.read(contentsOf: file)["DoNotDisturbUntil"]?.date == Date(timeIntervalSince1970: Double(until / 1_000_000)))
        let past = try await run(["busctl", "set-property"] + object + ["DoNotDisturbUntil", "t", "1000000"])
        #expect(past.status != 0 && past.error.contains("later than now"), "\(past.error)")
        // Its time comes: off, said once, and kept.
        #expect(try await eventually(10) { try await get("DoNotDisturb") == .boolean(false) })
        #expect(Date().timeIntervalSince1970 >= Double(until / 1_000_000), "off before its time")
        #expect(try await get("DoNotDisturbUntil") == .uint64(0))
        #expect(try await eventually(2) { announced.value.last?["DoNotDisturb"] == .boolean(false) }, "\(announced.value)")
        #expect(try Plist.read(contentsOf: file)["DoNotDisturb"] == .boolean(false) && Plist.read(contentsOf: file)["DoNotDisturbUntil"] == nil)
        #expect(daemon.logText.contains("Do Not Disturb is off: the time it was on until has come"))

        // Turned on for good, the end set before goes.
        #expect(try await run(["busctl", "set-property"] + object + ["DoNotDisturbUntil", "t", "\(secondsFromNow(3600))"]).status == 0)
        #expect(try await run(["busctl", "set-property"] + object + ["DoNotDisturb", "b", "true"]).status == 0)
        #expect(try await get("DoNotDisturbUntil") == .uint64(0))
        #expect(try await get("DoNotDisturb") == .boolean(true))

        // Killed while on until a time that passes before it is back: off at the start.
        let soon = secondsFromNow(5)
        #expect(try await run(["busctl", "set-property"] + object + ["DoNotDisturbUntil", "t", "\(soon)"]).status == 0)
        client.close()
        kill(daemon.process.processIdentifier, SIGKILL)
        _ = daemon.stop(keepHome: true)
        #expect(try Plist.read(contentsOf: file)["DoNotDisturb"] == .boolean(true), "the end came before the kill")
        try await Task.sleep(for: .seconds(Double(soon / 1_000_000) + 1 - Date().timeIntervalSince1970))
        (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        #expect(try await eventually(5) { try await get("DoNotDisturb") == .boolean(false) })
        #expect(try Plist.read(contentsOf: file)["DoNotDisturb"] == .boolean(false))
    }

    @Test func doNotDisturbAndPoliciesAreTheUsersSettings() async throws {
        let todayd = try await RestartableTodayd("notification-settings")
        defer { todayd.remove() }
        let (bus, home) = (todayd.bus, todayd.home)
        var (daemon, client) = try await todayd.start()
        let object = ["--address=\(bus.address)", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Notifications"]
        // busctl sets them as any settings panel would.
        #expect(try await run(["busctl", "set-property"] + object + ["DoNotDisturb", "b", "true"]).status == 0)
        #expect(try await run(["busctl", "set-property"] + object + ["DoNotDisturbSchedule", "(ss)", "22:00", "07:00"]).status == 0)
        let bad = try await run(["busctl", "set-property"] + object + ["DoNotDisturbSchedule", "(ss)", "late", "07:00"])
        #expect(bad.status != 0 && bad.error.contains("HH:MM"), "\(bad.error)")
        let policy = try await run(
            ["gdbus", "call", "--address", bus.address, "--dest", "io.github.todayd.Today1", "--object-path", "/io/github/todayd/Today1",
             "--method", "io.github.todayd.Today1.Notifications.SetAppPolicy", "org.example.Chat", "{'list': <false>, 'urgency': <byte 0>}"])
        #expect(policy.status == 0, "\(policy.error)")
        let wrong = try await run(
            ["gdbus", "call", "--address", bus.address, "--dest", "io.github.todayd.Today1", "--object-path", "/io/github/todayd/Today1",
             "--method", "io.github.todayd.Today1.Notifications.SetAppPolicy", "org.example.Chat", "{'colour': <'red'>}"])
        #expect(wrong.status != 0 && wrong.error.contains("no policy key 'colour'"), "\(wrong.error)")
        let file = home.path + "/.config/todayd/notifications.plist"
        let kept = try Plist.read(contentsOf: file)
        #expect(kept["DoNotDisturb"] == .boolean(true) && kept["DoNotDisturbFrom"] == .string("22:00"))
        #expect(kept["AppPolicies"]?["org.example.Chat"]?["list"] == .boolean(false))

        // Read back after a restart.
        daemon.stop(keepHome: true)
        client.close()
        (daemon, client) = try await todayd.start()
        defer { daemon.stop(keepHome: true) }
        defer { client.close() }
        let all = try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("GetAll"), [.string(Notifications.today.name.rawValue)])
        let values = try all.value(VariantDictionary.self).dictionary
        #expect(values["DoNotDisturb"] == .boolean(true))
        #expect(values["DoNotDisturbSchedule"] == .structure([.string("22:00"), .string("07:00")]))
        let chat = values["AppPolicies"]?.dictionaryEntries.first { $0.key == .string("org.example.Chat") }?.value
        #expect(chat.flatMap(VariantDictionary.init)?.dictionary["list"] == .boolean(false), "\(values)")

        // The file edited by hand (or a dotfile manager) is followed: read
        // again at once, announced with PropertiesChanged.
        let announced = Locked<[String: Value]>([:])
        try await client.subscribe(MatchRule(path: Today.managerPath, interface: .properties, member: MemberName("PropertiesChanged"))) { message in
            guard message.body.first == .string(Notifications.today.name.rawValue) else { return }
            for (key, value) in message.body.dropFirst().first?.stringDictionary ?? [:] { announced.withLock { $0[key] = value.unwrapped } }
        }
        func doNotDisturb() async throws -> Value? {
            try await client.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
                [.string(Notifications.today.name.rawValue), .string("DoNotDisturb")]
            ).body.first?.unwrapped
        }
        let edited = file + ".edit"
        try Plist.write(.dictionary(["DoNotDisturb": .boolean(false), "DoNotDisturbFrom": .string("23:00"), "DoNotDisturbTo": .string("06:30")]), format: .xml)
            .write(to: URL(fileURLWithPath: edited))
        #expect(rename(edited, file) == 0)
        #expect(try await eventually(5) { announced.value["DoNotDisturb"] == .boolean(false) }, "\(announced.value)")
        #expect(announced.value["DoNotDisturbSchedule"] == .structure([.string("23:00"), .string("06:30")]))
        #expect(try await doNotDisturb() == .boolean(false))
        // A file half written, or broken, leaves the settings as they were.
        try Data("<?xml version=\"1.0\"?><plist><dict><key>DoNotDi".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try await eventually(5) { daemon.logText.contains("notifications.plist does not read (") && daemon.logText.contains("the settings stay as they were: fix it, or remove it for the defaults") }, "\(daemon.logText)")
        #expect(try await doNotDisturb() == .boolean(false))
        // Removed and written again at once (git checkout, stow): Do Not
        // Disturb stays on throughout.
        try Plist.write(.dictionary(["DoNotDisturb": .boolean(true)]), format: .xml).write(to: URL(fileURLWithPath: file))
        #expect(try await eventually(5) { try await doNotDisturb() == .boolean(true) })
        // An attempt where a loaded machine took half the grace or more to
        // put the file back does not count, and another is made.
        let settings = try Data(contentsOf: URL(fileURLWithPath: file))
        var timely = 0
        for _ in 0..<5 where timely == 0 {
            // On a thread of its own, so that the steps keep their times
            // while the tests around take the pool.
            let gone = try await offThePool {
                let gone = ContinuousClock.now
                unlink(file)
                Thread.sleep(forTimeInterval: 0.15)
                return gone
            }
            let during = try await doNotDisturb()
            try settings.write(to: URL(fileURLWithPath: file))
            let away = ContinuousClock.now - gone
            try await Task.sleep(until: gone + WidgetService.removalGrace + .milliseconds(300))
            #expect(try await eventually(5) { try await doNotDisturb() == .boolean(true) })
            guard away < WidgetService.removalGrace / 2 else { continue }
            timely += 1
            #expect(during == .boolean(true), "the file away for \(away)")
        }
        #expect(timely == 1, "the file was never back within half the grace")
        #expect(announced.value["DoNotDisturb"] == .boolean(true))
        // Removed for good, the defaults come back.
        try FileManager.default.removeItem(atPath: file)
        #expect(try await eventually(5) { try await doNotDisturb() == .boolean(false) })
        #expect(try await eventually(5) { announced.value["DoNotDisturbSchedule"] == .structure([.string(""), .string("")]) })
    }

    @Test func whatIsAcknowledgedSurvivesAKillAndIdsGoOn() async throws {
        let todayd = try await RestartableTodayd("notifications")
        defer { todayd.remove() }
        var (daemon, client) = try await todayd.start()
        typealias F = Notifications.Freedesktop
        func notify(_ summary: String, timeout: Int32 = 0, hints: [(String, Value)] = []) async throws -> UInt32 {
            try await client.call(
                Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.notify, "Chat",
                UInt32(0), "", summary, "body of \(summary)", ["reply", "Reply"], VariantDictionary(hints), timeout
            ).value(UInt32.self)
        }
        var ids: [UInt32] = []
        for n in 1...5 {
            ids.append(try await notify("message \(n)", hints: [("x-count", .uint16(UInt16(n)))]))
            // The user looks at the list after the third.
            if n == 3 { try await client.call(Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.markSeen) }
        }
        // Dismissed, it is gone; its id is not given again.
        try await client.call(Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.dismiss, ids[4])
        // kill -9: whatever was acknowledged must be there after.
        kill(daemon.process.processIdentifier, SIGKILL)
        await exited(daemon.process)
        client.close()

        (daemon, client) = try await todayd.start()
        defer { daemon.stop(keepHome: true) }
        defer { client.close() }
        let kept = try await Self.list(client)
        #expect(kept.map { $0["summary"]?.string ?? "" } == (1...4).reversed().map { "message \($0)" })
        #expect(kept.map { $0["id"]?.uint64 ?? 0 } == ids.prefix(4).reversed().map(UInt64.init))
        // Hints as sent, type and all.
        #expect(kept.last?["hints"].flatMap(VariantDictionary.init)?.dictionary["x-count"] == .uint16(1))
        // What came after the user looked is still unseen: message 4.
        #expect(try await NotificationCommandTests.property(client, "Unseen") == .uint32(1))
        let next = try await notify("after the restart")
        // After a kill, ids go on past the block reserved before it (after
        // a clean stop, from the last one given): never one given before.
        #expect(next > ids[4] && next <= ids[4] + NotificationService.idBlock + 1, "ids go on: \(next) after \(ids)")

        // Expiry: the time runs out, NotificationClosed(id, 1), still in the list, closed.
        let closed = Locked<[[Value]]>([])
        try await client.subscribe(MatchRule(interface: Notifications.freedesktop.name, member: F.notificationClosed.name)) { message in
            closed.withLock { $0.append(message.body) }
        }
        let short = try await notify("short", timeout: 300)
        #expect(try await eventually(5) { closed.value.contains([.uint32(short), .uint32(1)]) }, "\(closed.value)")
        #expect(try await Self.list(client).first { $0["id"] == .uint32(short) }?["open"] == .boolean(false))
        #expect(closed.value.filter { $0.first == .uint32(short) }.count == 1, "closed once")
        // CloseNotification: reason 3, and out of the list.
        try await client.call(Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.closeNotification, next)
        #expect(try await eventually(5) { closed.value.contains([.uint32(next), .uint32(3)]) })
        #expect(try await Self.list(client).allSatisfy { $0["id"] != .uint32(next) })

        // After a clean stop, ids go on from the last one given.
        let last = try await notify("before a clean stop")
        daemon.stop(keepHome: true)
        client.close()
        (daemon, client) = try await todayd.start()
        #expect(try await notify("after a clean stop") == last + 1)
    }

    /// A burst of Notify: Count is right at every answer (a Get reads it),
    /// and its PropertiesChanged goes with the burst's NotificationsChanged,
    /// a few for the burst rather than one a notification, the last with
    /// the count the list ends with, each just before its NotificationsChanged.
    @Test func aBurstAnnouncesItsCountsWithItsChanges() async throws {
        let todayd = try await RestartableTodayd("notification-burst")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let signals = Locked<[(member: String, count: UInt32?)]>([])
        try await client.subscribe(MatchRule(path: Today.managerPath, interface: .properties, member: .propertiesChanged)) { message in
            guard message.body.first == .string(Notifications.today.name.rawValue),
                let count = message.body.dropFirst().first?.stringDictionary?["Count"]?.unwrapped.uint64
            else { return }
            signals.withLock { $0.append(("PropertiesChanged", UInt32(count))) }
        }
        try await client.subscribe(MatchRule(interface: Notifications.today.name, member: Notifications.Center.notificationsChanged.name)) { _ in
            signals.withLock { $0.append(("NotificationsChanged", nil)) }
        }
        typealias F = Notifications.Freedesktop
        // From four apps: each stays within its rate (100 a second).
        let burst = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<burst {
                if n >= 32 { try await group.next() }
                group.addTask {
                    _ = try await client.call(
                        Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.notify,
                        "Sync \(n % 4)", UInt32(0), "", "mail \(n)", "", [String](), VariantDictionary([]), Int32(0))
                }
            }
            try await group.waitForAll()
        }
        let count = try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
            [.string(Notifications.today.name.rawValue), .string("Count")]
        ).body.first?.unwrapped
        #expect(count == .uint32(UInt32(burst)))
        #expect(try await eventually(5) { signals.value.last { $0.count != nil }?.count == UInt32(burst) }, "\(signals.value)")
        try await Task.sleep(for: .milliseconds(50))
        let seen = signals.value
        let counts = seen.compactMap(\.count)
        #expect(counts.count < burst / 2, "\(counts.count) PropertiesChanged for \(burst) notifications")
        #expect(counts == counts.sorted(), "the counts only grow: \(counts)")
        // Each announcement of the counts is followed by its NotificationsChanged.
        for (index, signal) in seen.enumerated() where signal.count != nil {
            #expect(seen.dropFirst(index + 1).first?.member == "NotificationsChanged", "\(seen)")
        }
    }

    /// image-data is kept as a PNG file, given as image-path: GdkPixbuf
    /// (python3-gi) reads it back as the picture sent, scaled to 256 at
    /// most; it outlives a kill -9, and goes with its notification.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3-gi"))
    func picturesAreKeptAsPNGFiles() async throws {
        let todayd = try await RestartableTodayd("notification-pictures")
        defer { todayd.remove() }
        var (daemon, client) = try await todayd.start()
        typealias F = Notifications.Freedesktop
        // 512×256 RGB, the left half red and the right half blue, rows
        // padded to 1540 bytes.
        var pixels = [UInt8](repeating: 0, count: 255 * 1540 + 512 * 3)
        for y in 0..<256 {
            for x in 0..<512 { pixels[y * 1540 + x * 3 + (x < 256 ? 0 : 2)] = 200 }
        }
        let image = Value.structure([.int32(512), .int32(256), .int32(1540), .boolean(false), .int32(8), .int32(3), .bytes(Data(pixels))])
        let id = try await client.call(
            Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.notify, "Photos",
            UInt32(0), "", "A picture", "", [String](), VariantDictionary([("image-data", image)]), Int32(0)
        ).value(UInt32.self)
        kill(daemon.process.processIdentifier, SIGKILL)
        await exited(daemon.process)
        client.close()
        (daemon, client) = try await todayd.start()
        defer { daemon.stop(keepHome: true) }
        defer { client.close() }

        let listed = try #require(try await Self.list(client).first)
        #expect(listed["image-data"] == nil, "the pixels are not in the list")
        let path = try #require(listed["image-path"]?.string)
        #expect(path.hasPrefix(todayd.home.path + "/state/todayd/notifications/images/") && path.hasSuffix(".png"), "\(path)")
        let read = try await run([
            "/usr/bin/python3", "-c",
            """
            import sys, gi
            gi.require_version("GdkPixbuf", "2.0")
            from gi.repository import GdkPixbuf
            p = GdkPixbuf.Pixbuf.new_from_file(sys.argv[1])
            d = p.get_pixels()
            def at(x, y): return tuple(d[y * p.get_rowstride() + x * p.get_n_channels():][:3])
            print(p.get_width(), p.get_height(), p.get_has_alpha(), at(10, 10), at(250, 120))
            """,
            path,
        ])
        #expect(read.output.trimmingCharacters(in: .whitespacesAndNewlines) == "256 128 False (200, 0, 0) (0, 0, 200)", "\(read.output) \(read.error)")

        try await client.call(Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.dismiss, id)
        #expect(!FileManager.default.fileExists(atPath: path), "the picture goes with its notification")
    }

    @Test func badImageDataIsRefusedSayingWhy() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        _ = try await client.waitForOwner(of: Notifications.freedesktopName, timeout: .seconds(10))
        let result = try await run(
            ["gdbus", "call", "--address", daemon.address, "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
             "--method", "org.freedesktop.Notifications.Notify", "App", "0", "", "Picture", "", "[]",
             "{'image-data': <(2, 2, 8, true, 8, 4, [byte 1, 2, 3])>}", "--", "-1"])
        #expect(result.status != 0)
        #expect(result.error.contains("InvalidArgs") && result.error.contains("data is 3 bytes; 2×2 with rowstride 8 and 4 channels needs exactly 16"), "\(result.error)")
        let capabilities = try await run(
            ["gdbus", "call", "--address", daemon.address, "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
             "--method", "org.freedesktop.Notifications.GetCapabilities"])
        #expect(capabilities.output.contains("'persistence'") && capabilities.output.contains("'inline-reply'"), "\(capabilities.output)")
    }

    /// A GApplication (python3-gi), `org.example.Notes`: run with the file
    /// to write to, it sends a GNotification with an `app.open-note` button
    /// (target `n42`) and exits, or, given `stay` after the file, stays
    /// for the action; the action writes `open-note n42` to the file and
    /// ends it, after the activation token that came with it.
    static func writeNotesApp(to app: URL) throws {
        try """
            import sys
            import gi
            gi.require_version("Gio", "2.0")
            from gi.repository import Gio, GLib

            class Notes(Gio.Application):
                def __init__(self):
                    super().__init__(application_id="org.example.Notes", flags=Gio.ApplicationFlags.HANDLES_COMMAND_LINE)
                    action = Gio.SimpleAction.new("open-note", GLib.VariantType.new("s"))
                    action.connect("activate", self.open_note)
                    self.add_action(action)

                def open_note(self, action, parameter):
                    with open(sys.argv[1], "a") as out:
                        out.write("open-note %s\\n" % parameter.get_string())
                    self.quit()

                def do_command_line(self, command_line):
                    notification = Gio.Notification.new("Meeting notes")
                    notification.set_body("Notes of Monday's meeting are ready")
                    notification.add_button_with_target("Open", "app.open-note", GLib.Variant("s", "n42"))
                    self.send_notification("notes-ready", notification)
                    if "stay" in command_line.get_arguments():
                        self.hold()
                    return 0

                def do_before_emit(self, platform_data):
                    Gio.Application.do_before_emit(self, platform_data)
                    for key in ("activation-token", "desktop-startup-id"):
                        value = platform_data.lookup_value(key, None)
                        if value is not None:
                            with open(sys.argv[1], "a") as out:
                                out.write("%s %s\\n" % (key, value.get_string()))

                def do_activate(self):
                    pass

            Notes().run(sys.argv[:1] + sys.argv[2:])
            """.write(to: app, atomically: true, encoding: .utf8)
    }

    /// A GApplication (python3-gi) with an action sends a notification
    /// through GNotification and exits; after a todayd restart, the action
    /// chosen from the list starts the app through D-Bus activation, and
    /// the app receives the action and its target.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs python3-gi"))
    func aGApplicationsActionReachesTheRestartedApp() async throws {
        let todayd = try await RestartableTodayd("gapplication", activating: true)
        defer { todayd.remove() }
        let (home, services) = (todayd.home, todayd.services)
        let received = home.appendingPathComponent("received")
        let app = home.appendingPathComponent("notes.py")
        try Self.writeNotesApp(to: app)
        try "[D-BUS Service]\nName=org.example.Notes\nExec=/usr/bin/python3 \(app.path) \(received.path) --gapplication-service\n".write(
            to: services.appendingPathComponent("org.example.Notes.service"), atomically: true, encoding: .utf8)
        let bus = todayd.bus
        var (daemon, client) = try await todayd.start(serving: Notifications.gtkName)

        // The app sends its notification and exits.
        var environment = TodayDaemon.environment(home: home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        let sent = try await run(["env", "-i"] + environment.map { "\($0.key)=\($0.value)" } + ["/usr/bin/python3", app.path, received.path])
        #expect(sent.status == 0, "\(sent.error)")
        #expect(try await eventually(5) { try await Self.list(client).count == 1 })
        let posted = try #require(try await Self.list(client).first)
        #expect(posted["source"] == .string("gtk") && posted["app-id"] == .string("org.example.Notes") && posted["summary"] == .string("Meeting notes"))
        let id = try #require(posted["id"]?.uint64)

        // todayd restarts; the list still has it, and its action still works.
        daemon.stop(keepHome: true)
        client.close()
        (daemon, client) = try await todayd.start(serving: Notifications.gtkName)
        defer { daemon.stop(keepHome: true) }
        defer { client.close() }
        #expect(try await Self.list(client).map { $0["id"]?.uint64 } == [id])
        try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.invokeAction, UInt32(id),
            "app.open-note", VariantDictionary([("activation-token", .string("click-77"))]))
        // With the click's activation token, so that it comes to the front.
        let expected = "activation-token click-77\ndesktop-startup-id click-77\nopen-note n42\n"
        #expect(try await eventually(20) { (try? String(contentsOf: received, encoding: .utf8)) == expected },
                "the app got: \((try? String(contentsOf: received, encoding: .utf8)) ?? "nothing")")
    }
}

/// kill -9 while several apps send notifications: after each restart every
/// notification todayd acknowledged is in the list (but for the oldest,
/// which the list's capacity takes out once it is full), and no id is
/// given twice.
@Suite(.showsDaemonLogs) struct NotificationCrashTests {
    static let rounds = Int(ProcessInfo.processInfo.environment["TODAY_TORTURE_ROUNDS"] ?? "") ?? 3

    /// The acknowledged notifications `listed` lacks that it should have:
    /// all of them while the list is below its capacity (SPEC: 1,000);
    /// once it is full, of the newest acknowledged ones, as many as it
    /// holds less some room for those posted at a kill whose answer was
    /// cut (one a sender) and for posts whose ids came out of order.
    static func lost(_ acknowledged: Set<UInt32>, listed: Set<UInt32>) -> [UInt32] {
        let capacity = NotificationBook().capacity
        guard listed.count >= capacity else { return acknowledged.subtracting(listed).sorted() }
        return acknowledged.sorted().suffix(capacity - 100).filter { !listed.contains($0) }
    }

    @Test func killedDuringAFloodLosesNothingAcknowledged() async throws {
        let todayd = try await RestartableTodayd("notification-crash")
        defer { todayd.remove() }
        let bus = todayd.bus
        var acknowledged: Set<UInt32> = []
        for round in 1...Self.rounds {
            let (daemon, client) = try await todayd.start(verbose: false)
            // Every acknowledged notification of the rounds before is there.
            let listed = Set(try await NotificationServerTests.list(client).compactMap { $0["id"]?.uint64 }.map { UInt32($0) })
            #expect(Self.lost(acknowledged, listed: listed).isEmpty, "round \(round): lost \(Self.lost(acknowledged, listed: listed))")
            // Four apps at once, until the kill.
            let got = Locked<[UInt32]>([])
            let refusals = Locked<[String: Int]>([:])
            let senders = (0..<4).map { index in
                Task {
                    guard let connection = try? Connection(address: bus.address) else { return }
                    defer { connection.close() }
                    for n in 0..<10_000 {
                        guard !Task.isCancelled else { return }
                        do {
                            let id = try await connection.call(
                                Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name,
                                Notifications.Freedesktop.notify, "app\(index)", UInt32(0), "", "round \(round) #\(n)", "", [String](), VariantDictionary([]),
                                Int32(0)
                            ).value(UInt32.self)
                            got.withLock { $0.append(id) }
                        } catch {
                            // Refused (LimitsExceeded), slow under load, or cut by the
                            // kill: not acknowledged; the next one is tried.
                            refusals.withLock { $0[(error as? DBusError)?.name.rawValue ?? "\(error)", default: 0] += 1 }
                            if !connection.isOpen { return }
                        }
                    }
                }
            }
            #expect(try await eventually(30) { got.value.count >= 20 + round * 10 }, "round \(round): \(got.value.count) acknowledged; \(refusals.value)")
            kill(daemon.process.processIdentifier, SIGKILL)
            await exited(daemon.process)
            for sender in senders { sender.cancel() }
            for sender in senders { await sender.value }
            client.close()
            let ids = got.value
            #expect(Set(ids).count == ids.count, "round \(round): an id was given twice")
            #expect(acknowledged.isDisjoint(with: ids), "round \(round): an id of an earlier round was given again")
            acknowledged.formUnion(ids)
        }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop(keepHome: true) }
        defer { client.close() }
        let listed = Set(try await NotificationServerTests.list(client).compactMap { $0["id"]?.uint64 }.map { UInt32($0) })
        #expect(Self.lost(acknowledged, listed: listed).isEmpty, "lost \(Self.lost(acknowledged, listed: listed))")
        let least = (1...Self.rounds).map { 20 + $0 * 10 }.reduce(0, +)
        #expect(acknowledged.count >= least, "\(acknowledged.count) acknowledged")
    }
}
