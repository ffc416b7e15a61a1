import Glibc
import Posix

/// Now, in µs since the epoch, from CLOCK_REALTIME: `time()` reads the
/// kernel's coarse clock, up to a tick behind, so an event a few
/// milliseconds after a whole second, as a timeline entry's switch is,
/// would be printed with the second before.
public func nowMicroseconds() -> UInt64 {
    let clock = wallClockNow()
    return UInt64(clamping: clock.tv_sec) &* 1_000_000 &+ UInt64(clamping: clock.tv_nsec / 1000)
}

/// A date in µs since the epoch in local time (the C library's, which
/// follows TZ and /etc/localtime): `HH:MM:SS` today, `YYYY-MM-DD HH:MM:SS`
/// on another day.
public func localTime(_ microseconds: UInt64) -> String {
    var seconds = time_t(clamping: microseconds / 1_000_000)
    var now = time_t(clamping: nowMicroseconds() / 1_000_000)
    var parts = tm()
    var today = tm()
    guard localtime_r(&seconds, &parts) != nil, localtime_r(&now, &today) != nil else { return "?" }
    func two(_ n: Int32) -> String { (n < 10 ? "0" : "") + String(n) }
    let clock = "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    if parts.tm_year == today.tm_year && parts.tm_yday == today.tm_yday { return clock }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(clock)"
}

/// A time of day to the minute, as `localTime` gives it without its
/// seconds where they are :00 (an end the user chose: `18:00`).
public func localMinute(_ microseconds: UInt64) -> String {
    let full = localTime(microseconds)
    return full.hasSuffix(":00") ? String(full.dropLast(3)) : full
}
