import CSystem
import FoundationEssentials
import Glibc
import Synchronization

/// An open file descriptor, owned: closed by `close()`, or when the last
/// reference goes. Every call retries when a signal interrupts it and
/// throws one `Errno` when it fails.
public final class FileDescriptor: Sendable {
    /// The descriptor, for calls not wrapped here. It is valid only while
    /// this object is referenced: pass `rawValue` at each use rather than
    /// keeping it in a variable that outlives the object's last use.
    public let rawValue: Int32
    private let isOpen = Atomic(true)

    /// Whether it closes the descriptor (not for one borrowed).
    private let owned: Bool

    /// Takes ownership of `rawValue`, an open descriptor.
    public init(owning rawValue: Int32) {
        self.rawValue = rawValue
        owned = true
    }

    /// Uses `rawValue`, which someone else owns and closes (standard
    /// output, say), without ever closing it.
    public init(borrowing rawValue: Int32) {
        self.rawValue = rawValue
        owned = false
    }

    /// Standard input, output and error, never closed here.
    public static let standardInput = FileDescriptor(borrowing: 0)
    public static let standardOutput = FileDescriptor(borrowing: 1)
    public static let standardError = FileDescriptor(borrowing: 2)

    deinit {
        if owned, isOpen.load(ordering: .relaxed) { Glibc.close(rawValue) }
    }

    /// Opens `path` (relative to the open folder `folder`, when given)
    /// with `flags`, to which O_CLOEXEC is always added.
    public static func open(
        _ path: String, _ flags: Int32, mode: mode_t = 0, in folder: FileDescriptor? = nil
    ) throws(Errno) -> FileDescriptor {
        let fd = try retryingInterrupts(.open) { openat(folder?.rawValue ?? AT_FDCWD, path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(owning: fd)
    }

    /// Closes it now, saying whether that failed (a write-back error of a
    /// file just written shows here). Later calls do nothing.
    public func close() throws(Errno) {
        guard owned, isOpen.exchange(false, ordering: .relaxed) else { return }
        // Linux closes the descriptor even when close() fails: never retried.
        _ = try failingWithErrno(.close) { Glibc.close(rawValue) }
    }

    /// Reads up to `buffer.count` bytes; 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingInterrupts(.read) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads up to `buffer.count` bytes from `offset`, leaving the file position.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(Errno) -> Int {
        try retryingInterrupts(.read) { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Everything up to the end of the file, refused with nil once it
    /// passes `limit` bytes.
    public func readToEnd(limit: Int) throws(Errno) -> Data? {
        var data = Data()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let count = try read(into: chunk)
            if count == 0 { return data }
            data.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            if data.count > limit { return nil }
        }
    }

    /// Writes once; returns how many bytes were written.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try retryingInterrupts(.write) { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    }

    /// Sends the bytes `parts` point at, in order, in one call on a
    /// socket, without waiting for room and without SIGPIPE where the other
    /// end has gone; returns how many bytes the socket took, 0 where it
    /// had no room.
    /// The corresponding C function is `sendmsg`.
    public func send(gathering parts: UnsafeMutableBufferPointer<iovec>) throws(Errno) -> Int {
        var message = msghdr()
        message.msg_iov = parts.baseAddress
        message.msg_iovlen = parts.count
        do {
            return try retryingInterrupts(.send) { sendmsg(rawValue, &message, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        } catch Errno.wouldBlock {
            return 0
        }
    }

    /// Reads what a socket holds, up to `buffer.count` bytes, without
    /// waiting, and appends the file descriptors that came with them
    /// (SCM_RIGHTS), owned and close-on-exec, to `descriptors`; 0 at the
    /// end of the stream. Throws `Errno.wouldBlock` where nothing waits,
    /// and EMSGSIZE where more descriptors came than one read takes (those
    /// that came are closed).
    /// The corresponding C function is `recvmsg`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, descriptors: inout [FileDescriptor]) throws(Errno) -> Int {
        // The kernel passes at most 253 descriptors with one message (SCM_MAX_FD).
        try withUnsafeTemporaryAllocation(of: Int32.self, capacity: 253) { received throws(Errno) -> Int in
            var count: Int32 = 0
            let length = try retryingInterrupts(.receive) {
                today_receive(rawValue, buffer.baseAddress, buffer.count, received.baseAddress, Int32(received.count), &count)
            }
            for index in 0..<Int(count) { descriptors.append(FileDescriptor(owning: received[index])) }
            return length
        }
    }

    /// Writes all of `bytes`, however many writes that takes.
    public func write(all bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            offset += try write(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        }
    }

    /// Writes all of `text` as UTF-8, giving up on an error: for standard
    /// output and error, where a failed write has nowhere else to be told.
    public func writeAll(_ text: String) {
        try? write(all: Array(text.utf8))
    }

    public func write<Bytes: ContiguousBytes>(all bytes: Bytes) throws(Errno) {
        // ContiguousBytes' closure is not typed-throws: carry the error out.
        let failure: Errno? = bytes.withUnsafeBytes { buffer in
            do throws(Errno) {
                try write(all: buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Flushes what was written to the disk.
    public func sync() throws(Errno) {
        _ = try retryingInterrupts(.fsync) { fsync(rawValue) }
    }

    /// Cuts the file (or lengthens it with zeros) to `size` bytes. The
    /// corresponding C function is `ftruncate`.
    public func truncate(to size: Int) throws(Errno) {
        _ = try retryingInterrupts(.truncate) { ftruncate(rawValue, off_t(size)) }
    }

    /// The file's status.
    public func status() throws(Errno) -> stat {
        var info = stat()
        _ = try retryingInterrupts(.stat) { fstat(rawValue, &info) }
        return info
    }

    /// Sets the file's permission bits. The corresponding C function is `fchmod`.
    public func changeMode(_ mode: mode_t) throws(Errno) {
        _ = try retryingInterrupts(.chmod) { fchmod(rawValue, mode) }
    }

    /// Makes reads and writes that would wait fail with EAGAIN instead.
    /// The corresponding C function is `fcntl` (F_SETFL, O_NONBLOCK).
    public func setNonBlocking() throws(Errno) {
        let flags = try retryingInterrupts(.fcntl) { fcntl(rawValue, F_GETFL) }
        _ = try retryingInterrupts(.fcntl) { fcntl(rawValue, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Sets the file status flags to `flags`, the others cleared (for a
    /// fresh pipe, which has no other to keep: one call, not two).
    /// The corresponding C function is `fcntl` (F_SETFL).
    public func replaceStatusFlags(_ flags: Int32) throws(Errno) {
        _ = try retryingInterrupts(.fcntl) { fcntl(rawValue, F_SETFL, flags) }
    }

    /// Renames `name` to `newName`, both in this open folder.
    /// The corresponding C function is `renameat`.
    public func rename(_ name: String, to newName: String) throws(Errno) {
        _ = try retryingInterrupts(.rename) { renameat(rawValue, name, rawValue, newName) }
    }

    /// Removes the file `name` of this open folder.
    /// The corresponding C function is `unlinkat`.
    public func unlink(_ name: String) throws(Errno) {
        _ = try retryingInterrupts(.unlink) { unlinkat(rawValue, name, 0) }
    }

    /// Creates the folder `name` in this open folder.
    /// The corresponding C function is `mkdirat`.
    public func makeFolder(_ name: String, mode: mode_t) throws(Errno) {
        _ = try retryingInterrupts(.mkdir) { mkdirat(rawValue, name, mode) }
    }

    /// A pipe: what is written to `write` is read from `read`; both close on exec.
    /// The corresponding C function is `pipe2`.
    public static func pipe() throws(Errno) -> (read: FileDescriptor, write: FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        _ = try failingWithErrno(.pipe) { today_pipe_cloexec(&ends) }
        return (FileDescriptor(owning: ends[0]), FileDescriptor(owning: ends[1]))
    }
}
