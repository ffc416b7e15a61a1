import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The user's NotifyCommand (dunst's `script`, mako's `on-notify`): run for
/// each notification posted, with the notification in environment
/// variables only, never parsed by a shell, as notify-send sends it.
@Suite struct NotifyCommandTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: NotificationServerTests.notifySend), "needs notify-send (apt-get install libnotify-bin)"))
    func theCommandHearsEachNotificationAndNoShellReadsIt() async throws {
        let home = try temporaryDirectory("notify-command")
        defer { try? FileManager.default.removeItem(at: home) }
        let heard = home.path + "/heard"
        let script = home.path + "/on-notify"
        // The user's script: it prints what it was handed, one line a notification.
        try """
            #!/bin/sh
            printf '%s|%s|%s|%s|%s|%s|%s|%s\\n' "$TODAYD_APP_NAME" "$TODAYD_SUMMARY" "$TODAYD_BODY" "$TODAYD_URGENCY" "$TODAYD_CATEGORY" \
                "$TODAYD_PROGRESS" "$TODAYD_SHOWN" "$#" >> "$1"
            """.write(toFile: script, atomically: true, encoding: .utf8)
        #expect(chmod(script, 0o755) == 0)
        try FileManager.default.createDirectory(atPath: home.path + "/.config/todayd", withIntermediateDirectories: true)
        try Plist.write(.dictionary(["NotifyCommand": .array([.string(script), .string(heard)])]), format: .xml)
            .write(to: URL(fileURLWithPath: home.path + "/.config/todayd/notifications.plist"))
        let (daemon, _, stop) = try await NotificationServerTests.serving(home: home)
        defer { stop() }
        func lines() -> [String] { ((try? String(contentsOfFile: heard, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        func send(_ arguments: [String]) async throws {
            let sent = try await run(["DBUS_SESSION_BUS_ADDRESS=\(daemon.address)", NotificationServerTests.notifySend] + arguments)
            #expect(sent.status == 0, "\(sent.error)")
        }

        let pwned = home.path + "/pwned"
        try await send(["--app-name", "Mail", "--urgency", "critical", "--category", "email", "--hint", "int:value:40",
                        "New mail $(touch \(pwned))", "From <b>Ana</b> &amp; `touch \(pwned)`"])
        #expect(try await eventually(5) { lines().count == 1 }, "\(daemon.logText)")
        #expect(lines().first == "Mail|New mail $(touch \(pwned))|From Ana & `touch \(pwned)`|critical|email|40|1|1", "\(lines())")
        #expect(!FileManager.default.fileExists(atPath: pwned), "the notification's text was run")

        // Held back by Do Not Disturb: run too, and told so.
        #expect(try await NotificationCommandTests.todayctl(daemon.address, ["notifications", "dnd", "on"]).status == 0)
        let written = try Plist.read(contentsOf: home.path + "/.config/todayd/notifications.plist")
        #expect(written["NotifyCommand"] == .array([.string(script), .string(heard)]), "a change through D-Bus keeps the command: \(written)")
        try await send(["--app-name", "Chat", "Quiet one"])
        #expect(try await eventually(5) { lines().count == 2 })
        #expect(lines().last == "Chat|Quiet one||normal|||0|1", "\(lines())")

        // A command that is not a program: said in the log, and nothing else happens.
        try Plist.write(.dictionary(["NotifyCommand": .array([.string("no-such-program")])]), format: .xml)
            .write(to: URL(fileURLWithPath: home.path + "/.config/todayd/notifications.plist"))
        #expect(try await eventually(5) { daemon.logText.contains("notification settings read again") })
        try await send(["Anyone?"])
        #expect(try await eventually(5) { daemon.logText.contains("'no-such-program', is not a program on PATH") }, "\(daemon.logText)")
        #expect(lines().count == 2)
    }
}
