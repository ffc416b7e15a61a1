import DBus
import Foundation
import Testing
@testable import TodayCore
import TestSupport
import TodayProtocol

/// Scheduled notifications as value code (SPEC section 18): calendar
/// triggers against Python's zoneinfo over a year in three time zones,
/// interval triggers, requests replaced, removed, delivered once, and
/// responses as the book hands them to the app.
@Suite struct TriggerTests {
    static let zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata"]
    static let year2027 = Date(timeIntervalSince1970: 1_798_761_600)  // 2027-01-01T00:00:00Z

    /// Each case's next date as nextdates.py computes it.
    static func independent(_ cases: [(after: Date, zone: String, match: DateMatch)]) async throws -> [Int64?] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("nextdates.py").path
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("nextdates-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: input) }
        let lines = cases.map { item -> String in
            let match = item.match
            let parts: [(String, Int?)] = [
                ("year", match.year), ("month", match.month), ("day", match.day), ("weekday", match.weekday), ("hour", match.hour),
                ("minute", match.minute), ("second", match.second),
            ]
            let fields = parts.compactMap { name, value in value.map { "\"\(name)\": \($0)" } }.joined(separator: ", ")
            return "{\"after\": \(Int64(item.after.timeIntervalSince1970)), \"zone\": \"\(item.zone)\", \"match\": {\(fields)}}"
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: input)
        let result = try await run(["sh", "-c", "python3 \"$0\" < \"$1\"", script, input.path], timeout: 120)
        try #require(result.status == 0, "nextdates.py: \(result.error)")
        return result.output.split(separator: "\n").map { Int64($0) }
    }

    /// Triggers that meet daylight saving's gaps and doubled hours, the
    /// ends of months, leap days and weekdays, from random instants of 2027
    /// (a fixed seed, printed on failure), each compared with zoneinfo's.
    @Test func calendarTriggersMatchTheTzDatabaseOverAYear() async throws {
        let seed = UInt64(20_271_231)
        var random = SeededGenerator(state: seed)
        let matches: [DateMatch] = [
            DateMatch(hour: 2, minute: 30), DateMatch(hour: 8), DateMatch(minute: 15), DateMatch(weekday: 1, hour: 1, minute: 30),
            DateMatch(day: 31, hour: 12), DateMatch(month: 2, day: 29), DateMatch(month: 3, day: 28, hour: 2, minute: 30),
            DateMatch(hour: 1, minute: 59, second: 59), DateMatch(weekday: 6, hour: 23, minute: 45), DateMatch(second: 30),
            DateMatch(month: 11, weekday: 1, hour: 1, minute: 30), DateMatch(year: 2027, month: 10, day: 31, hour: 2, minute: 30),
        ]
        var cases: [(after: Date, zone: String, match: DateMatch)] = []
        for zone in Self.zones {
            for _ in 0..<120 {
                let after = Self.year2027.addingTimeInterval(Double(random.next() % (365 * 86_400)))
                cases.append((after, zone, matches[Int(random.next() % UInt64(matches.count))]))
            }
        }
        let expected = try await Self.independent(cases)
        try #require(expected.count == cases.count)
        var wrong: [String] = []
        for (item, answer) in zip(cases, expected) {
            let got = item.match.nextDate(after: item.after, in: try #require(TimeZone(identifier: item.zone))).map { Int64($0.timeIntervalSince1970) }
            if got != answer { wrong.append("\(item.zone) \(item.match) after \(item.after): \(got.map(String.init) ?? "nil") ≠ \(answer.map(String.init) ?? "nil")") }
        }
        #expect(wrong.isEmpty, "seed \(seed): \(wrong.prefix(5).joined(separator: "\n"))")
    }

    /// A daily 02:30 repeated through a year: every day once, the day the
    /// clocks skip 02:30 at the end of the gap, the day it comes twice once.
    @Test func aDailyTriggerFiresOnceADayThroughTheChanges() async throws {
        for zone in Self.zones {
            let timeZone = try #require(TimeZone(identifier: zone))
            let match = DateMatch(hour: 2, minute: 30)
            var dates: [Date] = []
            var after = Self.year2027
            for _ in 0..<365 {
                let next = try #require(match.nextDate(after: after, in: timeZone))
                dates.append(next)
                after = next
            }
            let expected = try await Self.independent(zip([Self.year2027] + dates.dropLast(), dates).map { ($0.0, zone, match) })
            #expect(dates.map { Int64($0.timeIntervalSince1970) } == expected.compactMap { $0 }, "\(zone)")
            // One a day: no two on the same local day.
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = timeZone
            let days = Set(dates.map { calendar.dateComponents([.year, .month, .day], from: $0) })
            #expect(days.count == 365, "\(zone): \(365 - days.count) days fired twice")
        }
    }

    @Test func theDaylightSavingEdgesInBerlin() throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        let match = DateMatch(hour: 2, minute: 30)
        // 2027-03-28: the clocks go from 02:00 to 03:00; 02:30 comes as 03:00.
        let spring = try #require(match.nextDate(after: Date(timeIntervalSince1970: 1_806_192_000), in: berlin))  // 03-28 00:00Z
        #expect(spring == Date(timeIntervalSince1970: 1_806_195_600), "01:00Z, 03:00 local")
        // 2027-10-31: 02:30 comes twice; the first, at 00:30Z.
        let autumn = try #require(match.nextDate(after: Date(timeIntervalSince1970: 1_824_940_800), in: berlin))  // 10-30 22:00Z
        #expect(autumn == Date(timeIntervalSince1970: 1_824_942_600))
        #expect(match.nextDate(after: autumn, in: berlin) == Date(timeIntervalSince1970: 1_825_032_600), "not again at 01:30Z: the next day, at 02:30 CET")
        // February 30th never comes.
        #expect(DateMatch(month: 2, day: 30).nextDate(after: Self.year2027, in: berlin) == nil)
    }

    @Test func requestsAndTriggersAreCheckedWithTheirKeyNamed() throws {
        func content(_ entries: [(String, Value)]) -> String {
            do throws(ScheduleProblem) {
                _ = try ScheduledContent(VariantDictionary(entries))
                return "ok"
            } catch { return error.description }
        }
        func trigger(_ entries: [(String, Value)]) -> String {
            do throws(ScheduleProblem) {
                _ = try ScheduledTrigger(VariantDictionary(entries))
                return "ok"
            } catch { return error.description }
        }
        #expect(content([("title", .string("Tram"))]) == "ok")
        #expect(content([("title", .int32(1))]).contains("'title' must be a string"))
        #expect(content([("titel", .string("x"))]).contains("no key 'titel'"))
        #expect(content([("title", .string("x")), ("interruption-level", .string("loud"))]).contains("'interruption-level'"))
        #expect(content([("body", .string("x")), ("image", .bytes(Data([1, 2, 3])))]).contains("not a PNG"))
        #expect(content([("subtitle", .string("x"))]).contains("needs a 'title' or a 'body'"))
        #expect(trigger([]) == "ok")
        #expect(trigger([("after", .uint64(30))]) == "ok")
        #expect(trigger([("after", .uint64(30)), ("repeats", .boolean(true))]).contains("at least 60"))
        #expect(trigger([("after", .double(-1))]).contains("above 0"))
        #expect(trigger([("date", .vardict([("hour", .int32(25))]))]).contains("'hour' must be a whole number from 0 to 23"))
        #expect(trigger([("date", .vardict([("hour", .int32(8)), ("time-zone", .string("Mars/Olympus"))]))]).contains("time zone"))
        #expect(trigger([("after", .uint64(60)), ("date", .vardict([("hour", .int32(8))]))]).contains("not both"))
        #expect(trigger([("repeats", .boolean(true))]).contains("needs 'after' or 'date'"))
    }

    // MARK: The schedule

    static let start = Date(timeIntervalSince1970: 1_798_794_000)  // 2027-01-01T09:00:00Z
    static let content: ScheduledContent = {
        var content = ScheduledContent()
        content.title = "Tram"
        return content
    }()

    @Test func requestsAreReplacedRemovedAndDeliveredOnceWhateverWasMissed() throws {
        var schedule = NotificationSchedule(zone: try #require(TimeZone(identifier: "Europe/Berlin")))
        _ = try schedule.schedule("a", content: Self.content, trigger: .interval(seconds: 60, repeats: false), for: "tram", at: Self.start)
        _ = try schedule.schedule("b", content: Self.content, trigger: .interval(seconds: 120, repeats: true), for: "tram", at: Self.start)
        _ = try schedule.schedule("c", content: Self.content, trigger: .calendar(DateMatch(hour: 12), repeats: true), for: "tram", at: Self.start)
        // The same id replaces: one "a", due later now.
        _ = try schedule.schedule("a", content: Self.content, trigger: .interval(seconds: 90, repeats: false), for: "tram", at: Self.start)
        #expect(schedule.pending(for: "tram").map(\.id) == ["a", "b", "c"])
        #expect(schedule.pending(for: "other").isEmpty, "each app sees its own")
        #expect(schedule.nextDue == Self.start.addingTimeInterval(90))

        #expect(schedule.due(at: Self.start.addingTimeInterval(89)).deliveries.isEmpty)
        var (deliveries, changed) = schedule.due(at: Self.start.addingTimeInterval(90))
        #expect(deliveries.map(\.request.id) == ["a"] && changed == ["tram"])
        // Down for ten minutes: "b" (every 2 min) delivered once, keeping its rhythm.
        (deliveries, _) = schedule.due(at: Self.start.addingTimeInterval(725))
        #expect(deliveries.map(\.request.id) == ["b"])
        #expect(deliveries.first?.at == Self.start.addingTimeInterval(120))
        #expect(schedule.pending(for: "tram").first { $0.id == "b" }?.next == Self.start.addingTimeInterval(840))
        // Noon in Berlin is 11:00Z; down for three days: once, then the next noon.
        (deliveries, _) = schedule.due(at: Self.start.addingTimeInterval(3 * 86_400))
        #expect(deliveries.map(\.request.id).sorted() == ["b", "c"])
        #expect(schedule.pending(for: "tram").first { $0.id == "c" }?.next == Self.start.addingTimeInterval(3 * 86_400 + 2 * 3600))

        let removed = schedule.removePending(["b", "c", "nothing"], for: "tram")
        #expect(removed)
        #expect(schedule.pending(for: "tram").isEmpty && schedule.apps.isEmpty)
        // Now is delivered at once, never kept.
        let now = try schedule.schedule("n", content: Self.content, trigger: .now, for: "tram", at: Self.start)
        #expect(now == nil)
        #expect(schedule.apps.isEmpty)
    }

    @Test func whatAnAppKeptIsReadBackAsItWas() throws {
        var schedule = NotificationSchedule(zone: try #require(TimeZone(identifier: "Asia/Kolkata")))
        var content = Self.content
        content.userInfo = VariantDictionary([("line", .string("4")), ("count", .int32(3))])
        content.url = "tram://departure?line=4"
        content.interruptionLevel = .timeSensitive
        _ = try schedule.schedule("r", content: content, trigger: .calendar(DateMatch(weekday: 2, hour: 7, timeZone: "Europe/Berlin"), repeats: true), for: "tram", at: Self.start)
        schedule.setCategories([ScheduledCategory(id: "reminder", actions: [.init(id: "go", title: "On my way"), .init(id: "say", title: "Say", textInput: true)])], for: "tram")
        let app = try #require(schedule.apps["tram"])
        var problems: [String] = []
        let read = NotificationSchedule.app(stored: NotificationSchedule.stored(app), problems: &problems)
        #expect(read == app && problems.isEmpty)
    }

    // MARK: Responses

    @Test func answersToAScheduledNotificationGoToItsApp() throws {
        var book = NotificationBook()
        var notification = TodayNotification(
            id: 0, appID: "org.example.Tram", appName: "Tram", summary: "Line 4", actions: [.init(key: "go", label: "On my way"), .init(key: "inline-reply", label: "Say")],
            time: Self.start, source: .todaykit)
        notification.appNotificationID = "reminder-4"
        notification.hints = VariantDictionary([
            (NotificationBook.userInfoHint, .vardict([("line", .string("4"))])), (NotificationBook.textInputHint, .string("say")),
        ])
        let id = try book.post(NotificationBook.Posting(notification: notification), at: Self.start).id
        let info = VariantDictionary([("line", .string("4"))])
        var effects = try book.invoke(id, key: "go", token: "t1")
        #expect(effects.contains(.respond(appID: "org.example.Tram", NotificationResponse(requestID: "reminder-4", actionID: "go", userInfo: info), token: "t1")))
        let again = try book.post(NotificationBook.Posting(notification: notification), at: Self.start).id
        effects = try book.reply(again, text: "soon")
        #expect(effects.contains(.respond(appID: "org.example.Tram", NotificationResponse(requestID: "reminder-4", actionID: "say", userText: "soon", userInfo: info), token: nil)))
        // With a URL, the default action opens it.
        notification.hints = VariantDictionary([(NotificationBook.urlHint, .string("tram://departure?line=4"))])
        let linked = try book.post(NotificationBook.Posting(notification: notification), at: Self.start).id
        effects = try book.invoke(linked, key: "default", token: nil)
        #expect(effects.contains(.openURL("tram://departure?line=4", token: nil)))
        // The same request id replaces the one delivered before.
        #expect(book.delivered(["reminder-4"], of: "org.example.Tram").isEmpty, "answered, so gone")
        let kept = try book.post(NotificationBook.Posting(notification: notification), at: Self.start).id
        let replacing = try book.post(NotificationBook.Posting(notification: notification), at: Self.start).id
        #expect(kept == replacing && book.delivered(["reminder-4"], of: "org.example.Tram") == [kept])
    }

    @Test func aThreadIsAGroupOfItsOwnInTheList() throws {
        func entry(_ id: UInt32, _ app: String, thread: String?) -> [String: Value] {
            var values: [String: Value] = ["id": .uint32(id), "app-id": .string(app), "summary": .string("s\(id)")]
            if let thread { values["hints"] = .vardict([("thread-id", .string(thread))]) }
            return values
        }
        let entries = [
            entry(5, "tram", thread: "line-4"), entry(4, "mail", thread: nil), entry(3, "tram", thread: "line-11"),
            entry(2, "tram", thread: "line-4"), entry(1, "tram", thread: nil),
        ].compactMap(NotificationEntry.init)
        let groups = NotificationEntry.groups(entries)
        #expect(groups.map(\.key) == ["tram\nline-4", "mail", "tram\nline-11", "tram"])
        #expect(groups.first?.entries.map(\.id) == [5, 2])
    }

    @Test func passiveOnesStayOutOfBannersAndTimeSensitiveOnesPassDoNotDisturb() throws {
        var book = NotificationBook()
        book.settings.doNotDisturb = true
        let notification = TodayNotification(id: 0, appID: "tram", appName: "Tram", summary: "x", time: Self.start, source: .todaykit)
        var posting = NotificationBook.Posting(notification: notification)
        func banner(_ rule: NotificationBook.BannerRule) throws -> Bool {
            posting.banner = rule
            return try book.post(posting, at: Self.start, minute: 600).effects.contains { if case .banner = $0 { true } else { false } }
        }
        #expect(try banner(.throughDoNotDisturb))
        #expect(try !banner(.usual))
        book.settings.doNotDisturb = false
        #expect(try banner(.usual))
        #expect(try !banner(.never))
    }
}
