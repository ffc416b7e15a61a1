import CSystem
import Glibc

/// What a thread waits on: descriptors that become readable or writable,
/// an event counter other threads wake it with, and a wall-clock timer.
public enum Poll {
    /// One descriptor to wait on, and what it is waited for.
    public struct Entry {
        public let descriptor: FileDescriptor
        public let events: Int16

        public init(_ descriptor: FileDescriptor, events: Int16 = Int16(POLLIN)) {
            self.descriptor = descriptor
            self.events = events
        }
    }

    /// Waits until one of `entries` is ready or `timeout` milliseconds have
    /// passed (-1: no limit); returns what happened to each, in order (0
    /// for none). An interrupting signal ends the wait early, with nothing
    /// ready, so that the caller looks at its clock again.
    /// The corresponding C function is `poll`.
    public static func wait(_ entries: [Entry], timeout: Int32) throws(Errno) -> [Int16] {
        var polls = entries.map { pollfd(fd: $0.descriptor.rawValue, events: $0.events, revents: 0) }
        do {
            _ = try withExtendedLifetime(entries) { () throws(Errno) in
                try failingWithErrno(.poll) { Glibc.poll(&polls, nfds_t(polls.count), timeout) }
            }
        } catch Errno.interrupted {
            return Array(repeating: 0, count: entries.count)
        }
        return polls.map(\.revents)
    }

    /// `wait` for descriptors a C library owns (libdbus's watches), in
    /// `entries`, whose `revents` it fills; returns how many are ready, 0
    /// where a signal ended the wait. For loops that poll at every message:
    /// nothing is allocated.
    public static func wait(_ entries: inout [pollfd], timeout: Int32) throws(Errno) -> Int {
        do {
            return Int(try failingWithErrno(.poll) { Glibc.poll(&entries, nfds_t(entries.count), timeout) })
        } catch Errno.interrupted {
            for index in entries.indices { entries[index].revents = 0 }
            return 0
        }
    }
}

extension FileDescriptor {
    /// A new event counter that wakes a thread polling it.
    /// The corresponding C function is `eventfd`.
    public static func eventCounter(nonBlocking: Bool = false) throws(Errno) -> FileDescriptor {
        let flags = Int32(EFD_CLOEXEC) | (nonBlocking ? Int32(EFD_NONBLOCK) : 0)
        return FileDescriptor(owning: try failingWithErrno(.eventfd) { eventfd(0, flags) })
    }

    /// Adds one to an event counter (`eventCounter()`): it reads as ready.
    public func signal() throws(Errno) {
        var one: UInt64 = 1
        _ = try retryingInterrupts(.write) { Glibc.write(rawValue, &one, 8) }
    }

    /// Reads an event counter or a timer back to zero, so that it is no
    /// longer ready. A timer whose clock was set answers ECANCELED, which
    /// resets it as well.
    public func drain() {
        var count: UInt64 = 0
        _ = try? retryingInterrupts(.read) { Glibc.read(rawValue, &count, 8) }
    }

    /// A new timer on the wall clock (CLOCK_REALTIME), disarmed.
    /// The corresponding C function is `timerfd_create`.
    public static func wallClockTimer() throws(Errno) -> FileDescriptor {
        FileDescriptor(owning: try failingWithErrno(.timer) { timerfd_create(CLOCK_REALTIME, Int32(TFD_CLOEXEC)) })
    }

    /// Arms a wall-clock timer for the absolute time `date`; setting the
    /// clock wakes it as well (TFD_TIMER_CANCEL_ON_SET).
    /// The corresponding C function is `timerfd_settime`.
    public func arm(at date: timespec) throws(Errno) {
        var setting = itimerspec(it_interval: timespec(), it_value: date)
        _ = try failingWithErrno(.timer) {
            timerfd_settime(rawValue, Int32(TFD_TIMER_ABSTIME) | Int32(TFD_TIMER_CANCEL_ON_SET), &setting, nil)
        }
    }
}

extension FileDescriptor {
    /// A new timer on the monotonic clock (CLOCK_MONOTONIC), disarmed and
    /// non-blocking. The corresponding C function is `timerfd_create`.
    public static func monotonicTimer() throws(Errno) -> FileDescriptor {
        FileDescriptor(owning: try failingWithErrno(.timer) { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) })
    }

    /// Arms a monotonic timer, once, for `nanoseconds` on the monotonic
    /// clock (`monotonicNanoseconds()`), absolute. A time already past
    /// makes it ready at once. The corresponding C function is
    /// `timerfd_settime`.
    public func arm(atMonotonicNanoseconds nanoseconds: Int64) throws(Errno) {
        // Zero would disarm it: the earliest time is one nanosecond.
        let time = max(nanoseconds, 1)
        var setting = itimerspec(
            it_interval: timespec(), it_value: timespec(tv_sec: Int(time / 1_000_000_000), tv_nsec: Int(time % 1_000_000_000)))
        _ = try failingWithErrno(.timer) { timerfd_settime(rawValue, Int32(TFD_TIMER_ABSTIME), &setting, nil) }
    }
}

/// The wall clock's time now. The corresponding C function is `clock_gettime`.
public func wallClockNow() -> timespec {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return now
}

extension FileDescriptor {
    /// A new inotify instance, non-blocking. The corresponding C function
    /// is `inotify_init1`.
    public static func fileEvents() throws(Errno) -> FileDescriptor {
        FileDescriptor(owning: try failingWithErrno(.open) { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) })
    }

    /// Watches `path` for the events of `mask`; returns the watch's number.
    /// The corresponding C function is `inotify_add_watch`.
    public func addWatch(_ path: String, mask: UInt32) throws(Errno) -> Int32 {
        try retryingInterrupts(.open) { inotify_add_watch(rawValue, path, mask) }
    }

    /// Stops the watch `watch`. The corresponding C function is `inotify_rm_watch`.
    public func removeWatch(_ watch: Int32) {
        _ = inotify_rm_watch(rawValue, watch)
    }
}

/// The monotonic clock's time now, in nanoseconds.
/// The corresponding C function is `clock_gettime` (CLOCK_MONOTONIC).
public func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}
