import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The notification center from the command line (SPEC section 15):
/// `todayctl notify`, `todayctl notifications` and `todayctl bar
/// --notifications`, run as a user runs them against a real todayd.
@Suite(.showsDaemonLogs) struct NotificationCommandTests {
    static let todayctl = Paths.todayctl

    static func todayctl(_ address: String, _ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
        try await run([todayctl, "--address", address] + arguments)
    }

    static func property(_ client: Connection, _ name: String) async throws -> Value? {
        try await client.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: .get,
            [.string(Notifications.today.name.rawValue), .string(name)]
        ).body.first?.unwrapped
    }

    /// `todayctl notify --wait`, running in the background until it prints.
    final class Waiting: @unchecked Sendable {
        // @unchecked: set in init, then only read.
        let process = Process()
        let output = Pipe()

        init(_ address: String, _ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: NotificationCommandTests.todayctl)
            process.arguments = ["--address", address, "notify", "--wait"] + arguments
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// What it printed, once it has ended (within 10 s).
        func result() async throws -> (status: Int32, output: String) {
            _ = try await eventually(10) { !process.isRunning }
            if process.isRunning { process.terminate() }
            await exited(process)
            return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
    }

    @Test func theModuleAndTheEntriesAsClientsShowThem() throws {
        var notification = TodayNotification(
            id: 7, appID: "org.example.Mail", appName: "Mail", summary: "Lunch?", body: "<b>Noon</b> at &amp; Co", actions: [.init(key: "yes", label: "Yes")],
            urgency: .critical, time: Date(timeIntervalSince1970: 1_796_119_200))
        notification.value = 40
        let entry = try #require(NotificationEntry(Value.vardict(notification.dictionary).stringDictionary ?? [:]))
        #expect(entry.id == 7 && entry.appTitle == "Mail" && entry.summary == "Lunch?" && entry.urgency == .critical)
        #expect(entry.plainBody == "Noon at & Co")
        #expect(entry.actions.map(\.key) == ["yes"] && entry.value == 40 && entry.time == 1_796_119_200_000_000 && entry.isOpen)
        #expect(NotificationEntry(["summary": .string("no id")]) == nil)
        // A ListNotifications reply, read as a list, gives the same
        // entries as each dictionary does; one without an id is left out.
        var threaded = notification
        threaded.id = 8
        threaded.hints = VariantDictionary([("thread-id", .string("lunch")), ("placeholder", .string("Answer"))])
        let reply = Value.array(
            .dictionary(key: .string, value: .variant),
            [.vardict(threaded.dictionary), .vardict([("summary", .string("no id"))]), .vardict(notification.dictionary)])
        let listed = NotificationEntry.list(reply)
        #expect(listed == [threaded, notification].compactMap { NotificationEntry(Value.vardict($0.dictionary).stringDictionary ?? [:]) })
        #expect(listed.map(\.id) == [8, 7] && listed.first?.threadID == "lunch" && listed.first?.replyPlaceholder == "Answer")

        let none = NotificationCount(count: 0, unseen: 0, doNotDisturb: false, latest: [])
        let unseen = NotificationCount(count: 2, unseen: 1, doNotDisturb: false, latest: [entry, entry])
        let quiet = NotificationCount(count: 2, unseen: 0, doNotDisturb: true, latest: [entry])
        #expect(none.classes == ["none"] && unseen.classes == ["unseen"] && quiet.classes == ["dnd"])
        #expect(none.alt == "none" && unseen.alt == "unseen" && quiet.alt == "dnd-seen")
        let waybar = try Plist.read(Data(BarFormat.waybar.line(unseen).utf8), allowJSON: true)
        #expect(waybar["text"] == .string("2"))
        #expect(waybar["tooltip"] == .string("2 notifications, 1 unseen\nMail: Lunch?\nMail: Lunch?"))
        #expect(waybar["class"] == .array([.string("unseen")]))
        let block = try Plist.read(Data(String(BarFormat.i3bar.line(quiet).dropLast()).utf8), allowJSON: true).array?.first
        #expect(block?["name"] == .string(BarFormat.notificationsBlock) && block?["full_text"] == .string("✉ 2 (DND)"))
        #expect(BarFormat.polybar.line(none) == "%{A1:today-view --toggle:}%{A3:todayctl notifications dnd toggle:}0%{A}%{A}")
        #expect(BarFormat.genmon.line(quiet).hasPrefix("<txt>2 (DND)</txt><tool>2 notifications\nDo Not Disturb is on\nMail: Lunch?</tool>"))
        let awhile = NotificationCount(count: 0, unseen: 0, doNotDisturb: true, doNotDisturbUntil: "18:00", latest: [])
        #expect(awhile.tooltip == "No notifications\nDo Not Disturb is on until 18:00")
        // A stacked notification says how many came.
        var stacked = entry
        stacked.duplicates = 2
        #expect(NotificationCount(count: 1, unseen: 0, doNotDisturb: false, latest: [stacked]).tooltip == "1 notification\nMail: Lunch? (3)")
        #expect(stacked.plist.dictionary?["duplicates"] == .unsigned(2) && entry.plist.dictionary?["duplicates"] == nil)
    }

    @Test func notifyAndTheListFromTheCommandLine() async throws {
        let todayd = try await RestartableTodayd("notify-command")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address

        // notify-send's job: the id printed, everything given kept.
        let sent = try await Self.todayctl(
            address,
            [
                "notify", "Lunch?", "<b>Noon</b>, at the usual place", "--app", "Mail", "--icon", "mail-unread", "--urgency", "critical",
                "--action", "yes=Sure", "--action", "no=Not today", "--hint", "category=string:email", "--hint", "x-count=uint:3",
                "--progress", "40", "--timeout", "0",
            ])
        #expect(sent.status == 0, "\(sent)")
        let id = try #require(UInt32(sent.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        let kept = try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.getNotification, id)
        let entry = try #require(kept.body.first?.stringDictionary.flatMap(NotificationEntry.init))
        #expect(entry.summary == "Lunch?" && entry.body == "<b>Noon</b>, at the usual place" && entry.appName == "Mail")
        #expect(entry.appIcon == "mail-unread" && entry.urgency == .critical && entry.category == "email" && entry.value == 40)
        #expect(entry.actions.map(\.key) == ["yes", "no"] && entry.actions.map(\.label) == ["Sure", "Not today"])
        #expect(kept.body.first?.stringDictionary?["hints"].flatMap(VariantDictionary.init)?.dictionary["x-count"] == .uint32(3))

        // Bad input: exit status 2, what was wrong, and nothing sent.
        for (arguments, complaint) in [
            (["notify", "x", "--hint", "count=int:many"], "'many' is not an int"), (["notify", "x", "--progress", "140"], "0 to 100"),
            (["notify", "x", "--urgency", "high"], "low, normal or critical"), (["notify", "x", "--action", "=Label"], "KEY=LABEL"),
            (["notify", "x", "--hint", "y=float:1"], "'float' is not one of"), (["notify", "x", "--image", "/nonexistent.png"], "no file"),
            (["notifications", "dismiss", "zero"], "not a notification id"), (["notifications", "dnd", "schedule", "25:00", "07:00"], "HH:MM"),
            (["notifications", "policy", "Mail", "banners=maybe"], "true or false"),
        ] {
            let refused = try await Self.todayctl(address, arguments)
            #expect(refused.status == 2 && refused.error.contains(complaint), "\(arguments): \(refused)")
        }
        #expect(try await Self.property(client, "Count") == .uint32(1))

        // The list, as a person and as a program reads it.
        let list = try await Self.todayctl(address, ["notifications", "list"])
        #expect(list.output.hasPrefix("\(id)\t") && list.output.contains("open\tMail\tLunch? — Noon, at the usual place [40%]  [Sure](yes) [Not today](no)"), "\(list)")
        let listed = try Plist.read(Data(try await Self.todayctl(address, ["--json", "notifications", "list"]).output.utf8), allowJSON: true)
        #expect(listed.array?.first?["id"] == .unsigned(UInt64(id)) && listed.array?.first?["urgency"] == .string("critical"))

        // --wait prints the action chosen from the list, a reply, or why it closed.
        let action = try Waiting(address, ["Pick one", "--action", "a=A", "--action", "b=B"])
        _ = try await eventually(5) { try await Self.property(client, "Count") == .uint32(2) }
        let picked = try #require(try await NotificationServerTests.list(client).first?["id"]?.uint64)
        #expect(try await Self.todayctl(address, ["notifications", "invoke", "\(picked)", "b"]).status == 0)
        #expect(try await action.result() == (0, "b\n"))

        let reply = try Waiting(address, ["Say something", "--action", "inline-reply=Reply"])
        _ = try await eventually(5) { try await Self.property(client, "Count") == .uint32(2) }
        let replied = try #require(try await NotificationServerTests.list(client).first?["id"]?.uint64)
        #expect(try await Self.todayctl(address, ["notifications", "reply", "\(replied)", "on my way"]).status == 0)
        #expect(try await reply.result() == (0, "inline-reply\ton my way\n"))

        let dismissed = try Waiting(address, ["Go away", "--json"])
        _ = try await eventually(5) { try await Self.property(client, "Count") == .uint32(2) }
        let gone = try #require(try await NotificationServerTests.list(client).first?["id"]?.uint64)
        #expect(try await Self.todayctl(address, ["notifications", "dismiss", "\(gone)"]).status == 0)
        let ending = try await dismissed.result()
        let outcome = try Plist.read(Data(ending.output.utf8), allowJSON: true)
        #expect(outcome["id"] == .unsigned(gone) && outcome["closed"] == .string("dismissed"), "\(ending)")
        let missing = try await Self.todayctl(address, ["notifications", "dismiss", "\(gone)"])
        #expect(missing.status == 1 && !missing.error.isEmpty, "\(missing)")

        // --replace keeps the id.
        let replaced = try await Self.todayctl(address, ["notify", "Lunch at one", "--replace", "\(id)", "--app", "Mail"])
        #expect(replaced.output == "\(id)\n", "\(replaced)")

        // Do Not Disturb and its schedule; an app's policy.
        #expect(try await Self.todayctl(address, ["notifications", "dnd", "on"]).status == 0)
        #expect(try await Self.property(client, "DoNotDisturb") == .boolean(true))
        #expect(try await Self.todayctl(address, ["notifications", "dnd", "toggle"]).output == "off\n")
        #expect(try await Self.property(client, "DoNotDisturb") == .boolean(false))
        // On for a while, or until a time of day.
        let hour = try await Self.todayctl(address, ["notifications", "dnd", "on", "for", "1h"])
        #expect(hour.status == 0 && hour.output.hasPrefix("on until "), "\(hour)")
        let end = try #require(try await Self.property(client, "DoNotDisturbUntil")?.uint64)
        // An hour, to the next whole minute: a time of day to read.
        let ahead = Double(end) / 1_000_000 - Date().timeIntervalSince1970
        #expect(ahead > 3590 && ahead < 3665 && end % 60_000_000 == 0, "\(end)")
        #expect(hour.output.split(separator: ":").count == 2, "to the minute: \(hour.output)")
        #expect(try await Self.todayctl(address, ["notifications", "dnd"]).output == hour.output)
        let evening = try await Self.todayctl(address, ["--json", "notifications", "dnd", "on", "until", "18:00"])
        #expect(evening.status == 0 && evening.output.contains("\"until\""), "\(evening)")
        let eighteen = try #require(try await Self.property(client, "DoNotDisturbUntil")?.uint64)
        var seconds = time_t(eighteen / 1_000_000)
        var parts = tm()
        #expect(localtime_r(&seconds, &parts) != nil && parts.tm_hour == 18 && parts.tm_min == 0)
        #expect(Double(eighteen) / 1_000_000 > Date().timeIntervalSince1970 && Double(eighteen) / 1_000_000 < Date().timeIntervalSince1970 + 86_401)
        for (words, complaint) in [(["for", "soon"], "not a length of time"), (["for", "0m"], "not a length of time"), (["until", "25:00"], "HH:MM"), (["later", "1h"], "for DURATION or until HH:MM")] {
            let refused = try await Self.todayctl(address, ["notifications", "dnd", "on"] + words)
            #expect(refused.status == 2 && refused.error.contains(complaint), "\(words): \(refused)")
        }
        #expect(try await Self.todayctl(address, ["notifications", "dnd", "off"]).status == 0)
        #expect(try await Self.property(client, "DoNotDisturbUntil") == .uint64(0))
        #expect(try await Self.todayctl(address, ["notifications", "dnd", "schedule", "22:30", "07:00"]).status == 0)
        #expect(try await Self.todayctl(address, ["notifications", "dnd"]).output == "off (scheduled daily from 22:30 to 07:00)\n")
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail", "banners=false", "urgency=low"]).status == 0)
        let policies = try await Self.property(client, "AppPolicies")?.stringDictionary?["Mail"]?.stringDictionary
        #expect(policies?["banners"] == .boolean(false) && policies?["urgency"] == .byte(0), "\(String(describing: policies))")
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail"]).output.contains("banners=false"))
        // The user's time for an app: notify-send's "never" closes (expired) at 300 ms.
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail", "timeout=300"]).status == 0)
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail"]).output.contains("timeout=300"))
        let asked = try await run(["env", "DBUS_SESSION_BUS_ADDRESS=\(address)", NotificationServerTests.notifySend, "--print-id", "--expire-time=0", "--app-name=Mail", "Build done"])
        let expiring = try #require(UInt32(asked.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(asked)")
        func isOpen(_ id: UInt32) async throws -> Bool? {
            try await NotificationServerTests.list(client).first { $0["id"] == .uint32(id) }?["open"]?.bool
        }
        #expect(try await eventually(5) { try await isOpen(expiring) == false })
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail", "timeout=never"]).status == 0)
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail"]).output.contains("timeout=never"))
        let stays = try await run(["env", "DBUS_SESSION_BUS_ADDRESS=\(address)", NotificationServerTests.notifySend, "--print-id", "--expire-time=200", "--app-name=Mail", "Build failed"])
        let open = try #require(UInt32(stays.output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(stays)")
        try await Task.sleep(for: .milliseconds(600))
        #expect(try await isOpen(open) == true, "asked 200 ms, the user said until dismissed")
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail", "timeout=app"]).status == 0)
        #expect(try await Self.property(client, "AppPolicies")?.stringDictionary?["Mail"]?.stringDictionary?["timeout"] == nil)
        let wrongTime = try await Self.todayctl(address, ["notifications", "policy", "Mail", "timeout=soon"])
        #expect(wrongTime.status == 2 && wrongTime.error.contains("milliseconds, never, or app"), "\(wrongTime)")
        #expect(try await Self.todayctl(address, ["notifications", "policy", "Mail", "reset"]).status == 0)
        #expect(try await Self.property(client, "AppPolicies")?.stringDictionary?["Mail"] == nil)

        // Clear: the list is empty.
        #expect(try await Self.todayctl(address, ["notifications", "clear"]).status == 0)
        #expect(try await Self.property(client, "Count") == .uint32(0))
        #expect(try await Self.todayctl(address, ["notifications"]).output == "no notifications\n")
    }

    /// Settings kept by a dotfile manager: notifications.plist a symbolic
    /// link into a folder of its own, whose changes the watcher cannot
    /// see. `todayctl reload` and SIGHUP read it again; todayd's own
    /// changes go through the link to the file it names, and the link stays.
    @Test func reloadReadsTheSettingsBehindALinkAndTodaydWritesThroughIt() async throws {
        let todayd = try await RestartableTodayd("reload-settings")
        defer { todayd.remove() }
        let dotfiles = todayd.home.appendingPathComponent("dotfiles")
        let config = todayd.home.appendingPathComponent(".config/todayd")
        try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let target = dotfiles.path + "/notifications.plist"
        let link = config.path + "/notifications.plist"
        func edit(doNotDisturb: Bool) throws {
            try Plist.write(.dictionary(["DoNotDisturb": .boolean(doNotDisturb)]), format: .xml).write(to: URL(fileURLWithPath: target))
        }
        try edit(doNotDisturb: false)
        #expect(symlink("../../dotfiles/notifications.plist", link) == 0)
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        #expect(try await Self.property(client, "DoNotDisturb") == .boolean(false))

        try edit(doNotDisturb: true)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await Self.property(client, "DoNotDisturb") == .boolean(false), "the watcher sees no change behind the link")
        let reloaded = try await Self.todayctl(address, ["reload"])
        #expect(reloaded.status == 0 && reloaded.output == "rescanned the bundle folders (0 widgets); read notifications.plist and layout.plist again\n", "\(reloaded)")
        #expect(try await Self.property(client, "DoNotDisturb") == .boolean(true))

        try edit(doNotDisturb: false)
        #expect(kill(daemon.process.processIdentifier, SIGHUP) == 0)
        #expect(try await eventually(5) { try await Self.property(client, "DoNotDisturb") == .boolean(false) })

        #expect(try await Self.todayctl(address, ["notifications", "dnd", "on"]).status == 0)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == "../../dotfiles/notifications.plist")
        #expect(try Plist.read(contentsOf: target)["DoNotDisturb"] == .boolean(true))

        // A change through D-Bus is made on an edit not read yet, not
        // written over it.
        try Plist.write(
            .dictionary(["DoNotDisturb": .boolean(true), "DoNotDisturbFrom": .string("22:00"), "DoNotDisturbTo": .string("07:00")]), format: .xml
        ).write(to: URL(fileURLWithPath: target))
        #expect(try await Self.todayctl(address, ["notifications", "policy", "org.example.Chat", "list=false"]).status == 0)
        let kept = try Plist.read(contentsOf: target)
        #expect(kept["DoNotDisturbFrom"] == .string("22:00") && kept["DoNotDisturbTo"] == .string("07:00"), "\(kept)")
        #expect(kept["AppPolicies"]?["org.example.Chat"]?["list"] == .boolean(false), "\(kept)")

        let extra = try await Self.todayctl(address, ["reload", "now"])
        #expect(extra.status == 2 && extra.error.contains("reload takes no operands"), "\(extra)")
    }

    /// Key bindings, as mako and dunst users have them: `dismiss` without
    /// an id closes the newest open notification (`makoctl dismiss`,
    /// `dunstctl close`), `invoke` without one chooses `default` on it
    /// (`makoctl invoke`, `dunstctl action`); with none open, both say so.
    @Test func dismissAndInvokeWithoutAnIdActOnTheNewestOpenOne() async throws {
        let todayd = try await RestartableTodayd("newest")
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address
        let none = try await Self.todayctl(address, ["notifications", "dismiss"])
        #expect(none.status == 1 && none.error.contains("no open notification to dismiss"), "\(none)")

        let first = try Waiting(address, ["Build failed", "--action", "default=Open the log"])
        _ = try await eventually(5) { try await Self.property(client, "Count") == .uint32(1) }
        let second = try Waiting(address, ["Lunch?"])
        _ = try await eventually(5) { try await Self.property(client, "Count") == .uint32(2) }
        #expect(try await Self.todayctl(address, ["notifications", "dismiss"]).status == 0)
        #expect(try await second.result().output.contains("dismissed"), "the newest went")
        #expect(try await Self.property(client, "Count") == .uint32(1))
        #expect(try await Self.todayctl(address, ["notifications", "invoke"]).status == 0)
        #expect(try await first.result() == (0, "default\n"))

        // Expired, it stays in the list closed: nothing open to act on.
        let expired = try await Self.todayctl(address, ["notify", "Backup done", "--timeout", "100"])
        #expect(expired.status == 0, "\(expired)")
        _ = try await eventually(5) { (try? await NotificationServerTests.list(client).first?["open"]) == .boolean(false) }
        let nothing = try await Self.todayctl(address, ["notifications", "invoke"])
        #expect(nothing.status == 1 && nothing.error.contains("no open notification to invoke"), "\(nothing)")
        #expect(try await Self.property(client, "Count") == .uint32(1))
    }

    /// A notifications.plist that does not read (an edit half done) is
    /// the user's: a change through D-Bus is refused with what is wrong
    /// and what to do, and the file stays byte for byte; once it reads,
    /// the change goes through.
    @Test func aSettingsFileThatDoesNotReadIsNotWrittenOver() async throws {
        let todayd = try await RestartableTodayd("broken-settings")
        defer { todayd.remove() }
        let config = todayd.home.appendingPathComponent(".config/todayd")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        let path = config.path + "/notifications.plist"
        let (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        let address = todayd.bus.address

        let halfDone = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>DoNotDisturb</key><true/><key>AppPol"#
        try Data(halfDone.utf8).write(to: URL(fileURLWithPath: path))
        let refused = try await Self.todayctl(address, ["notifications", "dnd", "on"])
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.error.contains("\(path) does not read") && refused.error.contains("fix it, or remove it for the defaults"), "\(refused)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == halfDone)
        #expect(try await Self.property(client, "DoNotDisturb") == .boolean(false))
        let policy = try await Self.todayctl(address, ["notifications", "policy", "org.example.Chat", "list=false"])
        #expect(policy.status == 1 && policy.error.contains("does not read"), "\(policy)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == halfDone)

        // Finished: read, and the next change is made on it.
        try Plist.write(.dictionary(["DoNotDisturbFrom": .string("22:00"), "DoNotDisturbTo": .string("07:00")]), format: .xml)
            .write(to: URL(fileURLWithPath: path))
        #expect(try await Self.todayctl(address, ["notifications", "dnd", "on"]).status == 0)
        let kept = try Plist.read(contentsOf: path)
        #expect(kept["DoNotDisturb"] == .boolean(true) && kept["DoNotDisturbFrom"] == .string("22:00"), "\(kept)")
    }

    @Test func theBarModuleIsPushedAndOutlivesTodayd() async throws {
        let todayd = try await RestartableTodayd("notification-bar")
        defer { todayd.remove() }
        var (daemon, client) = try await todayd.start()
        let address = todayd.bus.address
        let waybar = try BarTests.Running(["--notifications", "--format", "waybar"], address: address)
        defer { waybar.stop() }
        let i3bar = try BarTests.Running(["--notifications", "--format", "i3bar"], address: address)
        defer { i3bar.stop() }
        #expect(try await waybar.line { $0.contains(#""class":["none"]"#) } != nil, "\(waybar.lines.value)")
        #expect(try await i3bar.line { $0.contains("✉ 0") } != nil, "\(i3bar.lines.value)")

        _ = try await Self.todayctl(address, ["notify", "Build finished", "--app", "CI"])
        #expect(try await waybar.line { $0.contains(#""text":"1""#) && $0.contains("CI: Build finished") && $0.contains(#""unseen""#) } != nil, "\(waybar.lines.value)")
        // The view marks the list seen: the class goes.
        try await client.call(Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.markSeen)
        #expect(try await waybar.line { $0.contains(#""class":[]"#) && $0.contains(#""alt":"seen""#) } != nil, "\(waybar.lines.value)")
        // A right click on the i3bar block switches Do Not Disturb on.
        i3bar.input.fileHandleForWriting.write(Data("[\n{\"name\":\"\(BarFormat.notificationsBlock)\",\"button\":3}\n".utf8))
        #expect(try await eventually(5) { try await Self.property(client, "DoNotDisturb") == .boolean(true) })
        #expect(try await waybar.line { $0.contains(#""class":["dnd"]"#) } != nil, "\(waybar.lines.value)")
        #expect(try await i3bar.line { $0.contains("✉ 1 (DND)") } != nil, "\(i3bar.lines.value)")
        // On for a while: the tooltip says until when.
        let awhile = try await Self.todayctl(address, ["notifications", "dnd", "on", "for", "2h"])
        let until = awhile.output.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "on until ", with: "")
        #expect(try await waybar.line { $0.contains("Do Not Disturb is on until \(until)") } != nil, "\(awhile): \(waybar.lines.value)")

        // todayd stops: the bars keep their line and go on with the next todayd.
        daemon.stop(keepHome: true)
        client.close()
        try await Task.sleep(for: .milliseconds(500))
        #expect(waybar.process.isRunning && i3bar.process.isRunning)
        #expect(waybar.lines.value.last?.contains(#""class":["dnd"]"#) == true, "\(waybar.lines.value)")
        (daemon, client) = try await todayd.start()
        defer { daemon.stop() }
        defer { client.close() }
        _ = try await Self.todayctl(address, ["notify", "Deploy done", "--app", "CI"])
        #expect(try await waybar.line { $0.contains(#""text":"2 (DND)""#) && $0.contains("CI: Deploy done") } != nil, "\(waybar.lines.value)")

        // --once: one line, and the end.
        let once = try await Self.todayctl(address, ["bar", "--notifications", "--format", "genmon"])
        #expect(once.status == 0 && once.output.hasPrefix("<txt>2 (DND)</txt>"), "\(once)")
    }
}
