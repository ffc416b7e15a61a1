import Synchronization

/// Notify and AddNotification calls in lanes, one per sender, taken in
/// turn. A turn answers up to `turnLength` of a sender's calls, one after
/// the other; its next turn comes behind the other senders' turns: a flood
/// from one connection holds one turn at a time, so another app's
/// notification waits for one turn of each busy sender, not for everything
/// the flood has sent (SPEC section 14: a flood from one app never delays
/// another app's notification), and a sender with many calls in flight
/// pays for one hand-over a turn rather than one a call.
///
/// A call that has nothing to wait for (`Work.ready`) takes its turn on
/// the connection's loop thread (`onLoop`), between two reads from the bus:
/// no thread is woken for it, and its answer leaves with the turn's others. A call that must wait (`Work.waiting`: who its caller
/// is, a picture to compress) takes its turn in a task, with the ready
/// calls queued behind it.
///
/// A lane holds at most `depth` calls; a sender with that many waiting is
/// refused at once, before anything it sent is read.
final class NotificationLanes: Sendable {
    enum Work: Sendable {
        /// Work that never waits, short enough for the loop thread.
        case ready(@Sendable () -> Void)
        /// Work that awaits something, or is long.
        case waiting(@Sendable () async -> Void)

        var isReady: Bool {
            if case .ready = self { true } else { false }
        }
    }

    /// A sender's calls. A lane exists while a turn is due or running: it
    /// is made with the turn that takes its first call, and let go by the
    /// turn that finds it empty. Changed in place in the dictionary, never
    /// copied out of it: a copy would copy every call still waiting.
    private struct Lane {
        /// A queue: the calls from `head` on wait; those before it have
        /// been taken (and let go, so that what they hold is freed as they
        /// run, not when the lane empties).
        private var waiting: [Work?] = []
        private var head = 0

        /// A turn is due or running: set by the call that makes the lane.
        var hasTurn = false

        var count: Int { waiting.count - head }
        var isEmpty: Bool { head == waiting.count }
        /// The next call's work, without taking it.
        var first: Work? { head < waiting.count ? waiting[head] : nil }

        mutating func append(_ work: Work) { waiting.append(work) }

        /// The next call's work where it is ready, taken; nil, and nothing
        /// taken, where it waits or there is none.
        mutating func nextIfReady() -> Work? {
            guard first?.isReady == true else { return nil }
            return next()
        }

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
    /// Runs a job on the connection's loop thread, after the jobs before
    /// it; false where it cannot (the connection is closed).
    private let onLoop: @Sendable (@escaping @Sendable () -> Void) -> Bool
    /// Whether the calling thread is the loop thread.
    private let isOnLoop: @Sendable () -> Bool

    init(
        depth: Int = 256, turnLength: Int = 8, onLoop: @escaping @Sendable (@escaping @Sendable () -> Void) -> Bool,
        isOnLoop: @escaping @Sendable () -> Bool = { false }
    ) {
        self.depth = depth
        self.turnLength = turnLength
        self.onLoop = onLoop
        self.isOnLoop = isOnLoop
    }

    /// Whether `sender` has no call waiting or running: one answered now
    /// overtakes nothing of its own.
    func isIdle(_ sender: String) -> Bool {
        lanes.withLock { $0[sender] == nil }
    }

    /// Queues `work` in `sender`'s lane and gives the lane a turn where it
    /// is idle; false, and nothing queued, where the lane is full.
    func enqueue(_ sender: String, _ work: Work) -> Bool {
        // One look in the dictionary: a lane made here is empty, so never
        // full, and has no turn yet.
        let start: Bool? = lanes.withLock { lanes in
            Self.queue(work, in: &lanes[sender, default: Lane()], depth: depth)
        }
        guard let start else { return false }
        if start { schedule(sender, ready: work.isReady) }
        return true
    }

    /// Queues `work` in `lane`; whether the lane needs a turn started, or
    /// nil where it is full.
    private static func queue(_ work: Work, in lane: inout Lane, depth: Int) -> Bool? {
        guard lane.count < depth else { return nil }
        lane.append(work)
        defer { lane.hasTurn = true }
        return !lane.hasTurn
    }

    /// Gives `sender`'s lane its next turn: on the loop thread where its
    /// next call is ready, else in a task. A task's turn given on the loop
    /// thread starts at the loop's next turn: the calls the loop answered
    /// in this one are answered at its end (`NotificationService.keepTurn`),
    /// and the sender's later calls never overtake them.
    private func schedule(_ sender: String, ready: Bool) {
        if ready, onLoop({ self.loopTurn(sender) }) { return }
        if isOnLoop(), onLoop({ Task { await self.taskTurn(sender) } }) { return }
        Task { await self.taskTurn(sender) }
    }

    /// A turn on the loop thread: the ready calls at the head of the lane.
    private func loopTurn(_ sender: String) {
        for _ in 0..<turnLength {
            let work = lanes.withLock { $0[sender]?.nextIfReady() }
            guard case .ready(let run)? = work else { break }
            run()
        }
        next(sender)
    }

    /// A turn in a task: whatever comes, the ready calls behind a waiting
    /// one included (they are not handed back to the loop one by one).
    private func taskTurn(_ sender: String) async {
        for _ in 0..<turnLength {
            guard let work = lanes.withLock({ $0[sender]?.next() }) else { break }
            switch work {
            case .ready(let run): run()
            case .waiting(let run): await run()
            }
        }
        next(sender)
    }

    /// After a turn: the lane's next turn, behind the others', or the
    /// lane let go where it is empty.
    private func next(_ sender: String) {
        let ready: Bool? = lanes.withLock { lanes in
            guard let first = lanes[sender]?.first else {
                lanes[sender] = nil
                return nil
            }
            return first.isReady
        }
        if let ready { schedule(sender, ready: ready) }
    }
}
