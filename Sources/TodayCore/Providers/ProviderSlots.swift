import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// Bounds how many providers run at once, so that UpdateAll over many
/// widgets cannot start them all together. Each run blocks a thread of
/// its own (it waits in poll() for as long as the provider takes).
final class ProviderSlots: Sendable {
    private let state: Mutex<(free: Int, waiting: [@Sendable () -> Void])>

    init(count: Int) { state = Mutex((count, [])) }

    /// Runs `job` on a thread of its own once a slot is free.
    func run(_ job: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.free > 0 else {
                state.waiting.append(job)
                return false
            }
            state.free -= 1
            return true
        }
        guard now else { return }
        ExecProvider.runners.run { [self] in
            job()
            // The slot passes to the next waiting job, on this thread.
            while let next = state.withLock({ state -> (@Sendable () -> Void)? in
                guard !state.waiting.isEmpty else {
                    state.free += 1
                    return nil
                }
                return state.waiting.removeFirst()
            }) {
                next()
            }
        }
    }
}
