import DBus
import Dispatch
import Posix
import Synchronization

/// Threads for work that blocks (a provider run waits in poll() for
/// seconds): every job gets a thread at once, and a thread that finished
/// its job waits for the next instead of ending, so a run does not pay for
/// creating one.
final class BlockingThreads: Sendable {
    private final class Worker: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let job = Mutex<(@Sendable () -> Void)?>(nil)
    }

    private let idle = Mutex<[Worker]>([])

    func run(_ job: @escaping @Sendable () -> Void) {
        if let worker = idle.withLock({ $0.popLast() }) {
            worker.job.withLock { $0 = job }
            worker.wake.signal()
            return
        }
        let worker = Worker()
        worker.job.withLock { $0 = job }
        do {
            try Threads.detach { [self] in
                while true {
                    if let job = worker.job.withLock({ job in defer { job = nil }; return job }) { job() }
                    idle.withLock { $0.append(worker) }
                    worker.wake.wait()
                }
            }
        } catch {
            // The system refuses another thread: this job runs on a
            // dispatch worker, which it holds only until it ends.
            DispatchQueue.global().async(execute: job)
        }
    }
}

extension ContinuousClock.Instant {
    /// A poll() timeout, in milliseconds, that ends at this instant,
    /// rounded up (rounded down, the last millisecond would be spent
    /// calling poll() with no wait, in a loop).
    var pollTimeout: Int32 {
        let left = ContinuousClock.now.duration(to: self)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
    }
}
