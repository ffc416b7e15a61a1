@testable import DBus
import Foundation
import Glibc
import TestSupport
import Testing

/// `Connection.submit(after:_:)`: work for a later turn of the loop.
@Suite struct TimedJobTests {
    @Test func timedJobsRunOnTheLoopThreadInTheOrderOfTheirDeadlines() async throws {
        try await withPrivateBus { (_: BusDaemon, connection: Connection) async throws in
            let ran = Locked<[(name: String, onLoop: Bool, after: Duration)]>([])
            let start = ContinuousClock.now
            let job = { @Sendable (name: String) -> @Sendable () -> Void in
                { ran.value.append((name, connection.isOnLoopThread, ContinuousClock.now - start)) }
            }
            // From a thread other than the loop's: the loop, waiting with no
            // deadline of its own, has to be woken to look at them.
            #expect(connection.submit(after: .milliseconds(300), job("late")))
            #expect(connection.submit(after: .milliseconds(100), job("soon")))
            #expect(connection.submit(after: .zero, job("now")))
            #expect(try await eventually(5) { ran.value.count == 3 })
            let order = ran.value
            #expect(order.map(\.name) == ["now", "soon", "late"])
            let allOnLoop = order.allSatisfy { $0.onLoop }
            #expect(allOnLoop, "every job ran on the loop thread")
            #expect(order[1].after >= .milliseconds(100) && order[2].after >= .milliseconds(300), "\(order.map(\.after))")
        }
    }

    @Test func aJobTimedFromTheLoopThreadKeepsItsDeadline() async throws {
        try await withPrivateBus { (_: BusDaemon, connection: Connection) async throws in
            let after = Locked<Duration?>(nil)
            connection.submit {
                let start = ContinuousClock.now
                connection.submit(after: .milliseconds(150)) { after.value = ContinuousClock.now - start }
            }
            #expect(try await eventually(5) { after.value != nil })
            let waited = try #require(after.value)
            #expect(waited >= .milliseconds(150) && waited < .seconds(2), "\(waited)")
        }
    }

    @Test func closingRunsWhatWaitsAndRefusesMore() async throws {
        try await withPrivateBus { (bus: BusDaemon, _: Connection) async throws in
            let connection = try Connection(address: bus.address)
            let ran = Locked(false)
            #expect(connection.submit(after: .seconds(3600)) { ran.value = true })
            connection.close()
            // Run as the loop closes down rather than stranded for an hour,
            // as the jobs queued at close are.
            #expect(try await eventually(5) { ran.value })
            #expect(try await eventually(5) { !connection.submit(after: .zero) {} })
        }
    }
}
