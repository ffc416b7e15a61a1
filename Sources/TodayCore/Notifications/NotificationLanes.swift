import Synchronization

/// Notify and AddNotification calls in lanes, one per sender, taken in
/// turn. A turn answers up to `turnLength` of a sender's calls, one after
/// the other; its next turn is a task of its own, behind the other
/// senders' turns: a flood from one connection holds one task at a time,
/// so another app's notification waits for one turn of each busy sender,
/// not for everything the flood has sent (SPEC section 14: a flood from one
/// app never delays another app's notification), and a sender with many
/// calls in flight pays for one task a turn rather than one a call.
///
/// A lane holds at most `depth` calls; a sender with that many waiting is
/// refused at once, before anything it sent is read.
final class NotificationLanes: Sendable {
    typealias Work = @Sendable () async -> Void

    /// A sender's calls. A lane exists while a task runs it: it is made
    /// with the task that takes its first call, and let go by the turn
    /// that finds it empty. Changed in place in the dictionary, never
    /// copied out of it: a copy would copy every call still waiting.
    private struct Lane {
        /// A queue: the calls from `head` on wait; those before it have
        /// been taken (and let go, so that what they hold is freed as they
        /// run, not when the lane empties).
        private var waiting: [Work?] = []
        private var head = 0

        var count: Int { waiting.count - head }
        var isEmpty: Bool { head == waiting.count }

        mutating func append(_ work: @escaping Work) { waiting.append(work) }

        mutating func next() -> Work? {
            guard head < waiting.count else { return nil }
            let work = waiting[head]
            waiting[head] = nil
            head += 1
            // A lane that never empties (a sender that keeps many calls in
            // flight) drops its taken slots once they are half of it.
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 32, head * 2 >= waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return work
        }
    }

    private let lanes = Mutex<[String: Lane]>([:])
    /// Calls one sender may have waiting.
    let depth: Int
    /// Calls a turn answers at most.
    let turnLength: Int

    init(depth: Int = 256, turnLength: Int = 8) {
        self.depth = depth
        self.turnLength = turnLength
    }

    /// Whether `sender` has no call waiting or running: one answered now
    /// overtakes nothing of its own.
    func isIdle(_ sender: String) -> Bool {
        lanes.withLock { $0[sender] == nil }
    }

    /// Queues `work` in `sender`'s lane and starts the lane where it is
    /// idle; false, and nothing queued, where the lane is full.
    func enqueue(_ sender: String, _ work: @escaping Work) -> Bool {
        let start: Bool? = lanes.withLock { lanes in
            let start = lanes[sender] == nil
            guard lanes[sender, default: Lane()].count < depth else { return nil }
            lanes[sender, default: Lane()].append(work)
            return start
        }
        guard let start else { return false }
        if start { Task { await self.turn(sender) } }
        return true
    }

    /// Runs `sender`'s next calls (a turn's worth at most), then gives the
    /// lane's next turn to a new task (behind the others' turns), or lets
    /// the lane go when empty.
    private func turn(_ sender: String) async {
        for _ in 0..<turnLength {
            guard let work = lanes.withLock({ $0[sender]?.next() }) else { break }
            await work()
        }
        let more = lanes.withLock { lanes in
            guard let lane = lanes[sender], !lane.isEmpty else {
                lanes[sender] = nil
                return false
            }
            return true
        }
        if more { Task { await self.turn(sender) } }
    }
}
