import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

extension TodayService {
    // MARK: Schedule

    /// Starts the updates that are due, switches the timeline entries whose
    /// date has come, and returns how long to wait, in seconds, before
    /// looking again: until the next entry, update or midnight (when every
    /// budget starts again), `longestWait` at most.
    func runDueUpdates() -> Double {
        let now = self.now()
        let widgets = state.withLock { Array($0.widgets.values) }
        let today = Schedule.day(of: now, localTime: .system)
        var wait = min(longestWait, Schedule.startOfDay(today + 1, localTime: .system).timeIntervalSince(now) + 0.01)
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
