import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

/// An update that is running; callers that arrive meanwhile wait for its
/// result instead of starting another provider run.
final class UpdateInProgress: Sendable {
    private let state = Mutex<(result: UpdateResult?, waiting: [@Sendable (UpdateResult) -> Void])>((nil, []))

    func result() async -> UpdateResult {
        await withCheckedContinuation { continuation in
            whenFinished { continuation.resume(returning: $0) }
        }
    }

    /// Runs `done` with the result: at once if the update has finished,
    /// else on the thread that finishes it.
    func whenFinished(_ done: @escaping @Sendable (UpdateResult) -> Void) {
        let ready = state.withLock { state -> UpdateResult? in
            if let result = state.result { return result }
            state.waiting.append(done)
            return nil
        }
        if let ready { done(ready) }
    }

    func finish(_ result: UpdateResult) {
        let waiting = state.withLock { state in
            state.result = result
            defer { state.waiting = [] }
            return state.waiting
        }
        for done in waiting { done(result) }
    }
}
