import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// The lanes Notify and AddNotification wait in: a sender's calls in the
/// order they came, senders in turn, ready calls on the loop, the rest in
/// tasks. The loop here is a queue of jobs the test runs a turn at a time.
@Suite struct NotificationLanesTests {
    /// A connection's loop: jobs run when the test says, each turn taking
    /// what was queued before it began.
    final class Loop: Sendable {
        private let jobs = Locked<[@Sendable () -> Void]>([])
        private let running = Locked(false)
        let open = Locked(true)

        func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
            guard open.value else { return false }
            jobs.withLock { $0.append(job) }
            return true
        }

        var isRunning: Bool { running.value }
        var queued: Int { jobs.value.count }

        /// Runs the jobs queued now; returns how many.
        @discardableResult
        func turn() -> Int {
            var now: [@Sendable () -> Void] = []
            jobs.withLock { jobs in
                now = jobs
                jobs.removeAll()
            }
            running.value = true
            for job in now { job() }
            running.value = false
            return now.count
        }
    }

    /// What ran, in order, and whether it ran on the loop.
    final class Journal: Sendable {
        let entries = Locked<[(name: String, onLoop: Bool)]>([])
        func ready(_ name: String, _ loop: Loop) -> NotificationLanes.Work {
            .ready { self.entries.withLock { $0.append((name, loop.isRunning)) } }
        }
        func waiting(_ name: String, _ loop: Loop) -> NotificationLanes.Work {
            .waiting {
                await Task.yield()
                self.entries.withLock { $0.append((name, loop.isRunning)) }
            }
        }
        var names: [String] { entries.value.map(\.name) }
    }

    @Test func readyCallsTakeTheirTurnsOnTheLoopAndSendersAlternate() throws {
        let loop = Loop()
        let lanes = NotificationLanes(depth: 64, turnLength: 8, onLoop: loop.submit)
        let journal = Journal()
        for n in 1...20 { #expect(lanes.enqueue(":1.1", journal.ready("a\(n)", loop))) }
        for n in 1...2 { #expect(lanes.enqueue(":1.2", journal.ready("b\(n)", loop))) }
        #expect(!lanes.isIdle(":1.1") && !lanes.isIdle(":1.2"))
        #expect(journal.names.isEmpty, "nothing runs before the loop's turn")

        // One turn of each sender a turn of the loop, the flood's next
        // behind the other's.
        #expect(loop.turn() == 2)
        #expect(journal.names == (1...8).map { "a\($0)" } + ["b1", "b2"])
        #expect(lanes.isIdle(":1.2"), "a lane that empties is let go")
        loop.turn()
        loop.turn()
        #expect(journal.names == (1...8).map { "a\($0)" } + ["b1", "b2"] + (9...20).map { "a\($0)" })
        #expect(journal.entries.value.allSatisfy { $0.onLoop }, "every ready call ran on the loop")
        #expect(lanes.isIdle(":1.1") && loop.queued == 0)
    }

    /// The tasks here share the cooperative pool with every other test of
    /// the run, which can keep it busy for seconds: the waits are long.
    @Test func aCallThatWaitsTakesTheReadyOnesBehindItToATask() async throws {
        let loop = Loop()
        let lanes = NotificationLanes(depth: 64, turnLength: 8, onLoop: loop.submit)
        let journal = Journal()
        #expect(lanes.enqueue(":1.1", journal.waiting("first", loop)))
        for n in 1...3 { #expect(lanes.enqueue(":1.1", journal.ready("r\(n)", loop))) }
        #expect(lanes.enqueue(":1.1", journal.waiting("second", loop)))
        #expect(lanes.enqueue(":1.1", journal.ready("last", loop)))
        #expect(try await eventually(60) { journal.entries.value.count == 6 }, "\(journal.names)")
        #expect(journal.names == ["first", "r1", "r2", "r3", "second", "last"], "in the order they came")
        #expect(journal.entries.value.allSatisfy { !$0.onLoop }, "all in the task's turn")
        #expect(loop.queued == 0)
        #expect(try await eventually(60) { lanes.isIdle(":1.1") })

        // Ready calls first: the loop takes them up to the waiting one,
        // whose turn is a task that takes the rest.
        #expect(lanes.enqueue(":1.1", journal.ready("x1", loop)))
        #expect(lanes.enqueue(":1.1", journal.waiting("x2", loop)))
        #expect(lanes.enqueue(":1.1", journal.ready("x3", loop)))
        loop.turn()
        #expect(try await eventually(60) { journal.entries.value.count == 9 })
        #expect(journal.names.suffix(3) == ["x1", "x2", "x3"])
        #expect(journal.entries.value.suffix(3).map(\.onLoop) == [true, false, false])
    }

    /// A task's turn given on the loop thread waits for the loop's next
    /// turn: the loop answers its turn's calls at the turn's end, and a
    /// sender's later call must not overtake them.
    @Test func aTaskTurnGivenOnTheLoopStartsAtItsNextTurn() async throws {
        let loop = Loop()
        let lanes = NotificationLanes(depth: 64, turnLength: 8, onLoop: loop.submit, isOnLoop: { loop.isRunning })
        let journal = Journal()
        // Given on the loop (as a call read from the bus is): queued there.
        let accepted = Locked(false)
        #expect(loop.submit { accepted.value = lanes.enqueue(":1.1", journal.waiting("w1", loop)) })
        loop.turn()
        #expect(accepted.value)
        try await Task.sleep(for: .milliseconds(50))
        #expect(journal.names.isEmpty, "the task started before the loop's next turn")
        #expect(loop.queued == 1)
        loop.turn()
        #expect(try await eventually(60) { journal.names == ["w1"] })
        // Given off the loop: the task starts at once.
        #expect(lanes.enqueue(":1.2", journal.waiting("w2", loop)))
        #expect(try await eventually(60) { journal.names == ["w1", "w2"] })
        #expect(loop.queued == 0)
    }

    @Test func aFullLaneRefusesAndAClosedLoopFallsBackToATask() async throws {
        let loop = Loop()
        let lanes = NotificationLanes(depth: 3, turnLength: 8, onLoop: loop.submit)
        let journal = Journal()
        for n in 1...3 { #expect(lanes.enqueue(":1.1", journal.ready("\(n)", loop))) }
        #expect(!lanes.enqueue(":1.1", journal.ready("4", loop)), "a sender with a lane's depth waiting is refused")
        #expect(lanes.enqueue(":1.2", journal.ready("other", loop)), "another sender is not")
        loop.turn()
        #expect(journal.names == ["1", "2", "3", "other"])

        // The connection closed: the calls still run (and their answers
        // fail at the connection), in a task.
        loop.open.value = false
        #expect(lanes.enqueue(":1.1", journal.ready("after", loop)))
        #expect(lanes.enqueue(":1.1", journal.ready("after 2", loop)))
        #expect(try await eventually(60) { journal.entries.value.count == 6 })
        #expect(journal.names.suffix(2) == ["after", "after 2"])
    }
}
