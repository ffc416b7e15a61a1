import DBus
import FoundationEssentials
import Synchronization
import TodayProtocol

/// When the scheduler looks at the widgets: the clock's timer (the
/// wall-clock timer where the kernel has timerfd), else a task that looks
/// once a second. It owns the timer; what a look does is the widget
/// service's (`runDueUpdates`).
final class WidgetScheduler: Sendable {
    /// The longest it sleeps.
    let longestWait: Double = 3600
    private let clock: ServiceClock
    private let log: Logger
    private let state = Mutex(State())

    private struct State {
        var timer: (any DueTimer)?
        var fallback: Task<Void, Never>?
    }

    init(clock: ServiceClock, log: Logger) {
        self.clock = clock
        self.log = log
    }

    /// Starts looking: `look` runs what is due and returns how many
    /// seconds to wait before it runs again (nil once its owner is gone).
    func start(_ look: @escaping @Sendable () -> Double?) {
        if let timer = clock.timer(named: "todayd-timer", fire: { look() ?? 3600 }) {
            state.withLock { $0.timer = timer }
            return
        }
        log.warning("no timerfd: the scheduler looks once a second")
        let task = Task {
            while !Task.isCancelled {
                guard let wait = look() else { return }
                try? await Task.sleep(for: .milliseconds(Int(min(wait, 1) * 1000)))
            }
        }
        state.withLock { $0.fallback = task }
    }

    /// Stops looking; later pokes do nothing.
    func stop() {
        let (timer, fallback) = state.withLock { ($0.timer, $0.fallback) }
        fallback?.cancel()
        timer?.stop()
    }

    /// What is due next may have changed: it looks again now.
    func poke() {
        state.withLock { $0.timer }?.poke()
    }

    /// A widget is next due at `due`: it looks again only if that comes
    /// before the time the timer is set for, so a panel's PerformUpdate
    /// costs no walk over every widget. Call after the run has ended: a
    /// look passes over a widget that is updating.
    func poke(ifDue due: Date?) {
        guard let due else { return }
        state.withLock { $0.timer }?.poke(ifBefore: due)
    }
}

extension WidgetService {
    /// Starts the updates that are due, switches the timeline entries whose
    /// date has come, and returns how long to wait, in seconds, before
    /// looking again: until the next entry, update or midnight (when every
    /// budget starts again), the scheduler's longest wait at most.
    func runDueUpdates() -> Double {
        let now = self.now()
        let widgets = all
        let today = Schedule.day(of: now, localTime: .system)
        var wait = min(scheduler.longestWait, Schedule.startOfDay(today + 1, localTime: .system).timeIntervalSince(now) + 0.01)
        for widget in widgets {
            // The next entry of a timeline, when its date has come.
            let switched = widget.data.withLock { data -> [(String, Value)]? in
                defer { if let next = data.timeline.nextDate { wait = min(wait, next.timeIntervalSince(now)) } }
                guard data.timeline.advance(to: now) else { return nil }
                return Self.entryProperties(of: data, at: now)
            }
            if let switched { widget.object.set(switched) }
            let due = widget.data.withLock { data -> Bool in
                guard !data.lifecycle.isUpdating, data.record.hasContent, let next = data.record.schedule.next else { return false }
                if next <= now { return true }
                wait = min(wait, next.timeIntervalSince(now))
                return false
            }
            if due {
                performUpdate(widget.id, scheduled: true) { _ in }
            } else {
                // The budget starts again at midnight.
                let left = widget.data.withLock { $0.record.schedule.left(at: now) }
                widget.object.set(Today.Widget.scheduledUpdatesLeftToday.name, .uint32(left))
            }
        }
        return max(wait, 0.05)
    }
}
