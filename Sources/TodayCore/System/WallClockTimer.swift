import CSystem
import DBus
import FoundationEssentials
import Posix
import Synchronization

/// A `DueTimer` on the system's clock (the widgets' scheduler has one, the
/// notifications' expiry another): a thread of its own that runs `fire`
/// and sleeps until the wall-clock time it returns, on a
/// timerfd (CLOCK_REALTIME, absolute, TFD_TIMER_CANCEL_ON_SET). A time
/// that passes during a suspend fires at the resume; setting the clock
/// wakes it at once, and `fire` then sees the new time. `poke()` wakes it
/// when something changed what is due next (an update recorded, a widget
/// added, content hidden).
///
/// The timer owns both of its descriptors: they close when it goes, never
/// under a `poke()`, so a poke that comes after `stop()` (a change during
/// todayd's shutdown) wakes nobody and writes to no other file.
final class WallClockTimer: DueTimer {
    private let timer: FileDescriptor
    private let wake: FileDescriptor
    private let stopped = Atomic(false)
    /// The wall-clock time it is set for, in seconds since 1970; infinity
    /// while `fire` runs and until the timer is set again.
    private let deadline = Atomic<Double>(.infinity)

    /// Starts the thread, named `name`, or returns nil where the kernel has
    /// no timerfd. `fire` returns how many seconds to sleep before calling
    /// it again; `ended` runs on the thread as it ends, after `stop()`.
    init?(name: String = "todayd-timer", fire: @escaping @Sendable () -> Double, ended: @escaping @Sendable () -> Void = {}) {
        guard let timer = try? FileDescriptor.wallClockTimer(), let wake = try? FileDescriptor.eventCounter() else { return nil }
        self.timer = timer
        self.wake = wake
        do {
            try Threads.detach { [self] in
                today_set_thread_name(name)
                loop(fire)
                ended()
            }
        } catch {
            return nil
        }
    }

    /// Whether the timer is set (after `fire` returned and the kernel took
    /// the time): from then on, setting the clock wakes it.
    var isArmed: Bool { deadline.load(ordering: .acquiring).isFinite }

    /// Runs `fire` again now; nothing once stopped.
    func poke() {
        guard !stopped.load(ordering: .sequentiallyConsistent) else { return }
        // A full counter (2^64 - 2 pokes) is already ready to read.
        try? wake.signal()
    }

    /// Runs `fire` again now if `date` comes before the time the timer is
    /// set for; otherwise that `fire` sees it. Call after the change that
    /// made `date` due is in place.
    func poke(ifBefore date: Date) {
        guard date.timeIntervalSince1970 < deadline.load(ordering: .acquiring) else { return }
        poke()
    }

    /// Ends the thread (after a `fire` under way); later pokes do nothing.
    func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        try? wake.signal()
    }

    private func loop(_ fire: @Sendable () -> Double) {
        let entries = [Poll.Entry(timer), Poll.Entry(wake)]
        while !stopped.load(ordering: .sequentiallyConsistent) {
            // What changes while `fire` looks may come too late for it to
            // see: until the timer is set again, every change pokes.
            deadline.store(.infinity, ordering: .sequentiallyConsistent)
            let armed = arm(seconds: fire())
            deadline.store(armed ?? .infinity, ordering: .sequentiallyConsistent)
            // A timer that cannot be armed: look again in a second.
            guard let ready = try? Poll.wait(entries, timeout: armed == nil ? 1000 : -1) else { break }
            // ECANCELED: the clock was set; either way, look again.
            if ready[0] != 0 { timer.drain() }
            if ready[1] != 0 { wake.drain() }
        }
    }

    /// Arms the timer for `seconds` from now, as an absolute wall-clock
    /// time; returns that time, in seconds since 1970, or nil where the
    /// kernel refused it.
    private func arm(seconds: Double) -> Double? {
        let now = wallClockNow()
        let wait = min(max(seconds, 0.001), 86_400 * 365)
        let whole = Int(wait)
        var nanoseconds = Int(now.tv_nsec) + Int((wait - Double(whole)) * 1e9)
        var second = now.tv_sec + whole
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            second += 1
        }
        guard (try? timer.arm(at: timespec(tv_sec: second, tv_nsec: nanoseconds))) != nil else { return nil }
        return Double(second) + Double(nanoseconds) / 1e9
    }
}
