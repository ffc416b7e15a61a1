import Foundation
import Glibc

/// Runs a command to completion, off the cooperative thread pool, and
/// returns its exit status and output.
@discardableResult
public func run(_ arguments: [String], timeout: TimeInterval = 20) async throws -> (status: Int32, output: String, error: String) {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try runBlocking(arguments, timeout: timeout) })
        }
    }
}

public func runBlocking(_ arguments: [String], timeout: TimeInterval = 20) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes while the process runs so a full pipe cannot stall it.
    let outData = Locked(Data())
    let errData = Locked(Data())
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) { outData.value = out.fileHandleForReading.readDataToEndOfFile() }
    DispatchQueue.global().async(group: group) { errData.value = err.fileHandleForReading.readDataToEndOfFile() }
    if group.wait(timeout: .now() + timeout) == .timedOut { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: outData.value, as: UTF8.self),
        String(decoding: errData.value, as: UTF8.self)
    )
}

/// A value shared between test tasks and callbacks.
public final class Locked<T: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private var stored: T
    private let lock = NSLock()
    public init(_ value: T) { stored = value }
    public var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    public func withLock(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
}

/// A fresh folder under the temporary directory.
public func temporaryDirectory(_ prefix: String = "test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Writes a program (a script) that tests will run, executable. The file
/// is opened close-on-exec: Foundation's `Data.write` is not, and a process
/// that another test starts meanwhile would keep the file open for
/// writing, so that running it fails with ETXTBSY ("Text file busy") for
/// as long as that process lives.
public func writeExecutable(_ text: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        offset += count
    }
    guard fchmod(fd, 0o755) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}

/// How many times a thread has slept so far (voluntary context switches),
/// from `task`'s status file (`/proc/thread-self`, `/proc/<pid>/task/<tid>`);
/// -1 when it cannot be read.
public func voluntarySwitches(task: String) -> Int {
    let status = (try? String(contentsOfFile: task + "/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
    return line.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? -1
}

/// Runs `body` on a new thread with a stack of `stackSize` bytes and waits
/// for its result: for showing that recursive code stays inside a stack.
public func onThread<T: Sendable>(stackSize: Int, _ body: @escaping @Sendable () -> T) throws -> T {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        result.value = body()
        done.signal()
    }
    thread.stackSize = stackSize
    thread.start()
    done.wait()
    guard let value = result.value else { throw CocoaError(.featureUnsupported) }
    return value
}

/// A small deterministic generator (SplitMix64) so corpora are the same every run.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Polls `body` until it is true, for at most `seconds`; whether it became
/// true. For a condition a test waits for, in place of a fixed sleep.
public func eventually(_ seconds: Double = 3, _ body: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await body() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await body()
}

/// What `pipe` gives until `enough` says so, for at most `seconds`.
public func read(_ pipe: Pipe, until enough: (String) -> Bool, within seconds: Double = 15) async throws -> String {
    var text = ""
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let handle = pipe.fileHandleForReading
    while !enough(text), ContinuousClock.now < deadline {
        var ready = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 0) > 0 else {
            try await Task.sleep(for: .milliseconds(20))
            continue
        }
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        text += String(decoding: chunk, as: UTF8.self)
    }
    return text
}

/// An X display of a test's own: Xvfb on the first free number, which it
/// names itself (`-displayfd`).
public final class OwnDisplay: Sendable {
    /// `:N`, for DISPLAY.
    public let name: String
    private let server: Process

    public init() async throws {
        let number = Pipe()
        server = Process()
        server.executableURL = URL(fileURLWithPath: "/bin/sh")
        server.arguments = ["-c", "exec /usr/bin/Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>&1 >/dev/null 2>&1"]
        server.standardOutput = number
        server.standardError = FileHandle.nullDevice
        try server.run()
        let said = try await read(number, until: { $0.hasSuffix("\n") }, within: 20).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !said.isEmpty else {
            if server.isRunning { kill(server.processIdentifier, SIGKILL) }
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "Xvfb named no display within 20 s"])
        }
        name = ":" + said
    }

    public func stop() {
        if server.isRunning { kill(server.processIdentifier, SIGKILL) }
    }
}
