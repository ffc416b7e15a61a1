import CSystem
import DBus
import Dispatch
import Posix
import Synchronization

/// Threads for work that blocks (a provider run waits in poll() for
/// seconds): every job gets a thread at once, and a thread that finished
/// its job waits for the next instead of ending, so a run does not pay for
/// creating one. They run at todayd's own nice value.
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
                // A thread takes the nice value of the one creating it; as
                // root libdispatch's run at -2 and -4, and starting a
                // sandbox there would go before dbus-daemon and the
                // panels, at 0, on a busy processor.
                _ = today_set_thread_nice(SpawnedProcess.processNice)
                today_set_thread_name("todayd-provider")
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
