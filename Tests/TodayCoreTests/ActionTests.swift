import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Buttons and toggles (SPEC section 10): the rules a snapshot's actions
/// follow, and PerformAction through the real daemon.
@Suite(.showsDaemonLogs) struct ActionTests {
    static func failure(_ snapshot: String) -> String {
        ExecProvider.parse(Data(#"{"result": "new-data", "snapshot": \#(snapshot)}"#.utf8)).failure
    }

    @Test func actionsFollowTheRules() {
        let nine = (0..<9).map { #"{"id": "a\#($0)", "title": "A", "kind": "button"}"# }.joined(separator: ",")
        let cases: [(String, String)] = [
            (#"{"actions": [\#(nine)]}"#, "bad-output: snapshot offers 9 actions; at most 8"),
            (#"{"actions": [{"id": "", "title": "A", "kind": "button"}]}"#, "bad-output: actions[0].id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"),
            (#"{"actions": [{"id": "a b", "title": "A", "kind": "button"}]}"#, "bad-output: actions[0].id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"),
            (#"{"actions": [{"id": "\#(String(repeating: "x", count: 65))", "title": "A", "kind": "button"}]}"#, "bad-output: actions[0].id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"),
            (#"{"actions": [{"id": "a", "title": "A", "kind": "button"}, {"id": "a", "title": "B", "kind": "button"}]}"#, "bad-output: actions[1].id 'a' is used twice"),
            (#"{"actions": [{"id": "a", "kind": "button"}]}"#, "bad-output: actions[0] ('a') needs a 'title' string"),
            (#"{"actions": [{"id": "a", "title": "A", "kind": "toggle"}]}"#, "bad-output: actions[0] ('a') is a toggle and needs a boolean 'state'"),
            (#"{"actions": [{"id": "a", "title": "A", "kind": "slider"}]}"#, "bad-output: actions[0].kind must be 'button' or 'toggle'"),
            (#"{"actions": [{"id": "a", "title": "A", "kind": "button", "icon-name": 3}]}"#, "bad-output: actions[0].icon-name must be a string, not integer"),
            (#"{"actions": {"id": "a"}}"#, "bad-output: snapshot key 'actions' must be an array of dictionaries, not dict"),
            (#"{"items": [{"title": "x", "action": "missing"}]}"#, "bad-output: items[0].action must name one of the snapshot's actions"),
        ]
        for (snapshot, message) in cases { #expect(Self.failure(snapshot) == message, "\(snapshot.prefix(80))") }
        let eight = (0..<8).map { #"{"id": "a.\#($0)-_", "title": "A", "kind": "toggle", "state": true, "icon-name": "starred", "accessibility-label": "Star"}"# }
        #expect(Self.failure(#"{"actions": [\#(eight.joined(separator: ","))], "items": [{"title": "x", "action": "a.1-_"}]}"#) == "")
    }

    static let script = #"""
        log="$TODAY_CONTAINER/log"
        echo "start $1 ${2:-} ${TODAY_ACTION_ID:-} ${TODAY_ACTION_STATE:-}" >> "$log"
        actions() {
            printf '[{"id": "refresh", "title": "Refresh", "kind": "button"}, {"id": "star", "title": "Star", "kind": "toggle", "state": %s}, {"id": "mute", "title": "Mute", "kind": "toggle", "state": false}]' "$1"
        }
        case "$1 ${2:-}" in
        "perform-update ") sleep 0.6; printf '{"result": "new-data", "snapshot": {"title": "fresh", "actions": %s}}' "$(actions false)" ;;
        "perform-action star") sleep 0.8; printf '{"result": "new-data", "snapshot": {"title": "starred=%s", "actions": %s}}' "$TODAY_ACTION_STATE" "$(actions "$TODAY_ACTION_STATE")" ;;
        "perform-action mute") sleep 2; echo "end $1 $2" >> "$log"; exit 3 ;;
        "perform-action refresh") sleep 0.5; printf '{"result": "no-data"}' ;;
        esac
        echo "end $1 ${2:-}" >> "$log"
        """#

    static let id = "org.example.Buttons.W"

    func starState(_ connection: Connection, _ name: String = "star") async throws -> Bool? {
        let actions = try await connection.property(Self.id, "Snapshot").stringDictionary?["actions"]?.unwrapped.elements ?? []
        for action in actions {
            let fields = action.stringDictionary ?? [:]
            if fields["id"]?.unwrapped.string == name { return fields["state"]?.unwrapped.bool }
        }
        return nil
    }

    @Test func performActionThroughTheDaemon() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Buttons", widgets: [.init(name: "W", script: Self.script)])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        let log = { (try? String(contentsOfFile: daemon.home.path + "/data/todayd/containers/\(Self.id)/log", encoding: .utf8)) ?? "" }
        let signals = Locked<[String]>([])
        try await connection.subscribe(MatchRule(path: Today.widgetPath(Self.id), interface: Today.widget.name)) { message in
            signals.withLock { $0.append(([message.member ?? ""] + message.body.compactMap(\.string)).joined(separator: " ")) }
        }
        func press(_ action: String) async throws -> String {
            try await connection.widget(Self.id, "PerformAction", [.string(action), .vardict([])]).body.first?.string ?? ""
        }

        #expect(await IdentityTests.errorName { _ = try await press("star") } == "io.github.todayd.Today1.Error.NoSuchAction")
        #expect(try await connection.widget(Self.id, "PerformUpdate").body == [.string("new-data")])
        #expect(await IdentityTests.errorName { _ = try await press("nope") } == "io.github.todayd.Today1.Error.NoSuchAction")

        // Two presses of a button while it runs share one run.
        async let first = press("refresh")
        async let second = press("refresh")
        #expect(try await [first, second] == ["no-data", "no-data"])
        #expect(log().components(separatedBy: "start perform-action refresh refresh").count - 1 == 1)

        // A toggle shows the state asked for at once (a second press while it
        // runs would ask for the other state); the provider's answer follows.
        async let starred = press("star")
        #expect(try await eventually(0.5) { try await starState(connection) == true }, "the new state shows before the provider answers (in 0.8 s)")
        #expect(try await starred == "new-data")
        let afterStar = try await connection.property(Self.id, "Snapshot")
        #expect(afterStar.stringDictionary?["title"]?.unwrapped == .string("starred=true"), "\(afterStar) \(log())")
        #expect(log().components(separatedBy: "start perform-action star star true").count - 1 == 1)
        #expect(signals.value.suffix(2) == ["Updated new-data", "ActionPerformed star new-data"])

        // A toggle whose provider fails goes back, and LastFailure says why.
        async let muted = press("mute")
        // The new state is shown while the provider runs (2 s).
        #expect(try await eventually(1.5) { try await starState(connection, "mute") == true })
        #expect(try await muted == "failed")
        #expect(try await starState(connection, "mute") == false)
        #expect(try await connection.property(Self.id, "LastFailure") == .string("exit 3"))
        #expect(signals.value.suffix(2) == ["Updated failed", "ActionPerformed mute failed"])

        // Runs do not overlap: an action waits for the update under way.
        async let update = connection.widget(Self.id, "PerformUpdate")
        #expect(try await eventually(2) { log().hasSuffix("start perform-update   \n") }, "the update started: \(log())")
        #expect(try await press("refresh") == "no-data")
        _ = try await update
        let lines = log().split(separator: "\n").suffix(4).map(String.init)
        #expect(try await starState(connection) == false, "the update's snapshot replaced the starred one")
        #expect(lines == ["start perform-update   ", "end perform-update ", "start perform-action refresh refresh ", "end perform-action refresh"], "\(lines)")
    }
}

/// An action that a timeline switch took away is no longer there to press.
@Suite(.showsDaemonLogs) struct ActionTimelineTests {
    @Test func anActionTheNextEntryDropsIsGone() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // Now: a snapshot with a button; twelve seconds on: one without (the
        // gap leaves room for a loaded machine between the run and the read).
        let script = #"""
            cat > /dev/null
            now=$(date +%s)
            printf '{"result": "new-data", "timeline": [{"date": %s, "snapshot": {"title": "now", "actions": [{"id": "go", "title": "Go", "kind": "button"}]}}, {"date": %s, "snapshot": {"title": "later"}}], "policy": "never"}' "$now" "$((now + 12))"
            """#
        try bundles.addApp("org.example.Later", widgets: [.init(name: "W", script: script)])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let widget = "org.example.Later.W"
        #expect(try await client.widget(widget, "PerformUpdate").body == [.string("new-data")])
        #expect(try await client.property(widget, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("now"))
        _ = try await eventually(20) { try await client.property(widget, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("later") }
        #expect(try await client.property(widget, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("later"))
        let name = await IdentityTests.errorName { _ = try await client.widget(widget, "PerformAction", [.string("go"), .vardict([])]) }
        #expect(name == "io.github.todayd.Today1.Error.NoSuchAction")
    }
}

/// Actions under the limits of updates (SPEC section 10): different presses
/// of one widget run one after the other, in the order they came, and an
/// action that hangs is ended at the widget's time limit while other
/// widgets go on answering.
@Suite(.showsDaemonLogs) struct ActionLimitsTests {
    static let buttons = #"""
        log="$TODAY_CONTAINER/log"
        cat > /dev/null
        echo "start ${2:-update}" >> "$log"
        case "${2:-}" in
        hang) exec sleep 30 ;;
        "") ;;
        *) sleep 0.4 ;;
        esac
        echo "end ${2:-update}" >> "$log"
        printf '{"result": "new-data", "snapshot": {"title": "t", "actions": [{"id": "a", "title": "A", "kind": "button"}, {"id": "b", "title": "B", "kind": "button"}, {"id": "hang", "title": "Hang", "kind": "button"}]}}'
        """#

    @Test func differentActionsRunInTurnAndAHangingOneTimesOut() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Presses",
            widgets: [
                .init(name: "W", script: Self.buttons, attributes: ["TodayUpdateTimeout": .integer(8)]),
                .init(name: "Other", script: #"cat > /dev/null; printf '{"result": "new-data", "snapshot": {"title": "other"}}'"#),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let widget = "org.example.Presses.W", other = "org.example.Presses.Other"
        let logFile = daemon.home.path + "/data/todayd/containers/\(widget)/log"
        let log = { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }
        func press(_ action: String) async throws -> String {
            try await client.widget(widget, "PerformAction", [.string(action), .vardict([])]).body.first?.string ?? ""
        }
        #expect(try await client.widget(widget, "PerformUpdate").body == [.string("new-data")])
        #expect(try await client.widget(other, "PerformUpdate").body == [.string("new-data")])

        // Two different buttons: two runs, the first pressed first, never at once.
        async let first = press("a")
        #expect(try await eventually(15) { log().contains("start a\n") }, "the first press started: \(log())")
        async let second = press("b")
        #expect(try await [first, second] == ["new-data", "new-data"])
        let lines = log().split(separator: "\n").suffix(4).map(String.init)
        #expect(lines == ["start a", "end a", "start b", "end b"], "\(lines)")

        // A hanging action is ended at the widget's limit of 8 s; meanwhile
        // the other widget answers at once. (The limit leaves room for a
        // loaded machine to start the sandbox and the script before the
        // five Gets, which should take milliseconds.)
        let hangEnded = Locked(false)
        let started = ContinuousClock.now
        async let hung: String = {
            defer { hangEnded.withLock { $0 = true } }
            return try await press("hang")
        }()
        #expect(try await eventually(15) { log().contains("start hang\n") }, "the hanging action started: \(log())")
        for _ in 0..<5 { #expect(try await client.property(other, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("other")) }
        #expect(!hangEnded.value, "the other widget answered while the action hung")
        #expect(try await hung == "failed")
        #expect(ContinuousClock.now - started < .seconds(20), "the action was ended at its limit, not after its 30 s")
        #expect(try await client.property(widget, "LastFailure") == .string("timeout"))
    }
}
