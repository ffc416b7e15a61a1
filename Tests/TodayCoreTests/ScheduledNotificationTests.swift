import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Apps notify the iOS way (SPEC section 18), end to end with the Tram
/// example: its widget's "Remind me" button schedules a notification with
/// TodayKit's UNUserNotificationCenter and exits; todayd delivers it on
/// time, through a restart and through a time it was down; the user's
/// answer starts the Tram app, whose delegate prints it with the
/// notification's user-info.
@Suite(.showsDaemonLogs) struct ScheduledNotificationTests {
    static let widget = "org.example.Tram.Departures"
    static let app = "org.example.Tram"

    /// A bus and a home that outlive the todayd that serves the examples.
    final class Setup {
        let bus: BusDaemon
        let home: URL

        init() async throws {
            home = try temporaryDirectory("scheduled")
            bus = try await BusDaemon.start()
        }

        func start() async throws -> (TodayDaemon, Connection) {
            let daemon = try TodayDaemon(bundles: [Paths.examples], home: home, address: bus.address)
            let client = try await daemon.ready()
            return (daemon, client)
        }

        /// `tram ARGUMENTS…` as the user runs it.
        func tram(_ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
            var environment = TodayDaemon.environment(home: home)
            environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
            return try await run(["env", "-i"] + environment.map { "\($0.key)=\($0.value)" } + [Paths.examples + "/Tram.app/tram"] + arguments)
        }

        func remove() {
            bus.stop()
            try? FileManager.default.removeItem(at: home)
        }
    }

    @discardableResult
    static func call(_ client: Connection, _ member: String, _ arguments: [Value] = []) async throws -> Message {
        try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, member: MemberName(rawValue: member) ?? MemberName("Invalid"),
            arguments)
    }

    /// The Tram app's notifications in the list.
    static func reminders(_ client: Connection) async throws -> [[String: Value]] {
        let reply = try await call(client, "ListNotifications")
        return (reply.body.first?.elements ?? []).compactMap { VariantDictionary($0)?.dictionary }.filter { $0["app-id"]?.string == app }
    }

    /// A departure in `seconds`, and its reminder asked for with the widget's button.
    static func remind(_ setup: Setup, _ client: Connection, departingIn seconds: Int) async throws {
        let added = try await setup.tram(["add", "\(seconds)", "4", "Central"])
        #expect(added.status == 0, "\(added.error)")
        _ = try await eventually(5) { (try? await client.property(widget, "Snapshot").stringDictionary?["title"]?.unwrapped.string) == "Line 4 to Central" }
        let pressed = try await client.widget(widget, "PerformAction", [.string("remind-me"), .vardict([])])
        let failure = try await client.property(widget, "LastFailure")
        #expect(pressed.body.first?.string == "new-data", "\(failure)")
    }

    @Test func theAnswerReachesTheAppAfterItExitedAndTodaydRestarted() async throws {
        let setup = try await Setup()
        defer { setup.remove() }
        var (daemon, client) = try await setup.start()
        // Due 15 s after the departure is added (75 s ahead, reminded 60 s
        // before): time for a restart on a loaded machine. Taken before
        // the departure is added, so that it is never later than the time
        // the reminder is due, however long the widget takes to show it.
        let due = Date().addingTimeInterval(15)
        try await Self.remind(setup, client, departingIn: 75)

        // The app (registered as its bundle) sees its request; the widget
        // scheduled it as the app's.
        let asApp = try Connection(address: setup.bus.address)
        defer { asApp.close() }
        try await asApp.center("RegisterApp", [.string(Self.app)])
        let pending = try await Self.call(asApp, "PendingRequests").body.first?.elements ?? []
        let request = try #require(pending.first.flatMap(VariantDictionary.init)?.dictionary)
        #expect(request["id"]?.string == "tram-reminder")
        let content = try #require(request["content"].flatMap(VariantDictionary.init)?.dictionary)
        #expect(content["title"]?.string == "Line 4 to Central" && content["category"]?.string == "departure")
        #expect(content["sound"]?.string == "default", "UNNotificationSound.default, as Schedule carries it")

        // todayd stops and starts again before the reminder is due.
        #expect(daemon.stop(keepHome: true) == 0)
        client.close()
        (daemon, client) = try await setup.start()
        defer { _ = daemon.stop(keepHome: true) }
        defer { client.close() }
        if Date() < due.addingTimeInterval(-1) { #expect(try await Self.reminders(client).isEmpty, "not before its time") }
        #expect(try await eventually(30) { try await !Self.reminders(client).isEmpty })
        let late = Date().timeIntervalSince(due)
        #expect(late < 2, "delivered \(late) s after its time")
        let reminder = try #require(try await Self.reminders(client).first)
        #expect(reminder["summary"]?.string == "Line 4 to Central" && reminder["source"]?.string == "todaykit")
        let actions = (reminder["actions"]?.elements ?? []).compactMap { action -> [String]? in
            if case .structure(let fields) = action { fields.compactMap(\.string) } else { nil }
        }
        #expect(actions == [["on-my-way", "On my way"], ["inline-reply", "Message"]], "\(actions)")
        // A registration ends with the todayd it was made with.
        try await asApp.center("RegisterApp", [.string(Self.app)])
        #expect(try await Self.call(asApp, "PendingRequests").body.first?.elements?.isEmpty == true, "delivered: no longer pending")

        // The user answers; todayd starts the app, which prints it.
        let id = try #require(reminder["id"]?.uint64.flatMap { UInt32(exactly: $0) })
        try await Self.call(client, "InvokeAction", [.uint32(id), .string("on-my-way"), .vardict([])])
        let printed = try await read(daemon.output, until: { $0.contains("Tram: on my way to line 4 to Central") }, within: 20)
        #expect(printed.contains("Tram: on my way to line 4 to Central"), "\(printed)")
        #expect(try await Self.reminders(client).isEmpty, "answered: it leaves the list")
    }

    @Test func aReminderDueWhileTodaydWasDownComesAtStartOnceAndTakesAReply() async throws {
        let setup = try await Setup()
        defer { setup.remove() }
        var (daemon, client) = try await setup.start()
        try await Self.remind(setup, client, departingIn: 63)
        kill(daemon.process.processIdentifier, SIGKILL)
        await exited(daemon.process)
        client.close()
        // Down past its time.
        try await Task.sleep(for: .seconds(5))
        (daemon, client) = try await setup.start()
        #expect(try await eventually(5) { try await Self.reminders(client).count == 1 })
        // Once: another start does not deliver it again.
        #expect(daemon.stop(keepHome: true) == 0)
        client.close()
        (daemon, client) = try await setup.start()
        defer { _ = daemon.stop(keepHome: true) }
        defer { client.close() }
        try await Task.sleep(for: .seconds(1))
        let reminders = try await Self.reminders(client)
        #expect(reminders.count == 1, "\(reminders.map { $0["id"] ?? .string("") })")

        let id = try #require(reminders.first?["id"]?.uint64.flatMap { UInt32(exactly: $0) })
        try await Self.call(client, "Reply", [.uint32(id), .string("Running late, go without me")])
        let printed = try await read(daemon.output, until: { $0.contains("Tram: message") }, within: 20)
        #expect(printed.contains("Tram: message for line 4 to Central: Running late, go without me"), "\(printed)")
    }

    @Test func anotherAppCannotSeeRemoveOrAnswerTheRequests() async throws {
        let setup = try await Setup()
        defer { setup.remove() }
        let (daemon, client) = try await setup.start()
        defer { _ = daemon.stop(keepHome: true) }
        defer { client.close() }
        let tramApp = try Connection(address: setup.bus.address)
        defer { tramApp.close() }
        try await tramApp.center("RegisterApp", [.string(Self.app)])
        let other = try Connection(address: setup.bus.address)
        defer { other.close() }
        try await other.center("RegisterApp", [.string("tech.agostini.app")])
        let anonymous = try Connection(address: setup.bus.address)
        defer { anonymous.close() }

        let content = Value.vardict([("title", .string("Later")), ("user-info", .vardict([("n", .int32(1))]))])
        try await Self.call(tramApp, "Schedule", [.string("later"), content, .vardict([("after", .uint64(3600))])])
        try await Self.call(tramApp, "Schedule", [.string("now"), content, .vardict([])])
        // Not registered: no identity, no requests.
        await #expect(throws: DBusError.self) { try await Self.call(anonymous, "Schedule", [.string("x"), content, .vardict([])]) }

        #expect(try await Self.call(other, "PendingRequests").body.first?.elements?.isEmpty == true, "its own only")
        try await Self.call(other, "RemovePending", [.strings(["later"])])
        try await Self.call(other, "RemoveDelivered", [.strings(["now"])])
        #expect(try await Self.call(tramApp, "PendingRequests").body.first?.elements?.count == 1, "the other app removed nothing")
        let delivered = try #require(try await Self.reminders(client).first)
        let id = try #require(delivered["id"]?.uint64.flatMap { UInt32(exactly: $0) })
        do {
            try await Self.call(other, "InvokeAction", [.uint32(id), .string("default"), .vardict([])])
            Issue.record("another app answered for the Tram app")
        } catch let error as DBusError {
            #expect(error.name.rawValue == "io.github.todayd.Today1.Error.NotEntitled", "\(error)")
        }
        // Bad input names what is wrong.
        do {
            try await Self.call(tramApp, "Schedule", [.string("bad"), content, .vardict([("after", .uint64(30)), ("repeats", .boolean(true))])])
            Issue.record("a repeating trigger under 60 s was taken")
        } catch let error as DBusError {
            #expect(error.name == .invalidArgs && error.message.contains("at least 60"), "\(error)")
        }
        // The app itself takes its delivered one back.
        try await Self.call(tramApp, "RemoveDelivered", [.strings(["now"])])
        #expect(try await Self.reminders(client).isEmpty)
        try await Self.call(tramApp, "RemovePending", [.strings(["later"])])
        #expect(try await Self.call(tramApp, "PendingRequests").body.first?.elements?.isEmpty == true)
    }
}
