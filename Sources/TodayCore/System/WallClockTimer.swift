import CSystem
import DBus
import FoundationEssentials
import Glibc
import Posix
import Synchronization

/// The scheduler's one timer, for every widget: a thread of its own that
/// runs `fire` and sleeps until the wall-clock time it returns, on a
/// timerfd (CLOCK_REALTIME, absolute, TFD_TIMER_CANCEL_ON_SET). A time
/// that passes during a suspend fires at the resume; setting the clock
/// wakes it at once, and `fire` then sees the new time. `poke()` wakes it
/// when something changed what is due next (an update recorded, a widget
/// added, content hidden).
final class WallClockTimer: Sendable {
    private let timer: Int32
    private let wake: Int32
    private let stopped = Atomic(false)
    /// The wall-clock time it is set for, in seconds since 1970; infinity
    /// while `fire` runs and until the timer is set again.
    private let deadline = Atomic<Double>(.infinity)

    /// Starts the thread, or returns nil where the kernel has no timerfd.
    /// `fire` returns how many seconds to sleep before calling it again.
    init?(fire: @escaping @Sendable () -> Double) {
        let timer = timerfd_create(CLOCK_REALTIME, Int32(TFD_CLOEXEC))
        guard timer >= 0 else { return nil }
        let wake = eventfd(0, Int32(EFD_CLOEXEC))
        guard wake >= 0 else {
            close(timer)
            return nil
        }
        self.timer = timer
        self.wake = wake
        do {
            try Threads.detach { [self] in loop(fire) }
        } catch {
            close(timer)
            close(wake)
            return nil
        }
    }

    /// Runs `fire` again now.
    func poke() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// Runs `fire` again now if `date` comes before the time the timer is
    /// set for; otherwise that `fire` sees it. Call after the change that
    /// made `date` due is in place.
    func poke(ifBefore date: Date) {
        guard date.timeIntervalSince1970 < deadline.load(ordering: .acquiring) else { return }
        poke()
    }

    /// Ends the thread (after a `fire` under way) and closes the timer.
    func stop() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        poke()
    }

    private func loop(_ fire: @Sendable () -> Double) {
        today_set_thread_name("todayd-timer")
        while !stopped.load(ordering: .sequentiallyConsistent) {
            // What changes while `fire` looks may come too late for it to
            // see: until the timer is set again, every change pokes.
            deadline.store(.infinity, ordering: .sequentiallyConsistent)
            let wait = fire()
            deadline.store(arm(seconds: wait), ordering: .sequentiallyConsistent)
            var fds = [pollfd(fd: timer, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { break }
            var count: UInt64 = 0
            // ECANCELED: the clock was set; either way, look again.
            if fds[0].revents != 0 { _ = read(timer, &count, 8) }
            if fds[1].revents != 0 { _ = read(wake, &count, 8) }
        }
        close(timer)
        close(wake)
    }

    /// Arms the timer for `seconds` from now, as an absolute wall-clock
    /// time; returns that time, in seconds since 1970.
    private func arm(seconds: Double) -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let wait = min(max(seconds, 0.001), 86_400 * 365)
        let whole = Int(wait)
        var nanoseconds = Int(now.tv_nsec) + Int((wait - Double(whole)) * 1e9)
        var second = now.tv_sec + whole
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            second += 1
        }
        var setting = itimerspec(it_interval: timespec(), it_value: timespec(tv_sec: second, tv_nsec: nanoseconds))
        _ = timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME) | Int32(TFD_TIMER_CANCEL_ON_SET), &setting, nil)
        return Double(second) + Double(nanoseconds) / 1e9
    }
}
