import Glibc

/// An errno value: what a system call that failed said. Its description is
/// the C library's message for it ("No space left on device").
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Int32

    public init(_ code: Int32) {
        self.code = code
    }

    /// The calling thread's errno now.
    public static var current: Errno { Errno(errno) }

    public var description: String { String(cString: strerror(code)) }

    public static let interrupted = Errno(EINTR)
    public static let wouldBlock = Errno(EAGAIN)
    public static let noSuchFile = Errno(ENOENT)
    public static let exists = Errno(EEXIST)
    public static let notADirectory = Errno(ENOTDIR)
    public static let tooManyLinks = Errno(ELOOP)
    public static let noSpace = Errno(ENOSPC)
}

/// Runs `call`, a function that returns 0 or an errno value (the pthread
/// and posix_spawn style), and throws the errno.
@inlinable
public func throwingReturnedErrno(_ call: () -> Int32) throws(Errno) {
    let code = call()
    guard code == 0 else { throw Errno(code) }
}

extension Errno {
    /// Lets `catch Errno.noSuchFile` match wherever errors of any type are caught.
    public static func ~= (pattern: Errno, error: any Error) -> Bool {
        (error as? Errno) == pattern
    }
}
