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

/// Do Not Disturb for a while: the end `seconds` after `now` (seconds since
/// 1970), up to the next whole minute, so that it reads as a time of day
/// (`until 18:42`), as iOS gives it.
public func wholeMinute(_ seconds: UInt64, after now: UInt64) -> UInt64 {
    (now &+ seconds &+ 59) / 60 * 60
}

/// The next `hour`:`minute` (local time) after `now` (seconds since
/// 1970): today's where it is still to come, else tomorrow's; nil where
/// the C library cannot say.
public func nextLocalTime(hour: Int32, minute: Int32, after now: UInt64) -> UInt64? {
    var clock = time_t(clamping: now)
    var day = tm()
    guard localtime_r(&clock, &day) != nil else { return nil }
    for _ in 0..<2 {
        var at = day
        (at.tm_hour, at.tm_min, at.tm_sec, at.tm_isdst) = (hour, minute, 0, -1)
        let seconds = mktime(&at)
        if seconds > clock { return UInt64(seconds) }
        day.tm_mday += 1
    }
    return nil
}
