import Foundation
import Glibc
import Posix
import Testing

/// The system layer: errors, retries when a signal interrupts a call, and
/// descriptors that close themselves.
@Suite(.serialized) struct PosixTests {
    static func folder() throws -> String {
        var template = Array("/tmp/posix-tests-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Errno.current }
        return String(cString: made)
    }

    @Test func errorsSayWhatTheCLibrarySays() throws {
        #expect(Errno.noSpace.description == "No space left on device")
        let folder = try Self.folder()
        defer { rmdir(folder) }
        #expect(throws: Errno.noSuchFile) { try FileDescriptor.open(folder + "/absent", O_RDONLY) }
        // `catch Errno.x` matches where errors of any type are caught.
        do {
            _ = try FileDescriptor.open(folder + "/absent", O_RDONLY) as FileDescriptor
            Issue.record("opening a missing file should fail")
        } catch Errno.noSuchFile {
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func aDescriptorClosesWhenItsLastReferenceGoes() throws {
        let folder = try Self.folder()
        defer { rmdir(folder) }
        var raw: Int32 = -1
        do {
            let file = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)
            raw = file.rawValue
            #expect(fcntl(file.rawValue, F_GETFD) & FD_CLOEXEC != 0)
        }
        #expect(fcntl(raw, F_GETFD) == -1 && errno == EBADF)
        // An explicit close says how it went, once.
        let file = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)
        try file.close()
        try file.close()
    }

    @Test func whatIsWrittenIsReadBackWithinALimit() throws {
        let folder = try Self.folder()
        let path = folder + "/data"
        defer {
            unlink(path)
            rmdir(folder)
        }
        let bytes = Data((0..<200_000).map { UInt8($0 % 251) })
        let output = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        try output.write(all: bytes)
        try output.sync()
        try output.close()
        #expect(try FileDescriptor.open(path, O_RDONLY).readToEnd(limit: bytes.count) == bytes)
        #expect(try FileDescriptor.open(path, O_RDONLY).readToEnd(limit: bytes.count - 1) == nil)
        #expect(try FileDescriptor.open(path, O_RDONLY).status().st_size == bytes.count)
    }

    /// A read that a signal interrupts is made again, not failed with EINTR.
    @Test func aCallASignalInterruptsIsMadeAgain() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let input = FileDescriptor(owning: ends[0])
        let output = FileDescriptor(owning: ends[1])
        // A handler without SA_RESTART, so that the kernel ends the read with EINTR.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { sigaction(SIGUSR1, &previous, nil) }
        let thread = pthread_self()
        let writer = Thread {
            // Absences the kernel shows no sign of: the reader is blocked in
            // read() by now, when the signal comes, and again after it.
            usleep(100_000)
            pthread_kill(thread, SIGUSR1)
            usleep(100_000)
            try? output.write(all: Data("after the signal".utf8))
            try? output.close()
        }
        writer.start()
        #expect(try input.readToEnd(limit: 100) == Data("after the signal".utf8))
    }

    @Test func aMonotonicTimerIsReadyAtItsTime() throws {
        let timer = try FileDescriptor.monotonicTimer()
        let start = monotonicNanoseconds()
        try timer.arm(atMonotonicNanoseconds: start + 50_000_000)
        #expect(try Poll.wait([Poll.Entry(timer)], timeout: 1000) == [Int16(POLLIN)])
        #expect(monotonicNanoseconds() - start >= 50_000_000, "ready before its time")
        timer.drain()
        #expect(try Poll.wait([Poll.Entry(timer)], timeout: 0) == [0], "read back, it is no longer ready")
        // Once: gone off, it stays quiet until armed again.
        #expect(try Poll.wait([Poll.Entry(timer)], timeout: 100) == [0])
        // A time past is ready at once; armed again, the earlier time is replaced.
        try timer.arm(atMonotonicNanoseconds: start)
        #expect(try Poll.wait([Poll.Entry(timer)], timeout: 1000) == [Int16(POLLIN)])
        timer.drain()
        try timer.arm(atMonotonicNanoseconds: monotonicNanoseconds() + 10_000_000)
        try timer.arm(atMonotonicNanoseconds: monotonicNanoseconds() + 5_000_000_000)
        #expect(try Poll.wait([Poll.Entry(timer)], timeout: 100) == [0])
    }
}

/// The seam where a test makes a system call fail (`Faults`).
@Suite struct FaultTests {
    @Test func aPlannedFailureReachesTheCallerAndOnlyOnThisThread() throws {
        let folder = try PosixTests.folder()
        defer { rmdir(folder) }
        try Faults.inject(.open, .noSpace) {
            #expect(throws: Errno.noSpace) { try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY) }
            // Used up: the next call reaches the kernel.
            _ = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)
            // Another thread has no plan.
            let done = DispatchSemaphore(value: 0)
            Thread {
                #expect((try? FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)) != nil)
                done.signal()
            }.start()
            done.wait()
        }
        _ = try FileDescriptor.open(folder, O_RDONLY | O_DIRECTORY)
    }

    @Test func anInterruptionIsRetriedAsARealOneIs() throws {
        let pipe = try FileDescriptor.pipe()
        try Faults.inject([.write: [.interrupted, .interrupted], .read: [.interrupted]]) {
            try pipe.write.write(all: Data("still whole".utf8))
            try pipe.write.close()
            #expect(try pipe.read.readToEnd(limit: 100) == Data("still whole".utf8))
        }
    }
}
