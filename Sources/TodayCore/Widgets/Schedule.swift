import FoundationEssentials
import Glibc

/// When a widget's next scheduled update is due (SPEC section 5): every
/// UpdateInterval seconds with up to a tenth of it as jitter, at most
/// `dailyBudget` scheduled updates per day, and after consecutive failures
/// an exponential back-off (interval × 2ⁿ) capped at an hour, never
/// shorter than the interval itself. Pure: the time comes in as an
/// argument, so tests move it freely.
public struct Schedule: Sendable, Equatable {
    public static let dailyBudget: UInt32 = 96
    public static let maximumBackOff: TimeInterval = 3600

    /// The day the budget counts for, as days since the epoch in the
    /// local time zone.
    public var budgetDay: Int64 = 0
    /// Scheduled updates run on `budgetDay`.
    public var budgetUsed: UInt32 = 0
    /// Updates that failed in a row.
    public var consecutiveFailures: UInt32 = 0
    /// When the next scheduled update is due; nil when none is.
    public var next: Date?

    public init() {}

    /// Requested updates run every time until a provider has failed this
    /// many times in a row.
    public static let requestThreshold: UInt32 = 3
    public static let maximumRequestBackOff: TimeInterval = 60

    /// How long after the end of a failed run a requested update waits,
    /// after `failures` consecutive failures: nothing below
    /// `requestThreshold`, then 1, 2, 4 … seconds up to a minute. A client
    /// that asks in a loop cannot make todayd start a crashing provider as
    /// fast as it can fork; a fixed one runs again within a minute.
    public static func requestDelay(failures: UInt32) -> TimeInterval {
        guard failures >= requestThreshold else { return 0 }
        return min(pow(2, Double(min(failures - requestThreshold, 16))), maximumRequestBackOff)
    }

    /// Scheduled updates left on the day of `now`.
    public func left(at now: Date, localTime: LocalTime = .system) -> UInt32 {
        Self.day(of: now, localTime: localTime) == budgetDay ? Self.dailyBudget - min(budgetUsed, Self.dailyBudget) : Self.dailyBudget
    }

    /// The delay before the next scheduled update after `failures`
    /// consecutive failures, without jitter.
    public static func delay(interval: UInt32, failures: UInt32) -> TimeInterval {
        let base = TimeInterval(interval)
        guard failures > 0 else { return base }
        let backedOff = base * pow(2, Double(min(failures, 32)))
        return max(base, min(backedOff, maximumBackOff))
    }

    /// What decides the next scheduled update: an interval (SPEC section
    /// 5; 0 is none), a date a timeline's policy gives (section 9), or nothing.
    public enum Reload: Sendable, Equatable {
        case interval(UInt32)
        case at(Date)
        case none
    }

    /// The shortest time between two scheduled updates of a timeline's
    /// policy (SPEC section 9).
    public static let minimumGap: TimeInterval = 60

    /// Plans the next update after one that ended at `now` (or, with
    /// `outcome` nil, from scratch: at start and when content or interval
    /// change). `scheduled` counts the update against today's budget.
    public mutating func plan(
        at now: Date, interval: UInt32, hasContent: Bool, outcome: Bool?, scheduled: Bool,
        jitter: Double = Double.random(in: 0...1), localTime: LocalTime = .system
    ) {
        plan(at: now, reload: .interval(interval), hasContent: hasContent, outcome: outcome, scheduled: scheduled, jitter: jitter, localTime: localTime)
    }

    /// `plan` for any `Reload`. A date comes no sooner than `minimumGap`
    /// after `now` and gets up to a tenth of that gap as jitter; after a
    /// failure the back-off of an interval of `minimumGap` applies instead.
    /// Both count against the daily budget like interval updates.
    public mutating func plan(
        at now: Date, reload: Reload, hasContent: Bool, outcome: Bool?, scheduled: Bool,
        jitter: Double = Double.random(in: 0...1), localTime: LocalTime = .system
    ) {
        let interval: UInt32
        switch reload {
        case .interval(let seconds): interval = seconds
        case .none: interval = 0
        case .at(let date):
            planDate(date, at: now, hasContent: hasContent, outcome: outcome, scheduled: scheduled, jitter: jitter, localTime: localTime)
            return
        }
        count(at: now, outcome: outcome, scheduled: scheduled, localTime: localTime)
        guard hasContent, interval > 0 else {
            next = nil
            return
        }
        if outcome == nil, let pending = next, pending > now {
            // Keep a plan that survived a restart, unless it is further
            // away than one full delay (the interval got shorter).
            if pending.timeIntervalSince(now) <= Self.delay(interval: interval, failures: consecutiveFailures) * 1.1 {
                return
            }
        }
        let delay = Self.delay(interval: interval, failures: consecutiveFailures)
        var due = now.addingTimeInterval(delay + delay * 0.1 * min(max(jitter, 0), 1))
        if budgetUsed >= Self.dailyBudget {
            due = max(due, Self.startOfDay(budgetDay + 1, localTime: localTime).addingTimeInterval(delay * 0.1 * jitter))
        }
        next = due
    }

    /// Counts a run that ended at `now`: a scheduled one against the day's
    /// budget (a new day starts it afresh), a failure (`outcome` false)
    /// against the back-off, a success ending it.
    private mutating func count(at now: Date, outcome: Bool?, scheduled: Bool, localTime: LocalTime) {
        let today = Self.day(of: now, localTime: localTime)
        if today != budgetDay {
            budgetDay = today
            budgetUsed = 0
        }
        if scheduled { budgetUsed = min(budgetUsed + 1, Self.dailyBudget) }
        if let outcome { consecutiveFailures = outcome ? 0 : consecutiveFailures &+ 1 }
    }

    private mutating func planDate(
        _ date: Date, at now: Date, hasContent: Bool, outcome: Bool?, scheduled: Bool, jitter: Double, localTime: LocalTime
    ) {
        count(at: now, outcome: outcome, scheduled: scheduled, localTime: localTime)
        guard hasContent else {
            next = nil
            return
        }
        let jitterSeconds = Self.minimumGap * 0.1 * min(max(jitter, 0), 1)
        var due: Date
        if consecutiveFailures > 0 {
            due = now.addingTimeInterval(Self.delay(interval: UInt32(Self.minimumGap), failures: consecutiveFailures) + jitterSeconds)
        } else if outcome == nil {
            // From scratch (a start, a change of content): the policy's date,
            // at once when it has passed.
            due = max(date, now).addingTimeInterval(jitterSeconds)
        } else {
            due = max(date, now.addingTimeInterval(Self.minimumGap)).addingTimeInterval(jitterSeconds)
        }
        if budgetUsed >= Self.dailyBudget {
            due = max(due, Self.startOfDay(budgetDay + 1, localTime: localTime).addingTimeInterval(jitterSeconds))
        }
        next = due
    }

    static func day(of date: Date, localTime: LocalTime) -> Int64 {
        let local = date.timeIntervalSince1970 + TimeInterval(localTime.secondsFromGMT(date))
        return Int64((local / 86_400).rounded(.down))
    }

    static func startOfDay(_ day: Int64, localTime: LocalTime) -> Date {
        let local = TimeInterval(day) * 86_400
        let guess = Date(timeIntervalSince1970: local)
        return Date(timeIntervalSince1970: local - TimeInterval(localTime.secondsFromGMT(guess)))
    }
}

/// How far local time is ahead of UTC at a given moment: the system's
/// rules (TZ, /etc/localtime, as the C library reads them), or a fixed
/// offset.
public struct LocalTime: Sendable {
    public let secondsFromGMT: @Sendable (Date) -> Int

    public init(secondsFromGMT: @escaping @Sendable (Date) -> Int) {
        self.secondsFromGMT = secondsFromGMT
    }

    public static let system = LocalTime { date in
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return parts.tm_gmtoff
    }

    public static func fixed(_ seconds: Int) -> LocalTime { LocalTime { _ in seconds } }
}
