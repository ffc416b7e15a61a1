import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The schedule's budget and back-off, with the time passed in; and the
/// service's scheduler under an injected clock.
@Suite struct ScheduleTests {
    static let utc = LocalTime.fixed(0)
    /// 2026-12-01 00:00:00 UTC.
    static let midnight = Date(timeIntervalSince1970: 1_796_083_200)

    /// The system's offset comes from the C library, which follows TZ (todayd
    /// does not load Foundation's time zones, which would say GMT). Run
    /// alone (TODAY_TEST_ALONE), in a pass of its own: setting TZ changes
    /// the process's environment, which another test starting a process
    /// at that moment reads (Foundation's Process copies it, and crashed on
    /// a string setenv had just freed).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TODAY_TEST_ALONE"] != nil, "run alone by make test (TODAY_TEST_ALONE=1)"))
    func localTimeFollowsTheSystem() {
        let saved = getenv("TZ").map { String(cString: $0) }
        setenv("TZ", "Europe/Berlin", 1)
        tzset()
        let winter = LocalTime.system.secondsFromGMT(Self.midnight)
        let summer = LocalTime.system.secondsFromGMT(Self.midnight.addingTimeInterval(-150 * 86_400))
        let day = Schedule.day(of: Self.midnight.addingTimeInterval(-1800), localTime: .system)
        if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
        tzset()
        #expect(winter == 3600)
        #expect(summer == 7200)
        // 23:30 UTC on 30 November is already 1 December in Berlin.
        #expect(day == Schedule.day(of: Self.midnight, localTime: Self.utc))
    }

    @Test func intervalWithJitter() {
        var schedule = Schedule()
        schedule.plan(at: Self.midnight, interval: 900, hasContent: true, outcome: nil, scheduled: false, jitter: 0, localTime: Self.utc)
        #expect(schedule.next == Self.midnight.addingTimeInterval(900))
        schedule = Schedule()
        schedule.plan(at: Self.midnight, interval: 900, hasContent: true, outcome: nil, scheduled: false, jitter: 1, localTime: Self.utc)
        #expect(schedule.next == Self.midnight.addingTimeInterval(990))
    }

    @Test func noScheduleWithoutContentOrInterval() {
        var schedule = Schedule()
        schedule.plan(at: Self.midnight, interval: 0, hasContent: true, outcome: nil, scheduled: false, localTime: Self.utc)
        #expect(schedule.next == nil)
        schedule.plan(at: Self.midnight, interval: 900, hasContent: false, outcome: nil, scheduled: false, localTime: Self.utc)
        #expect(schedule.next == nil)
    }

    @Test func failuresBackOffExponentiallyUpToAnHour() {
        var schedule = Schedule()
        var delays: [TimeInterval] = []
        var now = Self.midnight
        for _ in 0..<8 {
            schedule.plan(at: now, interval: 60, hasContent: true, outcome: false, scheduled: true, jitter: 0, localTime: Self.utc)
            let next = schedule.next ?? now
            delays.append(next.timeIntervalSince(now))
            now = next
        }
        #expect(delays == [120, 240, 480, 960, 1920, 3600, 3600, 3600])
        schedule.plan(at: now, interval: 60, hasContent: true, outcome: true, scheduled: true, jitter: 0, localTime: Self.utc)
        #expect(schedule.next == now.addingTimeInterval(60))
        #expect(schedule.consecutiveFailures == 0)
        // An interval longer than an hour is never shortened by back-off.
        #expect(Schedule.delay(interval: 7200, failures: 3) == 7200)
    }

    @Test func ninetySixScheduledUpdatesADay() {
        var schedule = Schedule()
        var now = Self.midnight
        var runs = 0
        while let next = schedule.next ?? Optional(now), next < Self.midnight.addingTimeInterval(86_400) {
            now = next
            if schedule.next != nil { runs += 1 }
            schedule.plan(at: now, interval: 60, hasContent: true, outcome: true, scheduled: schedule.next != nil, jitter: 0, localTime: Self.utc)
        }
        #expect(runs == 96)
        #expect(schedule.left(at: now, localTime: Self.utc) == 0)
        // The next one waits for the next day, which has a full budget.
        #expect(schedule.next == Self.midnight.addingTimeInterval(86_400))
        #expect(schedule.left(at: Self.midnight.addingTimeInterval(86_400), localTime: Self.utc) == 96)
        // Requested updates do not count.
        var requested = Schedule()
        requested.plan(at: Self.midnight, interval: 60, hasContent: true, outcome: true, scheduled: false, localTime: Self.utc)
        #expect(requested.left(at: Self.midnight, localTime: Self.utc) == 96)
    }

    @Test func theSchedulerRunsDueUpdatesByTheInjectedClock() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Clock",
            widgets: [
                .init(name: "W", script: "echo run >> \"$TODAY_CONTAINER/runs\"\n" + WidgetUpdateTests.newData, attributes: ["TodayUpdateInterval": .integer(600)])
            ])
        let home = try temporaryDirectory("clock")
        defer { try? FileManager.default.removeItem(at: home) }
        let clock = ManualClock(Date())
        try await withService(bundles: bundles.path, home: home, clock: .manual(clock)) { client, _ in
            let id = "org.example.Clock.W"
            let planned = try await client.property(id, "NextScheduledUpdate").uint64 ?? 0
            let start = ValueMapping.microseconds(clock.now)
            #expect(planned >= start + 600_000_000 && planned <= start + 660_000_000)
            #expect(try await client.property(id, "ScheduledUpdatesLeftToday") == .uint32(96))

            clock.advance(by: 661)
            var result = Value.string("")
            _ = try await eventually(6) {
                result = try await client.property(id, "LastResult")
                return result == .string("new-data")
            }
            #expect(result == .string("new-data"))
            let left = try await client.property(id, "ScheduledUpdatesLeftToday")
            let now = clock.now
            // The run counts against the budget of the day it ran on.
            #expect(left == .uint32(95))
            let next = try await client.property(id, "NextScheduledUpdate").uint64 ?? 0
            #expect(next >= ValueMapping.microseconds(now) + 600_000_000)
        }
    }
}
