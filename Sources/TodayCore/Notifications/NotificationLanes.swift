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
    /// that finds it empty.
    private struct Lane {
        var waiting: [Work] = []
        /// The next of `waiting` to run (the array is a queue).
        var head = 0

        var isEmpty: Bool { head == waiting.count }

        mutating func next() -> Work? {
            guard !isEmpty else { return nil }
            defer {
                head += 1
                if head == waiting.count {
                    waiting.removeAll(keepingCapacity: true)
                    head = 0
                }
            }
            return waiting[head]
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
            var lane = lanes[sender] ?? Lane()
            guard lane.waiting.count - lane.head < depth else { return nil }
            lane.waiting.append(work)
            lanes[sender] = lane
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
