import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Timelines (SPEC section 9): answers read and checked, entries shown at
/// their dates without a provider run, policies scheduling the next
/// reload, the timeline kept across no-data, failures and restarts.
@Suite struct TimelineTests {
    /// 2026-12-01 10:00:00 UTC.
    static let t0 = Date(timeIntervalSince1970: 1_796_119_200)

    static func answer(_ json: String) throws -> TimelineAnswer {
        guard case .newData(let answer) = ExecProvider.parse(Data(json.utf8)) else {
            throw TimelineAnswer.Problem(description: "\(ExecProvider.parse(Data(json.utf8)))")
        }
        return answer
    }

    static func failure(_ json: String) -> String { ExecProvider.parse(Data(json.utf8)).failure }

    static func entries(_ count: Int, from start: Int = 0) -> String {
        (0..<count).map { #"{"date": \#(1_796_119_200 + 60 * ($0 + start)), "snapshot": {"title": "e\#($0 + start)"}}"# }
            .joined(separator: ", ")
    }

    @Test func answersAreCheckedAsSpecSays() throws {
        let hundred = try Self.answer(#"{"result": "new-data", "timeline": [\#(Self.entries(100))]}"#)
        #expect(hundred.dated.count == 100 && hundred.policy == .interval)
        #expect(Self.failure(#"{"result": "new-data", "timeline": [\#(Self.entries(101))]}"#) == "bad-output: 'timeline' has 101 entries; it must have 1 to 100")
        #expect(Self.failure(#"{"result": "new-data", "timeline": []}"#) == "bad-output: 'timeline' has 0 entries; it must have 1 to 100")
        // Sorted by date; of two with the same date, the later one in the answer.
        let sorted = try Self.answer(
            #"{"result": "new-data", "timeline": [{"date": "2026-12-01T10:02:00Z", "snapshot": {"title": "b"}}, {"date": 1796119200, "snapshot": {"title": "a"}, "relevance": 3}, {"date": 1796119320.9, "snapshot": {"title": "c"}}], "policy": {"after": "2026-12-01T11:00:00Z"}}"#)
        #expect(sorted.dated.map { $0.snapshot["title"]?.string } == ["a", "c"])
        #expect(sorted.dated.map(\.date) == [Self.t0, Self.t0.addingTimeInterval(120)])
        #expect(sorted.dated.first?.relevance == 3)
        #expect(sorted.policy == .after(Self.t0.addingTimeInterval(3600)))
        for (policy, expected) in [("at-end", ReloadPolicy.atEnd), ("never", .never), ("interval", .interval)] {
            #expect(try Self.answer(#"{"result": "new-data", "timeline": [\#(Self.entries(1))], "policy": "\#(policy)"}"#).policy == expected)
        }
        let bad: [(String, String)] = [
            (#""policy": "soon""#, "bad-output: 'policy' must be at-end, never, interval or {after: <date>}, not 'soon'"),
            (#""policy": {"at": 5}"#, "bad-output: 'policy' as a dictionary must be {after: <date>}"),
        ]
        for (policy, message) in bad {
            #expect(Self.failure(#"{"result": "new-data", "timeline": [\#(Self.entries(1))], \#(policy)}"#) == message)
        }
        #expect(Self.failure(#"{"result": "new-data", "timeline": [{"date": "tomorrow", "snapshot": {}}]}"#).contains("timeline[0].date 'tomorrow' is not an ISO 8601 date"))
        #expect(Self.failure(#"{"result": "new-data", "timeline": [{"date": -5, "snapshot": {}}]}"#) == "bad-output: timeline[0].date must lie between 1970 and 9999")
        #expect(Self.failure(#"{"result": "new-data", "timeline": [{"date": 5}]}"#) == "bad-output: timeline[0] needs a 'snapshot' dictionary")
        #expect(Self.failure(#"{"result": "new-data", "timeline": [{"date": 5, "snapshot": {"title": 1}}]}"#) == "bad-output: timeline[0]: snapshot key 'title' must be a string, not integer")
        #expect(Self.failure(#"{"result": "new-data", "snapshot": {}, "timeline": [\#(Self.entries(1))]}"#) == "bad-output: an answer has 'snapshot' or 'timeline', not both")
        // An XML answer with plist dates.
        let xml = """
            <plist><dict><key>result</key><string>new-data</string><key>timeline</key><array>
            <dict><key>date</key><date>2026-12-01T10:00:00Z</date><key>snapshot</key><dict><key>title</key><string>x</string></dict></dict>
            </array><key>policy</key><string>never</string></dict></plist>
            """
        #expect(try Self.answer(xml).dated.first?.date == Self.t0)
    }

    @Test func entriesAdvanceAndAFutureTimelineWaits() throws {
        var timeline = Timeline().replaced(by: try Self.answer(#"{"result": "new-data", "timeline": [\#(Self.entries(5, from: -1))], "policy": "at-end"}"#), at: Self.t0)
        #expect(timeline.snapshot["title"]?.string == "e0")
        #expect(timeline.nextDate == Self.t0.addingTimeInterval(60))
        #expect(timeline.entries.count == 4)
        // A clock jump past three entries lands on the third, dropping those before.
        let moved = timeline.advance(to: Self.t0.addingTimeInterval(200))
        #expect(moved)
        #expect(timeline.snapshot["title"]?.string == "e3" && timeline.upcoming.count == 0)
        let movedAgain = timeline.advance(to: Self.t0.addingTimeInterval(10_000))
        #expect(!movedAgain)
        // Every entry in the future: what is shown stays until the first date.
        let future = timeline.replaced(by: try Self.answer(#"{"result": "new-data", "timeline": [\#(Self.entries(2, from: 10))]}"#), at: Self.t0.addingTimeInterval(300))
        #expect(future.snapshot["title"]?.string == "e3" && future.upcoming.count == 2)
        // The same snapshot again changes nothing.
        var again = TimelineAnswer(snapshot: ["title": .string("e3")])
        again.policy = .atEnd
        #expect(timeline.replaced(by: again, at: Self.t0.addingTimeInterval(500)) == timeline)
        // Stored and read back at a later time: the entry whose date has come.
        let stored = try Plist.read(try Plist.write(future.plist, format: .xml)).dictionary ?? [:]
        let restored = Timeline(stored: stored, shownSince: .distantPast, at: Self.t0.addingTimeInterval(630))
        #expect(restored.snapshot["title"]?.string == "e10" && restored.upcoming.count == 1)
    }

    /// Entries still to come are kept encoded, in one buffer per timeline,
    /// and read back whole: as values when shown, equal to what came.
    @Test func upcomingEntriesAreKeptEncodedAndReadBackWhole() {
        let snapshots: [PlistDictionary] = (0..<5).map { index in
            ["title": .string("Departure \(index)"), "image": .data(Data(repeating: UInt8(index), count: 40)), "count": .integer(Int64(index))]
        }
        let entries = snapshots.enumerated().map { index, snapshot in
            Timeline.Entry(date: Self.t0.addingTimeInterval(Double(index) * 60), snapshot: snapshot, relevance: Double(index))
        }
        var timeline = Timeline(current: nil, upcoming: entries, policy: .atEnd)
        #expect(timeline.upcoming.map(\.snapshot) == snapshots)
        #expect(timeline.upcoming == entries, "encoded entries equal the values they came from")
        #expect(Timeline(current: nil, upcoming: entries, policy: .atEnd) == timeline)
        let switched = timeline.advance(to: Self.t0.addingTimeInterval(150))
        #expect(switched)
        #expect(timeline.current?.snapshot == snapshots[2] && timeline.current?.relevance == 2)
        #expect(timeline.upcoming.map(\.snapshot) == Array(snapshots[3...]))
        var changed = timeline
        changed.upcoming[0].snapshot["title"] = .string("changed")
        #expect(changed != timeline)
    }

    @Test func policiesPlanTheNextUpdate() {
        let utc = LocalTime.fixed(0)
        var schedule = Schedule()
        // At the date, when it is a minute away or more.
        schedule.plan(at: Self.t0, reload: .at(Self.t0.addingTimeInterval(600)), hasContent: true, outcome: true, scheduled: true, jitter: 0, localTime: utc)
        #expect(schedule.next == Self.t0.addingTimeInterval(600))
        // Never sooner than 60 s after the update, plus up to 6 s of jitter.
        schedule.plan(at: Self.t0, reload: .at(Self.t0.addingTimeInterval(5)), hasContent: true, outcome: true, scheduled: true, jitter: 1, localTime: utc)
        #expect(schedule.next == Self.t0.addingTimeInterval(66))
        // After failures, the back-off.
        schedule.plan(at: Self.t0, reload: .at(Self.t0.addingTimeInterval(600)), hasContent: true, outcome: false, scheduled: true, jitter: 0, localTime: utc)
        schedule.plan(at: Self.t0, reload: .at(Self.t0.addingTimeInterval(600)), hasContent: true, outcome: false, scheduled: true, jitter: 0, localTime: utc)
        #expect(schedule.next == Self.t0.addingTimeInterval(240))
        // never: none; no content: none.
        schedule.plan(at: Self.t0, reload: .none, hasContent: true, outcome: true, scheduled: false, jitter: 0, localTime: utc)
        #expect(schedule.next == nil)
        schedule.plan(at: Self.t0, reload: .at(Self.t0), hasContent: false, outcome: true, scheduled: false, jitter: 0, localTime: utc)
        #expect(schedule.next == nil)
        // The daily budget holds for every policy.
        var spent = Schedule()
        for _ in 0..<Schedule.dailyBudget {
            spent.plan(at: Self.t0, reload: .at(Self.t0.addingTimeInterval(600)), hasContent: true, outcome: true, scheduled: true, jitter: 0, localTime: utc)
        }
        #expect(spent.left(at: Self.t0, localTime: utc) == 0)
        #expect(spent.next == Date(timeIntervalSince1970: 1_796_169_600))
    }

    /// A provider whose runs are counted, answering what `answers` holds for
    /// its nth run (the last one for any later run).
    static func bundles(answers: [String], attributes: PlistDictionary = [:]) throws -> BundleFolder {
        let bundles = try BundleFolder()
        var script = #"n=$(cat "$TODAY_CONTAINER/n" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$TODAY_CONTAINER/n""# + "\ncase $n in\n"
        for (index, answer) in answers.enumerated() {
            script += (index == answers.count - 1 ? "*" : "\(index + 1)") + ") cat <<'END'\n\(answer)\nEND\n;;\n"
        }
        script += "esac\n"
        try bundles.addApp("org.example.Agenda", widgets: [.init(name: "Next", script: script, attributes: attributes)])
        try bundles.addApp("org.example.Other", widgets: [.init(name: "W", script: "exit 0")])
        return bundles
    }

    static let id = "org.example.Agenda.Next"

    @Test func entriesSwitchAtTheirDatesWithoutARun() async throws {
        let answer = #"{"result": "new-data", "timeline": [\#(Self.entries(5, from: -1))], "policy": "at-end"}"#
        let bundles = try Self.bundles(answers: [answer, #"{"result": "no-data"}"#, #"{"result": "failed"}"#])
        defer { bundles.remove() }
        let home = try temporaryDirectory("timeline")
        defer { try? FileManager.default.removeItem(at: home) }
        let clock = ManualClock(Self.t0)
        let runs = { (try? String(contentsOfFile: home.path + "/data/todayd/containers/\(Self.id)/n", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) }
        try await withService(bundles: bundles.path, home: home, clock: .manual(clock)) { client, _ in
            let changes = Locked<[String]>([])
            try await client.subscribe(MatchRule(path: Today.widgetPath(Self.id), interface: .properties, member: MemberName("PropertiesChanged"))) { message in
                let changed = message.body.dropFirst().first?.stringDictionary ?? [:]
                if let title = changed["Snapshot"]?.unwrapped.stringDictionary?["title"]?.unwrapped.string { changes.withLock { $0.append(title) } }
            }
            #expect(try await client.widget(Self.id, "PerformUpdate").body == [.string("new-data")])
            #expect(try await client.property(Self.id, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("e0"))
            #expect(try await client.property(Self.id, "CurrentEntryDate") == .uint64(1_796_119_200_000_000))
            #expect(try await client.property(Self.id, "NextEntryDate") == .uint64(1_796_119_260_000_000))
            #expect(try await client.property(Self.id, "ReloadPolicy") == .string("at-end"))
            // at-end: the next update at the last entry's date (plus up to 6 s).
            let next = try await client.property(Self.id, "NextScheduledUpdate").uint64 ?? 0
            #expect((1_796_119_380_000_000...1_796_119_386_000_000).contains(next), "\(next)")

            // The clock's look runs before set(to:) returns: the entry has
            // switched, with no waiting.
            clock.set(to: Self.t0.addingTimeInterval(61))
            #expect(try await client.property(Self.id, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("e1"))
            #expect(try await client.property(Self.id, "Relevance") == .double(0))
            // A jump lands on the entry whose date has come.
            clock.set(to: Self.t0.addingTimeInterval(121))
            #expect(try await client.property(Self.id, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("e2"))
            #expect(runs() == "1", "no provider run between entries")
            #expect(try await eventually { changes.value.suffix(2) == ["e1", "e2"] }, "\(changes.value)")

            // no-data and failed keep the timeline and its policy.
            #expect(try await client.widget(Self.id, "PerformUpdate").body == [.string("no-data")])
            #expect(try await client.widget(Self.id, "PerformUpdate").body == [.string("failed")])
            #expect(try await client.property(Self.id, "ReloadPolicy") == .string("at-end"))
            let timeline = try await client.widget(Self.id, "GetTimeline").body.first?.elements ?? []
            #expect(timeline.count == 2)
        }
        // A restart past an entry shows it and drops the ones before.
        clock.set(to: Self.t0.addingTimeInterval(185))
        try await withService(bundles: bundles.path, home: home, clock: .manual(clock)) { (client: Connection, _: BusDaemon) async throws in
            #expect(try await client.property(Self.id, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("e3"))
            #expect(try await client.widget(Self.id, "GetTimeline").body.first?.elements?.count == 1)
            #expect(try await client.property(Self.id, "NextEntryDate") == .uint64(0))
        }
    }

    @Test func reloadTimelinesIsTheWidgetsOrItsAppsToAsk() async throws {
        let slow = #"{"result": "new-data", "snapshot": {"title": "fresh"}}"#
        let bundles = try Self.bundles(answers: [slow])
        defer { bundles.remove() }
        let home = try temporaryDirectory("timeline")
        defer { try? FileManager.default.removeItem(at: home) }
        try await withService(bundles: bundles.path, home: home) { client, bus in
            let anonymous = try Connection(address: bus.address)
            defer { anonymous.close() }
            #expect(await IdentityTests.errorName { try await anonymous.center("ReloadTimelines", [.string(Self.id)]) } == "io.github.todayd.Today1.Error.NotRegistered")
            #expect(await IdentityTests.errorName { try await anonymous.center("ReloadAllTimelines") } == "io.github.todayd.Today1.Error.NotRegistered")
            try await anonymous.center("RegisterApp", [.string("org.example.Other")])
            #expect(await IdentityTests.errorName { try await anonymous.center("ReloadTimelines", [.string(Self.id)]) } == "io.github.todayd.Today1.Error.NotEntitled")
            #expect(await IdentityTests.errorName { try await client.center("ReloadTimelines", [.string("org.example.Missing")]) } == "io.github.todayd.Today1.Error.NoSuchWidget")

            try await client.center("RegisterApp", [.string("org.example.Agenda")])
            let updated = Locked(0)
            try await client.subscribe(MatchRule(path: Today.widgetPath(Self.id), interface: Today.widget.name, member: MemberName("Updated"))) { _ in
                updated.withLock { $0 += 1 }
            }
            try await client.center("ReloadAllTimelines")
            _ = try await eventually(2) { updated.value > 0 }
            #expect(updated.value == 1)
            #expect(try await client.property(Self.id, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("fresh"))
            // Not budgeted: requested updates leave the budget whole.
            #expect(try await client.property(Self.id, "ScheduledUpdatesLeftToday") == .uint32(Schedule.dailyBudget))
        }
    }
}
