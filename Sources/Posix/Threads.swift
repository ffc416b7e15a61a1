import Glibc

/// Threads of their own, for loops that block (a connection's, a
/// provider's wait): not a pool's, which must never block.
public enum Threads {
    private final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread.
    public static func detach(_ body: @escaping @Sendable () -> Void) throws(Errno) {
        let start = Unmanaged.passRetained(Start(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Start>.fromOpaque(raw).takeRetainedValue().body()
                return nil
            }, start)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw Errno(status)
        }
        pthread_detach(thread)
    }
}

extension Threads {
    /// Sleeps the calling thread for `duration`, whatever signals come.
    /// The corresponding C function is `nanosleep`.
    public static func sleep(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var wanted = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&wanted, &left) == -1, errno == EINTR { wanted = left }
    }
}
