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
    /// grace ran out (`git checkout` twice): the look the first removal
    /// asked for finds the file away, but for less than the grace, and it
    /// is settled only once the second removal's own grace has passed.
    @Test func aSecondRemovalCountsFromItsOwnTime() async throws {
        let grace = RemovalGrace(.milliseconds(400))
        let looks = Locked(0)
        let lookAgain: @Sendable () -> Void = { looks.withLock { $0 += 1 } }
        let first = ContinuousClock.now
        #expect(!grace.settled(away: true, at: first, lookAgain: lookAgain))
        #expect(grace.settled(away: false, at: first + .milliseconds(50), lookAgain: lookAgain))
        let second = first + .milliseconds(150)
        #expect(!grace.settled(away: true, at: second, lookAgain: lookAgain))
        #expect(!grace.settled(away: true, at: first + .milliseconds(410), lookAgain: lookAgain), "the first removal's time")
        #expect(!grace.settled(away: true, at: second + .milliseconds(399), lookAgain: lookAgain))
        #expect(grace.settled(away: true, at: second + .milliseconds(400), lookAgain: lookAgain))
        // One look asked for at each removal's first sight, none for the
        // looks after it.
        #expect(try await eventually(5) { looks.value == 2 })
        try await Task.sleep(for: .milliseconds(500))
        #expect(looks.value == 2)
    }
}
