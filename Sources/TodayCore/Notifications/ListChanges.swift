import Dispatch
import Synchronization

/// NotificationsChanged, sent at most once a `window`: a change after a
/// quiet window goes out at once; changes that follow it within the window
/// are gathered and go out together when it ends. A burst of notifications
/// (an app catching up, a mail client syncing) costs its listeners and the
/// bus one signal every few milliseconds rather than one a notification,
/// and a lone change waits for nothing.
///
/// The ids are merged as a listener would apply them one by one: an id
/// changed then removed is only removed (ids are never given again), and
/// each appears once, in the order it first changed.
final class ListChanges: Sendable {
    typealias Send = @Sendable (_ changed: [UInt32], _ removed: [UInt32]) -> Void
    /// Runs a job once a number of nanoseconds have passed.
    typealias Later = @Sendable (_ nanoseconds: UInt64, _ job: @escaping @Sendable () -> Void) -> Void

    /// The changes of a window, as they came; merged when they are taken,
    /// once a window rather than at every change.
    private struct Gathered {
        var changed: [UInt32] = []
        var removed: [UInt32] = []
        /// When the last signal went (DispatchTime's nanoseconds), 0 for never.
        var lastSent: UInt64 = 0
        /// A send at the end of the window is due: changes gather until it.
        var due = false

        mutating func add(changed: [UInt32], removed: [UInt32]) {
            self.changed.append(contentsOf: changed)
            self.removed.append(contentsOf: removed)
        }

        /// The ids of the window, each once, in the order it first changed
        /// or was removed; a removed id is only removed. Empties the
        /// window, keeping its room for the next.
        mutating func take() -> (changed: [UInt32], removed: [UInt32]) {
            defer {
                changed.removeAll(keepingCapacity: true)
                removed.removeAll(keepingCapacity: true)
                due = false
            }
            var seen = Set<UInt32>(minimumCapacity: changed.count + removed.count)
            let gone = removed.filter { seen.insert($0).inserted }
            let kept = changed.filter { seen.insert($0).inserted }
            return (kept, gone)
        }
    }

    private let gathered = Mutex(Gathered())
    private let window: UInt64
    private let send: Send
    private let later: Later

    /// `send` is called under this object's lock, so that signals leave in
    /// the order of the changes; it must not come back here. `later` runs
    /// the send at the end of a window: the service hands it to the
    /// connection's loop thread, which sends it without waking another
    /// thread; by default a dispatch queue.
    init(window: Duration = .milliseconds(5), later: Later? = nil, send: @escaping Send) {
        let (seconds, attoseconds) = window.components
        self.window = UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
        self.send = send
        self.later =
            later ?? { nanoseconds, job in
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), execute: job)
            }
    }

    /// A change of the list: announced now, or at the end of the window.
    func note(changed: [UInt32], removed: [UInt32]) {
        let wait = gathered.withLock { gathered -> UInt64? in
            gathered.add(changed: changed, removed: removed)
            guard !gathered.due else { return nil }
            let now = DispatchTime.now().uptimeNanoseconds
            let since = now &- gathered.lastSent
            if gathered.lastSent == 0 || since >= window {
                let (changed, removed) = gathered.take()
                gathered.lastSent = now
                send(changed, removed)
                return nil
            }
            gathered.due = true
            return window - since
        }
        guard let wait else { return }
        later(wait) { [weak self] in self?.sendGathered() }
    }

    private func sendGathered() {
        gathered.withLock { gathered in
            let (changed, removed) = gathered.take()
            gathered.lastSent = DispatchTime.now().uptimeNanoseconds
            send(changed, removed)
        }
    }
}
