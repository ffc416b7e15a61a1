import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// The scheduler's one wall-clock timer: it sleeps until what is due next,
/// not in steps, and fires at the time asked for.
// Serialized: setting the clock wakes every such timer, this suite's others too.
@Suite(.serialized, .showsDaemonLogs) struct WallClockTimerTests {
    @Test func itFiresWhenAskedAndSleepsOtherwise() async throws {
        let fired = Locked<[Date]>([])
        // Fires now, then 0.3 s later, then asks for an hour.
        let timer = try #require(
            WallClockTimer {
                fired.withLock { $0.append(Date()) }
                return fired.value.count == 1 ? 0.3 : 3600
            })
        defer { timer.stop() }
        _ = try await eventually(2) { fired.value.count >= 2 }
        let dates = fired.value
        #expect(dates.count == 2)
        if dates.count == 2 {
            let gap = dates[1].timeIntervalSince(dates[0])
            #expect(gap >= 0.29 && gap < 0.6, "\(gap)")
        }
        // An absence: no wake in half a second while nothing is due.
        try await Task.sleep(for: .milliseconds(500))
        #expect(fired.value.count == 2, "no wake while nothing is due")
        timer.poke()
        _ = try await eventually(1) { fired.value.count >= 3 }
        #expect(fired.value.count == 3, "a poke looks again at once")
    }

    @Test func aPokeAfterStopWritesNowhere() async throws {
        // A change that reaches the scheduler while todayd shuts down pokes
        // a stopped timer. Its wake descriptor stays its own until the timer
        // goes, so the number is never handed to a file opened meanwhile
        // (a durable write's temporary file) for the poke to write into.
        let fired = Locked(0)
        let ended = Locked(false)
        let made = WallClockTimer(
            fire: {
                fired.withLock { $0 += 1 }
                return 3600
            }, ended: { ended.withLock { $0 = true } })
        let timer = try #require(made)
        #expect(try await eventually { fired.value == 1 }, "the timer thread runs")
        timer.stop()
        #expect(try await eventually { ended.value }, "the timer thread should end at stop()")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("poke-\(UUID().uuidString)").path
        let file = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        #expect(file >= 0)
        defer {
            close(file)
            unlink(path)
        }
        timer.poke()
        timer.poke(ifBefore: .distantPast)
        var info = stat()
        #expect(fstat(file, &info) == 0 && info.st_size == 0, "a poke after stop wrote \(info.st_size) bytes into a file")
    }

    /// Sets the clock to the time it shows, 50 µs on (the call itself takes
    /// a few), so that it never steps back; false where that is not allowed.
    static func setTheClockToItself() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        now.tv_nsec += 50_000
        if now.tv_nsec >= 1_000_000_000 {
            now.tv_nsec -= 1_000_000_000
            now.tv_sec += 1
        }
        return clock_settime(CLOCK_REALTIME, &now) == 0
    }

    /// Whether this process may set the clock (root in CI).
    static let canSetTheClock = setTheClockToItself()

    @Test(.enabled(if: canSetTheClock, "needs CAP_SYS_TIME to set the clock"))
    func settingTheClockWakesIt() async throws {
        // Asked to sleep an hour, the timer fires again as soon as the clock
        // is set (here to the time it already shows, so nothing else moves):
        // the kernel cancels an absolute CLOCK_REALTIME timer armed with
        // TFD_TIMER_CANCEL_ON_SET, and the scheduler then sees the new time.
        let fired = Locked(0)
        let timer = try #require(
            WallClockTimer {
                fired.withLock { $0 += 1 }
                return 3600
            })
        defer { timer.stop() }
        // Set only once the timer is armed: a clock set before that cancels
        // nothing, and the timer would rightly sleep its hour.
        _ = try await eventually(1) { fired.value >= 1 && timer.isArmed }
        #expect(fired.value == 1)
        #expect(Self.setTheClockToItself())
        _ = try await eventually(2) { fired.value >= 2 }
        #expect(fired.value == 2, "the timer fired \(fired.value) times; setting the clock should wake it once")
    }

    @Test func anIdleTodaydDoesNotWake() async throws {
        // The examples loaded, nothing due: the timer thread sleeps (it
        // used to look once a second).
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let tasks = "/proc/\(daemon.process.processIdentifier)/task"
        let timer = try #require(
            (try FileManager.default.contentsOfDirectory(atPath: tasks)).first { task in
                (try? String(contentsOfFile: "\(tasks)/\(task)/comm", encoding: .utf8)) == "todayd-timer\n"
            })
        let before = voluntarySwitches(task: "\(tasks)/\(timer)")
        // An absence: at most one wake (the start's last look) in 3 s.
        try await Task.sleep(for: .seconds(3))
        let woken = voluntarySwitches(task: "\(tasks)/\(timer)") - before
        #expect(before >= 0 && woken <= 1, "the timer thread woke \(woken) times in 3 s")
    }
}
