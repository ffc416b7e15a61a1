import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The clocks the service can run on, and what is decided by the time
/// without a process or a bus: a `ManualClock`'s timers, a provider run's
/// deadlines, and notification expiry in a service on a manual clock. None
/// of these waits for time to pass.
@Suite struct ClockTests {
    static let t0 = Date(timeIntervalSince1970: 1_796_083_200)

    /// Do Not Disturb for a while ends on a whole minute, never before the
    /// while is up; "until 08:00" is the next 08:00 of local time.
    @Test func theEndsOfDoNotDisturbForAWhile() throws {
        #expect(wholeMinute(3600, after: 1000) == 4620)
        #expect(wholeMinute(60, after: 120) == 180)
        #expect(wholeMinute(60, after: 121) == 240)
        let now = UInt64(Self.t0.timeIntervalSince1970) + 12_345
        let morning = try #require(nextLocalTime(hour: 8, minute: 0, after: now))
        var seconds = time_t(morning)
        var parts = tm()
        #expect(localtime_r(&seconds, &parts) != nil)
        #expect((parts.tm_hour, parts.tm_min, parts.tm_sec) == (8, 0, 0))
        #expect(morning > now && morning - now <= 86_400 + 3600, "\(morning) after \(now)")
        // At 08:00 itself, the next one is a day later.
        #expect(try #require(nextLocalTime(hour: 8, minute: 0, after: morning)) - morning >= 86_400 - 3600)
    }

    @Test func aManualTimerLooksOnlyWhenItsTimeComes() {
        let clock = ManualClock(Self.t0)
        let looks = Locked<[Date]>([])
        let timer = ServiceClock.manual(clock).timer(named: "test") {
            looks.withLock { $0.append(clock.now) }
            return 60
        }
        #expect(timer != nil)
        #expect(looks.value == [Self.t0], "a timer looks once as it starts, before timer(named:) returns")
        clock.advance(by: 59)
        #expect(looks.value.count == 1, "not before the minute it asked for")
        clock.advance(by: 1)
        #expect(looks.value == [Self.t0, Self.t0 + 60], "at the minute, before advance returns")
        // A jump of an hour is one look, at the time it lands on.
        clock.advance(by: 3600)
        #expect(looks.value.last == Self.t0 + 3660)
        #expect(looks.value.count == 3)
        // Setting the clock back: it looks again at once.
        clock.set(to: Self.t0)
        #expect(looks.value.count == 4)
        timer?.stop()
        clock.advance(by: 7200)
        #expect(looks.value.count == 4, "stopped, it looks no more")
    }

    @Test func pokesLookOnlyForWhatComesSooner() throws {
        let clock = ManualClock(Self.t0)
        let looks = Locked(0)
        let timer = try #require(
            ServiceClock.manual(clock).timer(named: "test") {
                looks.withLock { $0 += 1 }
                return 600
            })
        defer { timer.stop() }
        // Set for t0 + 600: a later date is left to that look.
        timer.poke(ifBefore: Self.t0 + 900)
        clock.advance(by: 0)
        #expect(looks.value == 1)
        timer.poke(ifBefore: Self.t0 + 300)
        clock.advance(by: 0)
        #expect(looks.value == 2)
        timer.poke()
        clock.advance(by: 0)
        #expect(looks.value == 3)
    }

    /// A run's deadlines for a 10 s limit with a 2 s grace, at the times
    /// given: nothing before the limit, SIGTERM at it (once), SIGKILL when
    /// the grace is over and every 100 ms after.
    @Test func aRunIsTerminatedAtItsLimitAndKilledAfterTheGrace() {
        let start = ContinuousClock.now
        var deadlines = RunDeadlines(start: start, timeout: .seconds(10), grace: .seconds(2))
        #expect(deadlines.next == start + .seconds(10))
        #expect(deadlines.due(at: start + .seconds(9.999)).isEmpty)
        #expect(deadlines.reason == nil)
        #expect(deadlines.due(at: start + .seconds(10)) == [.terminate])
        #expect(deadlines.reason == .timeout)
        #expect(deadlines.next == start + .seconds(12), "the grace")
        #expect(deadlines.due(at: start + .seconds(11)).isEmpty, "SIGTERM once")
        #expect(deadlines.due(at: start + .seconds(12)) == [.kill])
        #expect(deadlines.due(at: start + .seconds(12.05)).isEmpty)
        #expect(deadlines.due(at: start + .seconds(12) + .milliseconds(100)) == [.kill], "again while the process outlives it")
        #expect(deadlines.reason == .timeout)
    }

    @Test func aRunStoppedForAnotherReasonKeepsThatReason() {
        let start = ContinuousClock.now
        var deadlines = RunDeadlines(start: start, timeout: .seconds(10), grace: .seconds(2))
        // Too much output at 1 s: SIGKILL now and at the next look.
        #expect(deadlines.stop(.tooLarge, signal: .kill, at: start + .seconds(1)) == .kill)
        #expect(deadlines.due(at: start + .seconds(1)) == [.kill])
        // Still running at the time limit: no SIGTERM, and still too large.
        #expect(deadlines.due(at: start + .seconds(10)) == [.kill])
        #expect(deadlines.reason == .tooLarge)
        // A SIGTERM after a SIGTERM does not move the grace on.
        var termed = RunDeadlines(start: start, timeout: .seconds(10), grace: .seconds(2))
        _ = termed.stop(.memoryLimit, signal: .terminate, at: start)
        _ = termed.stop(.timeout, signal: .terminate, at: start + .seconds(1))
        #expect(termed.next == start + .seconds(2))
        #expect(termed.reason == .memoryLimit)
    }

    @Test func notificationsExpireByTheServicesClock() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let home = try temporaryDirectory("expiry")
        defer { try? FileManager.default.removeItem(at: home) }
        // A whole second: the clock's moves then land on the notifications'
        // expiry exactly, as a whole number of seconds after it.
        let clock = ManualClock(Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))
        try await withService(bundles: bundles.path, home: home, clock: .manual(clock)) { service, client, _ in
            typealias F = Notifications.Freedesktop
            let server = try #require(BusName(rawValue: service.connection.uniqueName))
            let closed = Locked<[[Value]]>([])
            try await client.subscribe(MatchRule(interface: Notifications.freedesktop.name, member: F.notificationClosed.name)) { message in
                closed.withLock { $0.append(message.body) }
            }
            func notify(_ summary: String, timeout: Int32) async throws -> UInt32 {
                try await client.call(
                    server, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.notify, "Chat", UInt32(0), "",
                    summary, "", [String](), VariantDictionary([]), timeout
                ).value(UInt32.self)
            }
            let hour = try await notify("an hour", timeout: 3_600_000)
            let minute = try await notify("a minute", timeout: 60_000)
            let never = try await notify("never", timeout: 0)
            clock.advance(by: 59)
            // A signal already sent would arrive before this call's reply.
            _ = try await client.call(server, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.getServerInformation)
            #expect(closed.value.isEmpty, "nothing expires early: \(closed.value)")
            clock.advance(by: 1)
            #expect(try await eventually { closed.value == [[.uint32(minute), .uint32(1)]] }, "\(closed.value)")
            clock.advance(by: 3600)
            #expect(try await eventually { closed.value.contains([.uint32(hour), .uint32(1)]) }, "\(closed.value)")
            clock.advance(by: 86_400 * 30)
            _ = try await client.call(server, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.getServerInformation)
            #expect(closed.value.count == 2, "a notification without a timeout stays open: \(never) in \(closed.value)")
        }
    }
}
