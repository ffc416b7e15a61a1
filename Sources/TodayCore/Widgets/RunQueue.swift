import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// Runs jobs one after another: each gets a `next` to call when it is done,
/// on whatever thread it finishes, and the next job starts there.
final class RunQueue: Sendable {
    typealias Job = @Sendable (_ next: @escaping @Sendable () -> Void) -> Void
    private let state = Mutex<(busy: Bool, waiting: [Job])>((false, []))

    func enqueue(_ job: @escaping Job) {
        let now = state.withLock { state -> Bool in
            guard !state.busy else {
                state.waiting.append(job)
                return false
            }
            state.busy = true
            return true
        }
        if now { start(job) }
    }

    private func start(_ job: @escaping Job) {
        job { [self] in
            let next = state.withLock { state -> Job? in
                guard !state.waiting.isEmpty else {
                    state.busy = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { start(next) }
        }
    }
}
