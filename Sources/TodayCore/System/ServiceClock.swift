import Dispatch
import FoundationEssentials
import Synchronization

/// A timer that runs `fire` when what it was set for comes, or when poked;
/// `fire` returns how many seconds to wait before it runs again. The
/// widgets' scheduler and the notifications' expiry each own one.
protocol DueTimer: Sendable {
    /// Runs `fire` again now; nothing once stopped.
    func poke()
    /// Runs `fire` again now if `date` comes before the time the timer is
    /// set for. Call after the change that made `date` due is in place.
    func poke(ifBefore date: Date)
    /// Ends it (after a `fire` under way); later pokes do nothing.
    func stop()
}

/// Where the service reads the time and what wakes it when something
/// comes due: the system's clock with the kernel's wall-clock timer, or a
/// test's `ManualClock`, which moves only when told to and runs what came
/// due before `advance` returns (as swift-nio's embedded event loop does),
/// so that schedules, timelines and expiry are tested without waiting.
public enum ServiceClock: Sendable {
    case system
    case manual(ManualClock)

    /// What time it is.
    var now: Date {
        switch self {
        case .system: Date()
        case .manual(let clock): clock.now
        }
    }

    /// A timer named `name` (its thread's name, on the system clock) that
    /// runs `fire` at once and then when it asks; nil where the kernel has
    /// no timerfd.
    func timer(named name: String, fire: @escaping @Sendable () -> Double) -> (any DueTimer)? {
        switch self {
        case .system: WallClockTimer(name: name, fire: fire)
        case .manual(let clock): clock.timer(fire: fire)
        }
    }
}

/// A clock that shows the time it was set to. `advance(by:)` and `set(to:)`
/// move it and run, before they return, each look of its timers that came
/// due; a poke runs a timer's look on that timer's queue.
public final class ManualClock: Sendable {
    private let state: Mutex<State>

    private struct State {
        var now: Date
        var timers: [ManualTimer] = []
    }

    public init(_ start: Date) {
        state = Mutex(State(now: start))
    }

    public var now: Date { state.withLock { $0.now } }

    /// Moves the clock `seconds` on.
    public func advance(by seconds: Double) {
        set(to: now.addingTimeInterval(seconds))
    }

    /// Moves the clock to `date` (back too, as a user setting the clock
    /// does: every timer then looks again).
    public func set(to date: Date) {
        let (timers, back) = state.withLock { state in
            defer { state.now = date }
            state.timers.removeAll { $0.isStopped }
            return (state.timers, date < state.now)
        }
        for timer in timers where back || timer.isDue(at: date) { timer.poke() }
        for timer in timers { timer.settle() }
    }

    fileprivate func timer(fire: @escaping @Sendable () -> Double) -> ManualTimer {
        let timer = ManualTimer(clock: self, fire: fire)
        state.withLock { $0.timers.append(timer) }
        timer.poke()
        timer.settle()
        return timer
    }
}

/// A `ManualClock`'s timer: `fire` runs on a serial queue of its own, so
/// that it never runs under its caller's locks nor twice at once.
private final class ManualTimer: DueTimer {
    private let queue = DispatchQueue(label: "todayd.manual-timer")
    private let fire: @Sendable () -> Double
    private let clock: ManualClock
    /// The clock's time it is set for; nil once stopped.
    private let deadline = Mutex<Date?>(.distantFuture)

    init(clock: ManualClock, fire: @escaping @Sendable () -> Double) {
        self.clock = clock
        self.fire = fire
    }

    func isDue(at date: Date) -> Bool {
        deadline.withLock { deadline in deadline.map { $0 <= date } ?? false }
    }

    var isStopped: Bool { deadline.withLock { $0 == nil } }

    func poke() {
        guard !isStopped else { return }
        queue.async { [self] in
            guard !isStopped else { return }
            // As on the wall clock: a change while `fire` looks pokes again.
            deadline.withLock { $0 = $0.map { _ in .distantFuture } }
            let wait = max(fire(), 0.001)
            let at = clock.now.addingTimeInterval(wait)
            deadline.withLock { $0 = $0.map { _ in at } }
        }
    }

    func poke(ifBefore date: Date) {
        guard deadline.withLock({ $0.map { date < $0 } ?? false }) else { return }
        poke()
    }

    func stop() {
        deadline.withLock { $0 = nil }
    }

    /// Returns once the looks already asked for have run.
    func settle() {
        queue.sync {}
    }
}
