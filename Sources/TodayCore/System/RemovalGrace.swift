import Dispatch
import Synchronization

/// When a user's file that went away counts as removed: only once it has
/// been away, never seen back, for `grace`. A dotfile manager, `git
/// checkout` or an editor's save removes a file and writes it again, and
/// what the file holds (added widgets, Do Not Disturb) would otherwise go
/// and come back a moment later.
///
/// The time counts from the first look that finds the file away since it
/// was last seen: a removal undone and done again starts over, so that
/// the second removal is not taken early for the first one's time.
final class RemovalGrace: Sendable {
    let grace: Duration
    private let awaySince = Mutex<ContinuousClock.Instant?>(nil)

    init(_ grace: Duration) {
        self.grace = grace
    }

    /// Notes whether the file is away now (`away`), and says whether what
    /// is there now may be taken in: true where the file is there, or has
    /// been away for the grace. At the first look that finds it away,
    /// `lookAgain` is called once the grace has passed. `now` is the time
    /// of the look.
    func settled(away: Bool, at now: ContinuousClock.Instant = .now, lookAgain: @escaping @Sendable () -> Void) -> Bool {
        let (settled, first) = awaySince.withLock { since -> (Bool, Bool) in
            guard away else {
                since = nil
                return (true, false)
            }
            guard let since else {
                since = now
                return (false, true)
            }
            return (now - since >= grace, false)
        }
        if first {
            // A little after: the look then surely finds the grace passed.
            let milliseconds = Int((grace / .milliseconds(1)).rounded(.up)) + 10
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: lookAgain)
        }
        return settled
    }
}
