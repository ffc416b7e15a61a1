import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The banners (SPEC section 15): `today-banners`, started by the
/// bus at todayd's first banner as its service file says, under Xvfb;
/// what it shows read from its `--describe` lines, its buttons pressed
/// through GTK.
@Suite(.showsDaemonLogs, .enabled(if: Paths.displaySuites, "run on its own by make test (TODAY_TEST_DISPLAY=1)")) struct BannerTests {
    static let banners = Paths.root.appendingPathComponent(".build/debug/today-banners").path

    /// Makes `launcher` the program the bus starts for the banners' name.
    static func install(_ launcher: URL, for todayd: RestartableTodayd) throws {
        chmod(launcher.path, 0o755)
        try "[D-BUS Service]\nName=\(Notifications.bannersName.rawValue)\nExec=\(launcher.path)\n".write(
            to: todayd.services.appendingPathComponent("\(Notifications.bannersName.rawValue).service"), atomically: true, encoding: .utf8)
    }

    /// A todayd whose bus starts the banners on the X display `screen`,
    /// saying what they show (`--describe`) in the file returned.
    static func onDisplay(_ screen: OwnDisplay, _ name: String) async throws -> (todayd: RestartableTodayd, out: URL) {
        let todayd = try await RestartableTodayd(name, activating: true)
        let out = todayd.home.appendingPathComponent("banners.out")
        let launcher = todayd.home.appendingPathComponent("banners")
        try """
            #!/bin/sh
            exec env DISPLAY=\(screen.name) NO_AT_BRIDGE=1 XDG_DATA_DIRS=/usr/local/share:/usr/share \(Self.banners) --describe > \(out.path) 2>&1
            """.write(to: launcher, atomically: true, encoding: .utf8)
        try install(launcher, for: todayd)
        return (todayd, out)
    }

    /// Whether notification `id` is open, as todayd says; nil where it is
    /// not in the list.
    static func isOpen(_ client: Connection, _ id: String) async throws -> Bool? {
        let reply = try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.getNotification, UInt32(id) ?? 0)
        return reply.body.first?.stringDictionary?["open"]?.bool
    }

    /// A todayd whose bus starts the banners under `sway`, saying what
    /// they show (`--describe`) in the file returned.
    static func underSway(_ sway: HeadlessSway, _ name: String) async throws -> (todayd: RestartableTodayd, out: URL) {
        let todayd = try await RestartableTodayd(name, activating: true)
        let out = todayd.home.appendingPathComponent("banners.out")
        let launcher = todayd.home.appendingPathComponent("banners")
        try """
            #!/bin/sh
            exec env \(sway.environment.joined(separator: " ")) NO_AT_BRIDGE=1 XDG_DATA_DIRS=/usr/local/share:/usr/share \(Self.banners) --describe > \(out.path) 2>&1
            """.write(to: launcher, atomically: true, encoding: .utf8)
        try install(launcher, for: todayd)
        return (todayd, out)
    }

    /// `todayctl notify` with `arguments`, never expiring; its id.
    static func notify(_ address: String, _ arguments: [String]) async throws -> String {
        let sent = try await NotificationCommandTests.todayctl(address, ["notify"] + arguments + ["--timeout", "0"])
        #expect(sent.status == 0, "\(sent)")
        return sent.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The cards made and filled from the banners' state `from` to their
    /// state `to`, from the `rows:` lines between (a change may come as
    /// more than one redraw: the list's change and the banner's own call
    /// reach the banners in either order).
    static func cards(_ lines: [String], from: String, to: String) -> (made: Int, filled: Int) {
        guard let end = lines.firstIndex(of: to), let start = lines[..<end].lastIndex(of: from) else { return (-1, -1) }
        var (made, filled) = (0, 0)
        for line in lines[start..<end] where line.hasPrefix("rows: ") {
            let words = line.split(separator: " ")
            guard words.count == 7, let m = Int(words[1]), let f = Int(words[3]) else { continue }
            made += m
            filled += f
        }
        return (made, filled)
    }

    /// The lines a file has so far.
    static func lines(_ url: URL) -> [String] {
        ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"), "needs Xvfb (apt-get install xvfb)"))
    func theBusStartsThemAndTheyFollowTheList() async throws {
        let todayd = try await RestartableTodayd("banners", activating: true)
        defer { todayd.remove() }
        let out = todayd.home.appendingPathComponent("banners.out")
        let picture = todayd.home.appendingPathComponent("banners.png")
        // The service file, as `make install` writes it, with an X display
        // of the test's own, the system's data folders (the test's todayd has its
        // own, where GTK would find neither its icons nor the MIME
        // database), and what the test reads.
        let screen = try await OwnDisplay()
        defer { screen.stop() }
        let launcher = todayd.home.appendingPathComponent("banners")
        try """
            #!/bin/sh
            exec env DISPLAY=\(screen.name) NO_AT_BRIDGE=1 XDG_DATA_DIRS=/usr/local/share:/usr/share \(Self.banners) --describe --screenshot \(picture.path) --press yes --reply 'on my way' > \(out.path) 2>&1
            """.write(to: launcher, atomically: true, encoding: .utf8)
        try Self.install(launcher, for: todayd)
        let (daemon, client) = try await todayd.start()
        let address = todayd.bus.address
        func notify(_ arguments: [String]) async throws -> String { try await Self.notify(address, arguments) }
        func shows(_ state: String) async throws -> Bool { try await eventually(20) { Self.lines(out).contains(state) } }
        let heard = Locked<[String]>([])
        for signal in [Notifications.Freedesktop.actionInvoked.name, Notifications.Freedesktop.notificationReplied.name, Notifications.Freedesktop.activationToken.name] {
            let said = signal == Notifications.Freedesktop.activationToken.name ? "token " : ""
            try await client.subscribe(MatchRule(interface: Notifications.freedesktop.name, member: signal)) { message in
                if let (id, text) = try? message.values(UInt32.self, String.self) { heard.withLock { $0.append("\(said)\(id) \(text)") } }
            }
        }

        // The first banner starts the program; notify-send's notification shows.
        let sent = try await run(["env", "DBUS_SESSION_BUS_ADDRESS=\(address)", "notify-send", "--print-id", "--expire-time=0", "--app-name=Mail", "First", "notify-send sent it"])
        let first = sent.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sent.status == 0 && UInt32(first) != nil, "\(sent)")
        #expect(try await shows("banners: \(first) queued: "), "\(Self.lines(out))")
        // At the screen's top-right corner (1024 wide, no window manager to
        // honour a gravity), as wide as a banner is.
        #expect(Self.lines(out).contains("placed: 632 12 380"), "\(Self.lines(out))")

        // Do Not Disturb holds a banner back (the list has it); a critical
        // one still shows, and its button, pressed, reaches the sender and
        // takes the banner away.
        _ = try await NotificationCommandTests.todayctl(address, ["notifications", "dnd", "on"])
        let quiet = try await notify(["Quiet", "--app", "Chat"])
        let fire = try await notify(["Fire", "--urgency", "critical", "--action", "yes=Evacuate", "--app", "Alarm"])
        #expect(try await shows("pressed yes on \(fire)"), "\(Self.lines(out))")
        #expect(try await eventually(10) { heard.value.contains("\(fire) yes") }, "\(heard.value)")
        // With the press, the banner's activation token (on X11 a startup
        // notification id), sent before the action as the specification asks.
        let token = heard.value.firstIndex { $0.hasPrefix("token \(fire) ") && $0.count > "token \(fire) ".count }
        #expect(token.map { $0 < (heard.value.firstIndex(of: "\(fire) yes") ?? 0) } == true, "\(heard.value)")
        #expect(try await shows("banners: \(first) queued: "))
        #expect(!Self.lines(out).contains { $0.hasPrefix("banners: \(quiet)") || $0.contains(" \(quiet) ") }, "\(Self.lines(out))")
        let listed = try await NotificationServerTests.list(client).compactMap { $0["id"]?.uint64 }
        #expect(listed.contains(UInt64(quiet) ?? 0), "the list has what the banners held back: \(listed)")
        _ = try await NotificationCommandTests.todayctl(address, ["notifications", "dnd", "off"])

        // Three at once, newest on top; the fourth waits its turn.
        let second = try await notify([
            "Second", "A body long enough to need three or four lines where it wraps, which must not make the banner any wider than the others",
            "--app", "Files", "--progress", "40", "--action", "cancel=Cancel",
        ])
        let third = try await notify(["Third", "--app", "Messages"])
        let fourth = try await notify(["Fourth", "--app", "Mail"])
        #expect(try await shows("banners: \(third) \(second) \(first) queued: \(fourth)"), "\(Self.lines(out))")
        #expect(try await shows("picture: 3 banners"))
        #expect(Self.lines(out).last { $0.hasPrefix("placed: ") } == "placed: 632 12 380", "\(Self.lines(out))")
        // Replaced (a progress that moves): it comes to the top, its card
        // filled again in place; the other two stay as they are.
        _ = try await notify(["Second", "Further along", "--app", "Files", "--progress", "80", "--action", "cancel=Cancel", "--replace", second])
        #expect(try await shows("banners: \(second) \(third) \(first) queued: \(fourth)"), "\(Self.lines(out))")
        let replacing = Self.cards(Self.lines(out), from: "banners: \(third) \(second) \(first) queued: \(fourth)", to: "banners: \(second) \(third) \(first) queued: \(fourth)")
        #expect(replacing == (0, 1), "\(Self.lines(out))")
        // Dismissed from the list: its banner goes, and the waiting one
        // shows in the card the dismissed one leaves; the two that stay
        // keep theirs.
        _ = try await NotificationCommandTests.todayctl(address, ["notifications", "dismiss", first])
        #expect(try await shows("banners: \(fourth) \(second) \(third) queued: "), "\(Self.lines(out))")
        let dismissing = Self.cards(Self.lines(out), from: "banners: \(second) \(third) \(first) queued: \(fourth)", to: "banners: \(fourth) \(second) \(third) queued: ")
        #expect(dismissing == (0, 1), "\(Self.lines(out))")
        // The reply field: typed into and sent, it reaches the sender.
        _ = try await NotificationCommandTests.todayctl(address, ["notifications", "clear"])
        #expect(try await shows("banners:  queued: "), "\(Self.lines(out))")
        let question = try await notify(["Coming?", "--app", "Chat", "--action", "inline-reply=Reply"])
        #expect(try await shows("replied on \(question)"), "\(Self.lines(out))")
        #expect(try await eventually(10) { heard.value.contains("\(question) on my way") }, "\(heard.value)")

        // todayd restarts: the banners go with it, and show again after.
        let kept = try await notify(["Before the restart", "--app", "Mail"])
        #expect(try await shows("banners: \(kept) queued: "), "\(Self.lines(out))")
        daemon.stop(keepHome: true)
        client.close()
        let cleared = Self.lines(out).count
        #expect(try await eventually(10) { Self.lines(out).dropFirst(cleared - 1).contains("banners:  queued: ") }, "\(Self.lines(out))")
        let (again, againClient) = try await todayd.start()
        defer { again.stop() }
        defer { againClient.close() }
        let after = try await notify(["After the restart", "--app", "Mail"])
        #expect(try await shows("banners: \(after) queued: "), "\(Self.lines(out))")
        let png = try Data(contentsOf: picture)
        #expect(png.count > 1000 && png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    /// A banner under the pointer stays, as GNOME Shell keeps one: the
    /// banners hold expiry while the pointer is on them (HoldExpiry), and
    /// once it leaves, a notification whose time came meanwhile closes
    /// three seconds later. The pointer is moved by python3-gi (GDK's warp)
    /// on an X server of the test's own.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"), "needs Xvfb (apt-get install xvfb)"))
    func aBannerUnderThePointerStays() async throws {
        let screen = try await OwnDisplay()
        defer { screen.stop() }
        let (todayd, out) = try await Self.onDisplay(screen, "banners-hover")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        func pointer(to x: Int, _ y: Int) async throws {
            let script = """
                import gi, sys
                gi.require_version("Gdk", "3.0")
                from gi.repository import Gdk
                display = Gdk.Display.get_default()
                display.get_default_seat().get_pointer().warp(display.get_default_screen(), int(sys.argv[1]), int(sys.argv[2]))
                display.flush()
                """
            let moved = try await run(["env", "DISPLAY=\(screen.name)", "/usr/bin/python3", "-c", script, "\(x)", "\(y)"])
            #expect(moved.status == 0, "\(moved)")
        }
        func isOpen(_ id: String) async throws -> Bool? { try await Self.isOpen(client, id) }
        try await pointer(to: 5, 700)
        let sent = try await NotificationCommandTests.todayctl(address, ["notify", "Long read", "A body worth reading", "--app", "Mail", "--timeout", "2000"])
        let id = sent.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sent.status == 0, "\(sent)")
        var placed: [Int] = []
        #expect(try await eventually(20) {
            placed = Self.lines(out).last { $0.hasPrefix("placed: ") }.map { $0.split(separator: " ").dropFirst().compactMap { Int($0) } } ?? []
            return placed.count == 3
        }, "\(Self.lines(out))")
        guard placed.count == 3 else { return }

        try await pointer(to: placed[0] + placed[2] / 2, placed[1] + 20)
        #expect(try await eventually(10) { Self.lines(out).contains("expiry: held") }, "\(Self.lines(out))")
        try await Task.sleep(for: .seconds(3))
        #expect(try await isOpen(id) == true, "its time came under the pointer")

        try await pointer(to: 5, 700)
        #expect(try await eventually(10) { Self.lines(out).contains("expiry: let go") }, "\(Self.lines(out))")
        let letGo = Date()
        #expect(try await eventually(10) { try await isOpen(id) == false })
        #expect(Date().timeIntervalSince(letGo) > 2, "closed before its three seconds")

        // A banner that shows up under a pointer at rest is not held: it
        // goes in its time.
        #expect(try await eventually(10) { Self.lines(out).last { $0.hasPrefix("banners: ") } == "banners:  queued: " }, "\(Self.lines(out))")
        try await pointer(to: placed[0] + placed[2] / 2, placed[1] + 20)
        try await Task.sleep(for: .milliseconds(300))
        let resting = try await NotificationCommandTests.todayctl(address, ["notify", "Short", "--app", "Mail", "--timeout", "1500"])
        let restingID = resting.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await eventually(10) { Self.lines(out).contains("banners: \(restingID) queued: ") }, "\(Self.lines(out))")
        #expect(try await eventually(6) { try await isOpen(restingID) == false }, "held under a pointer that did not move")
        #expect(Self.lines(out).filter { $0 == "expiry: held" }.count == 1, "\(Self.lines(out))")
    }

    /// The banners show on the output the user names (BannerOutput, as
    /// mako's `output` and dunst's `monitor`): where the compositor puts
    /// them while it is not connected, on it once it is (a monitor plugged
    /// in), and where the compositor puts them again for the default.
    /// Seen in grim's shots of a headless sway's two outputs.
    @Test(.enabled(if: HeadlessSway.available, "needs sway, grim and setpriv (apt-get install sway grim util-linux)"))
    func underSwayTheBannersShowOnTheUsersOutput() async throws {
        let sway = try await HeadlessSway()
        defer { sway.stop() }
        let (todayd, out) = try await Self.underSway(sway, "banners-output")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "output"]).output == "default\n")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "output", "HEADLESS-2"]).status == 0)
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "output"]).output == "HEADLESS-2\n")
        let mail = try await Self.notify(address, ["Film night", "Popcorn is ready", "--app", "Mail"])
        #expect(try await eventually(20) { Self.lines(out).contains("banners: \(mail) queued: ") }, "\(Self.lines(out))")
        #expect(Self.lines(out).contains("output: HEADLESS-2 (not connected)"), "\(Self.lines(out))")
        func covered(_ columns: Range<Int>) async throws -> Double {
            1 - (try await sway.share(of: HeadlessSway.background, columns: columns, rows: 0..<600))
        }
        #expect(try await eventually(10) { try await covered(400..<800) > 0.02 }, "not on the first output")

        try await sway.addOutput()
        var seen: [Double] = []
        #expect(try await eventually(10) {
            seen = [try await covered(0..<800), try await covered(800..<1600)]
            return seen[0] == 0 && seen[1] > 0.02
        }, "\(seen), \(Self.lines(out))")

        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "output", "default"]).status == 0)
        #expect(try await eventually(10) {
            seen = [try await covered(0..<800), try await covered(800..<1600)]
            return (seen[0] > 0.02) != (seen[1] > 0.02)
        }, "on one output: \(seen)")
    }

    /// Fewer banners at once where the user says (BannerLimit, as mako's
    /// max-visible): one, the later waiting its turn; two, both show,
    /// newest on top; one again, the older waits, first in line.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"), "needs Xvfb (apt-get install xvfb)"))
    func fewerBannersAtOnceWhereTheUserSays() async throws {
        let screen = try await OwnDisplay()
        defer { screen.stop() }
        let (todayd, out) = try await Self.onDisplay(screen, "banners-at-once")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "at-once", "1"]).status == 0)
        let first = try await Self.notify(address, ["First", "--app", "Mail"])
        let second = try await Self.notify(address, ["Second", "--app", "Chat"])
        #expect(try await eventually(20) { Self.lines(out).contains("banners: \(first) queued: \(second)") }, "\(Self.lines(out))")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "at-once", "2"]).status == 0)
        #expect(try await eventually(10) { Self.lines(out).contains("banners: \(second) \(first) queued: ") }, "\(Self.lines(out))")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "at-once", "1"]).status == 0)
        #expect(try await eventually(10) { Self.lines(out).last { $0.hasPrefix("banners: ") } == "banners: \(second) queued: \(first)" }, "\(Self.lines(out))")
    }

    /// While the user is away (no input for IdleThreshold seconds, as
    /// dunst's idle_threshold), the banners hold expiry: what shows waits
    /// for their return, and goes three seconds after it. Under X11 from
    /// the SYNC extension's IDLETIME, on an X server of the test's own;
    /// the return is a pointer's move through XTest, as a mouse's.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"), "needs Xvfb (apt-get install xvfb)"))
    func whileTheUserIsAwayTheBannersWait() async throws {
        let screen = try await OwnDisplay()
        defer { screen.stop() }
        let (todayd, out) = try await Self.onDisplay(screen, "banners-away")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        func isOpen(_ id: String) async throws -> Bool? { try await Self.isOpen(client, id) }
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "idle"]).output == "120\n")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "idle", "2"]).status == 0)
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "idle"]).output == "2\n")
        let wrong = try await NotificationCommandTests.todayctl(address, ["notifications", "idle", "soon"])
        #expect(wrong.status != 0 && wrong.error.contains("write seconds (300), minutes (5m) or never"), "\(wrong)")

        // Nothing has moved on this display since it started: the user is away.
        try await Task.sleep(for: .seconds(2))
        let sent = try await NotificationCommandTests.todayctl(address, ["notify", "While you were out", "--app", "Mail", "--timeout", "1500"])
        let id = sent.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sent.status == 0, "\(sent)")
        #expect(try await eventually(20) { Self.lines(out).contains("expiry: held") }, "\(Self.lines(out))")
        #expect(Self.lines(out).contains("idle: 2 s, from x11-sync") && Self.lines(out).contains("user: away"), "\(Self.lines(out))")
        try await Task.sleep(for: .seconds(3))
        #expect(try await isOpen(id) == true, "its time came while the user was away")

        // The user is back, moving the mouse (every half second: with
        // 2 s for away, a pause of 2 s would be away again).
        var moves = 0
        func move() async throws {
            moves += 1
            let script = """
                import ctypes, sys
                x11, xtest = ctypes.CDLL("libX11.so.6"), ctypes.CDLL("libXtst.so.6")
                x11.XOpenDisplay.restype = ctypes.c_void_p
                display = ctypes.c_void_p(x11.XOpenDisplay(None))
                sys.exit(0 if display and xtest.XTestFakeMotionEvent(display, -1, 300 + int(sys.argv[1]) % 50, 300, 0) and x11.XFlush(display) else 1)
                """
            let moved = try await run(["env", "DISPLAY=\(screen.name)", "/usr/bin/python3", "-c", script, "\(moves)"])
            #expect(moved.status == 0, "\(moved)")
        }
        #expect(try await eventually(5) {
            try await move()
            return Self.lines(out).contains("user: back") && Self.lines(out).contains("expiry: let go")
        }, "\(Self.lines(out))")
        let back = Date()
        #expect(try await eventually(10) {
            try await move()
            return try await isOpen(id) == false
        })
        #expect(Date().timeIntervalSince(back) > 1.5, "closed before its three seconds")
    }

    /// Under sway the compositor says when the user is away (sway 1.7:
    /// org_kde_kwin_idle; later ones ext-idle-notify-v1): a headless sway
    /// has no input, so once IdleThreshold has passed the banners hold.
    @Test(.enabled(if: HeadlessSway.available, "needs sway, grim and setpriv (apt-get install sway grim util-linux)"))
    func underSwayTheBannersWaitWhileTheUserIsAway() async throws {
        let sway = try await HeadlessSway()
        defer { sway.stop() }
        let (todayd, out) = try await Self.underSway(sway, "banners-sway-away")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "idle", "2"]).status == 0)
        // A first banner starts the program, whose watch begins then.
        _ = try await Self.notify(address, ["Build finished", "--app", "CI"])
        #expect(try await eventually(20) { Self.lines(out).contains { $0.hasPrefix("idle: 2 s, from ") } }, "\(Self.lines(out))")
        let source = Self.lines(out).first { $0.hasPrefix("idle: 2 s, from ") } ?? ""
        #expect(source.hasSuffix("org_kde_kwin_idle") || source.hasSuffix("ext-idle-notify-v1"), "\(source)")
        #expect(try await eventually(10) { Self.lines(out).contains("user: away") && Self.lines(out).contains("expiry: held") }, "\(Self.lines(out))")
        let sent = try await NotificationCommandTests.todayctl(address, ["notify", "While you were out", "--app", "Mail", "--timeout", "1000"])
        let id = UInt32(sent.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        try await Task.sleep(for: .seconds(3))
        let reply = try await client.call(Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.getNotification, id)
        #expect(reply.body.first?.stringDictionary?["open"]?.bool == true, "its time came while the user was away")

        // Never: the watch ends, and the hold with it.
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "idle", "never"]).status == 0)
        #expect(try await eventually(10) { Self.lines(out).contains("expiry: let go") }, "\(Self.lines(out))")
    }

    /// Under X11 the banners are placed by their top-left corner for the
    /// user's BannerPosition: 12 pixels in from the bottom-right corner of
    /// a 1024×768 screen, then from the middle of the top edge.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb"), "needs Xvfb (apt-get install xvfb)"))
    func underX11TheBannersArePlacedWhereTheUserSays() async throws {
        let screen = try await OwnDisplay()
        defer { screen.stop() }
        let (todayd, out) = try await Self.onDisplay(screen, "banners-x11-position")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "position", "bottom-right"]).status == 0)
        _ = try await Self.notify(address, ["Build finished", "All tests passed", "--app", "CI"])
        func placed() -> (x: Int, y: Int, width: Int)? {
            guard let line = Self.lines(out).last(where: { $0.hasPrefix("placed: ") }) else { return nil }
            let numbers = line.split(separator: " ").dropFirst().compactMap { Int($0) }
            return numbers.count == 3 ? (numbers[0], numbers[1], numbers[2]) : nil
        }
        // Its bottom 12 pixels above the screen's: y is 768 - 12 - its height.
        #expect(try await eventually(20) { placed().map { $0.x == 632 && $0.y > 500 && $0.y < 768 - 12 - 40 } ?? false }, "\(Self.lines(out))")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "position", "top"]).status == 0)
        #expect(try await eventually(10) { placed().map { $0.x == (1024 - $0.width) / 2 && $0.y == 12 } ?? false }, "\(Self.lines(out))")
        // An output by its RandR name (Xvfb's one is "screen"), and one not connected.
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "output", "screen"]).status == 0)
        #expect(try await eventually(10) { Self.lines(out).contains("output: screen") }, "\(Self.lines(out))")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "output", "HDMI-9"]).status == 0)
        #expect(try await eventually(10) { Self.lines(out).contains("output: HDMI-9 (not connected)") }, "\(Self.lines(out))")
        #expect(placed().map { $0.x == (1024 - $0.width) / 2 && $0.y == 12 } ?? false, "\(Self.lines(out))")
    }

    /// Where the banners show is the user's (BannerPosition): at the
    /// bottom-left corner from the first banner, and at the middle of the
    /// top edge once changed while they show. Seen in grim's shots.
    @Test(.enabled(if: HeadlessSway.available, "needs sway, grim and setpriv (apt-get install sway grim util-linux)"))
    func underSwayTheBannersShowWhereTheUserPlacesThem() async throws {
        let sway = try await HeadlessSway()
        defer { sway.stop() }
        let (todayd, out) = try await Self.underSway(sway, "banners-position")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "position", "bottom-left"]).status == 0)
        let mail = try await Self.notify(address, ["Film night", "Popcorn is ready", "--app", "Mail"])
        #expect(try await eventually(20) { Self.lines(out).contains("banners: \(mail) queued: ") }, "\(Self.lines(out))")

        // How much of a part of the screen is not the background.
        func covered(_ columns: Range<Int>, _ rows: Range<Int>) async throws -> Double {
            1 - (try await sway.share(of: HeadlessSway.background, columns: columns, rows: rows))
        }
        var seen: [Double] = []
        func shows(bottomLeft: Bool, topMiddle: Bool) async throws -> Bool {
            try await eventually(10) {
                seen = [try await covered(0..<400, 300..<600), try await covered(220..<580, 0..<200), try await covered(600..<800, 0..<600)]
                return (seen[0] > 0.1) == bottomLeft && (seen[1] > 0.1) == topMiddle && seen[2] == 0
            }
        }
        #expect(try await shows(bottomLeft: true, topMiddle: false), "bottom-left, top middle, right: \(seen)")
        #expect(try await NotificationCommandTests.todayctl(address, ["notifications", "position", "top"]).status == 0)
        #expect(try await eventually(10) { Self.lines(out).contains("position: top") }, "\(Self.lines(out))")
        #expect(try await shows(bottomLeft: false, topMiddle: true), "bottom-left, top middle, right: \(seen)")
    }

    /// Under a layer-shell compositor (sway) the banners are over other
    /// windows but under a fullscreen one (a film, a game), as GNOME Shell
    /// keeps them, unless one is critical: seen in grim's shots of the
    /// banners' corner over a red fullscreen window.
    @Test(.enabled(if: HeadlessSway.available, "needs sway, grim and setpriv (apt-get install sway grim util-linux)"))
    func underSwayAFullscreenWindowHidesAllButCriticalBanners() async throws {
        let sway = try await HeadlessSway()
        defer { sway.stop() }
        let (todayd, out) = try await Self.underSway(sway, "banners-fullscreen")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address

        // A film: a red window, fullscreen.
        let red: (UInt8, UInt8, UInt8) = (0xff, 0, 0)
        let film = try sway.fullscreenWindow(red)
        defer { if film.isRunning { kill(film.processIdentifier, SIGKILL) } }
        #expect(try await eventually(20) { try await sway.share(of: red, columns: 0..<800, rows: 0..<600) > 0.99 }, "the film never filled the screen")

        // The banners' corner: 12 pixels in from the top-right, 380 wide.
        func redInCorner() async throws -> Double { try await sway.share(of: red, columns: 420..<780, rows: 20..<60) }
        func notify(_ arguments: [String]) async throws -> String { try await Self.notify(address, arguments) }
        func shows(_ state: String) async throws -> Bool { try await eventually(20) { Self.lines(out).contains(state) } }
        let mail = try await notify(["Film night", "Popcorn is ready", "--app", "Mail"])
        #expect(try await shows("banners: \(mail) queued: "), "\(Self.lines(out))")
        try await Task.sleep(for: .milliseconds(700))
        #expect(try await redInCorner() > 0.99, "a normal banner showed over the fullscreen window")

        let alarm = try await notify(["Battery at 3%", "--urgency", "critical", "--app", "Power"])
        #expect(try await shows("layer: overlay"), "\(Self.lines(out))")
        #expect(try await eventually(10) { try await redInCorner() < 0.5 }, "a critical banner stayed under the fullscreen window")

        // Dismissed, the critical one goes, and the normal one goes back under.
        _ = try await NotificationCommandTests.todayctl(address, ["notifications", "dismiss", alarm])
        #expect(try await shows("layer: top"), "\(Self.lines(out))")
        #expect(try await eventually(10) { try await redInCorner() > 0.99 })

        // The film ends (SIGKILL: `fullscreenWindow` says why): the banner
        // that waited under it is there.
        kill(film.processIdentifier, SIGKILL)
        #expect(try await eventually(10) {
            let (red, covered) = (try await redInCorner(), try await sway.covered(fromX: 420))
            return red == 0 && covered > 0.05
        })
        #expect(Self.lines(out).last { $0.hasPrefix("banners: ") } == "banners: \(mail) queued: ")
    }
}
