import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// When a user's file that went away counts as removed (layout.plist,
/// notifications.plist): after the grace, counted from the last time it
/// went, never from an earlier removal that was undone.
struct RemovalGraceTests {
    /// Looks at a file that is away or there, as the watcher does, and
    /// records what each look the grace asked for found.
    final class File: Sendable {
        let grace: RemovalGrace
        let away = Locked(false)
        let looksAgain = Locked<[(at: ContinuousClock.Instant, settled: Bool)]>([])

        init(grace: Duration) { self.grace = RemovalGrace(grace) }

        @discardableResult
        func look() -> Bool {
            grace.settled(away: away.value) { [self] in
                let settled = self.look()
                self.looksAgain.withLock { $0.append((ContinuousClock.now, settled)) }
            }
        }

        func set(away: Bool) {
            self.away.withLock { $0 = away }
            look()
        }
    }

    @Test func aFileThereOrAwayForTheGraceIsSettled() async throws {
        let file = File(grace: .milliseconds(200))
        #expect(file.look())
        let gone = ContinuousClock.now
        file.set(away: true)
        #expect(!file.look())
        #expect(try await eventually(5) { !file.looksAgain.value.isEmpty })
        let again = try #require(file.looksAgain.value.first)
        #expect(again.settled)
        #expect(again.at - gone >= .milliseconds(200))
        #expect(file.look(), "still away after the grace")
        // Seen again: taken in at once.
        file.set(away: false)
        #expect(file.look())
    }

    /// Removed, written again, and removed again before the first removal's
    /// grace ran out (`git checkout` twice): the first removal's look finds
    /// the file away, but for less than the grace, and it is not settled
    /// until the second removal's own grace has passed.
    @Test func aSecondRemovalCountsFromItsOwnTime() async throws {
        let grace = Duration.milliseconds(400)
        // A loaded machine that took too long between the steps leaves the
        // first removal's look outside the second removal; another attempt
        // is made.
        var timely = 0
        for _ in 0..<5 where timely == 0 {
            let file = File(grace: grace)
            let first = ContinuousClock.now
            file.set(away: true)
            try await Task.sleep(for: .milliseconds(50))
            file.set(away: false)
            try await Task.sleep(for: .milliseconds(100))
            let second = ContinuousClock.now
            file.set(away: true)
            guard second - first < grace / 2 else {
                try await Task.sleep(for: grace * 2)
                continue
            }
            timely += 1
            #expect(try await eventually(5) { file.looksAgain.value.count == 2 })
            let looks = file.looksAgain.value
            #expect(looks.map(\.settled) == [false, true], "looks at \(looks.map { $0.at - first })")
            #expect(looks.allSatisfy { $0.at - first >= grace })
            #expect(looks.last.map { $0.at - second >= grace } == true)
        }
        #expect(timely == 1, "the file was never removed again within half the grace")
    }
}
