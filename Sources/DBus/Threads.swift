import Glibc
import Posix

/// Threads of their own, for loops that block (a connection's, a
/// provider's wait): not a pool's, which must never block.
package enum Threads {
    private final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread.
    package static func detach(_ body: @escaping @Sendable () -> Void) throws {
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
            throw DBusError.failed("cannot start a thread: \(Errno(status))")
        }
        pthread_detach(thread)
    }
}

extension String {
    /// Every `target` replaced, compared scalar by scalar (not by
    /// character: an escaped `&` must stay escaped when a combining mark
    /// follows it).
    package func replacingScalars(_ target: String, with replacement: String) -> String {
        let pattern = Array(target.unicodeScalars)
        guard !pattern.isEmpty else { return self }
        let scalars = Array(unicodeScalars)
        var result = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if scalars[index] == pattern[0], index + pattern.count <= scalars.count,
                scalars[index..<index + pattern.count].elementsEqual(pattern)
            {
                result.append(contentsOf: replacement.unicodeScalars)
                index += pattern.count
            } else {
                result.append(scalars[index])
                index += 1
            }
        }
        return String(result)
    }
}
