import Glibc

/// Signal masks and dispositions, and waiting for a signal.
public enum Signals {
    /// A set of signals, as the mask calls take it.
    public struct Set: Sendable {
        var raw = sigset_t()

        public init(_ signals: [Int32]) {
            sigemptyset(&raw)
            for number in signals { sigaddset(&raw, number) }
        }
    }

    /// Blocks `signals` in the calling thread (and so in the threads it
    /// starts after); returns the mask before. The corresponding C
    /// function is `pthread_sigmask` (SIG_BLOCK).
    @discardableResult
    public static func block(_ signals: [Int32]) -> Set {
        change(SIG_BLOCK, Set(signals))
    }

    /// Unblocks `signals` in the calling thread; returns the mask before.
    /// The corresponding C function is `pthread_sigmask` (SIG_UNBLOCK).
    @discardableResult
    public static func unblock(_ signals: [Int32]) -> Set {
        change(SIG_UNBLOCK, Set(signals))
    }

    /// Puts the calling thread's mask back to `mask`.
    /// The corresponding C function is `pthread_sigmask` (SIG_SETMASK).
    public static func restore(_ mask: Set) {
        _ = change(SIG_SETMASK, mask)
    }

    private static func change(_ how: Int32, _ set: Set) -> Set {
        var set = set
        var previous = Set([])
        // Fails only for a bad `how`.
        pthread_sigmask(how, &set.raw, &previous.raw)
        return previous
    }

    /// Ignores `signal` in the whole process (SIGPIPE: a write to a closed
    /// pipe then fails with EPIPE). The corresponding C function is `signal`.
    public static func ignore(_ signal: Int32) {
        Glibc.signal(signal, SIG_IGN)
    }

    /// Waits for one of `signals`, which must be blocked in every thread,
    /// and returns it. The corresponding C function is `sigwaitinfo`.
    public static func wait(for signals: [Int32]) -> Int32 {
        var set = Set(signals)
        while true {
            let number = sigwaitinfo(&set.raw, nil)
            if number > 0 { return number }
        }
    }
}
