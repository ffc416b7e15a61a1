import Glibc
import Synchronization

/// The system calls `Posix` wraps, by name: what a test makes fail.
public enum SystemCall: String, Sendable, Hashable, CaseIterable {
    case open, read, write, close, fsync, rename, unlink, mkdir, chmod, stat, poll, pipe, fcntl, kill, wait, eventfd, timer, dup, truncate, send, receive
}

/// The one seam where a test makes a system call fail (swift-system's
/// mocking of its `system_*` calls, as a fault plan): within
/// `Faults.inject`, the next calls of a kind on this thread fail with the
/// error given instead of reaching the kernel. An injected EINTR is retried
/// as a real one is, so that a test sees the retry. Outside a plan, a call
/// costs one atomic load more.
public enum Faults {
    /// Threads with a plan armed now.
    private static let armed = Atomic<Int>(0)

    private final class Plan {
        var failures: [SystemCall: [Errno]] = [:]
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `body` with `failures` planned on this thread: each call of a
    /// kind takes the next error of its list and fails with it, until the
    /// list is used up; later calls reach the kernel.
    public static func inject<Result>(_ failures: [SystemCall: [Errno]], _ body: () throws -> Result) rethrows -> Result {
        let plan = Plan()
        plan.failures = failures
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passRetained(plan).toOpaque())
        armed.add(1, ordering: .relaxed)
        defer {
            armed.subtract(1, ordering: .relaxed)
            if let current = pthread_getspecific(key) { Unmanaged<Plan>.fromOpaque(current).release() }
            pthread_setspecific(key, previous)
        }
        return try body()
    }

    /// `inject` of one error for the next `times` calls of `call`.
    public static func inject<Result>(_ call: SystemCall, _ error: Errno, times: Int = 1, _ body: () throws -> Result) rethrows -> Result {
        try inject([call: Array(repeating: error, count: times)], body)
    }

    /// The error planned for this call of `call` on this thread, if any.
    static func take(_ call: SystemCall) -> Errno? {
        guard armed.load(ordering: .relaxed) > 0, let raw = pthread_getspecific(key) else { return nil }
        let plan = Unmanaged<Plan>.fromOpaque(raw).takeUnretainedValue()
        guard var list = plan.failures[call], !list.isEmpty else { return nil }
        let error = list.removeFirst()
        plan.failures[call] = list
        return error
    }
}

/// Runs `body`, the system call `call` that returns -1 and sets errno when
/// it fails, again for as long as a signal interrupts it; returns what it
/// returned, or throws its errno. A fault planned for `call` counts as its
/// failure.
public func retryingInterrupts<Result: FixedWidthInteger>(_ call: SystemCall, _ body: () -> Result) throws(Errno) -> Result {
    while true {
        if let injected = Faults.take(call) {
            if injected == .interrupted { continue }
            throw injected
        }
        let result = body()
        guard result == -1 else { return result }
        guard errno == EINTR else { throw Errno.current }
    }
}

/// Runs `body`, the system call `call`, once; returns what it returned, or
/// throws its errno where it returned -1 (for calls an interruption should
/// end: a poll whose caller looks at the clock, say). A fault planned for
/// `call` counts as its failure.
public func failingWithErrno<Result: FixedWidthInteger>(_ call: SystemCall, _ body: () -> Result) throws(Errno) -> Result {
    if let injected = Faults.take(call) { throw injected }
    let result = body()
    guard result == -1 else { return result }
    throw Errno.current
}
