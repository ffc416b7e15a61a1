import DBus
import Foundation
import Testing

/// A dbus-daemon of the test's own, stopped when the test ends.
final class PrivateBus: Sendable {
    let address: String
    private let process: Process

    init() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        self.process = process
        self.address = String(decoding: line, as: UTF8.self)
    }

    deinit {
        // A test bus holds nothing worth flushing; SIGKILL also works where
        // the test runner's threads block SIGTERM for their children.
        let pid = process.processIdentifier
        kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    func connect() throws -> Connection { try Connection(address: address) }
}

/// Runs `body` with a fresh bus and a connection to it, closing both after.
func withPrivateBus<T>(_ body: (PrivateBus, Connection) async throws -> T) async throws -> T {
    let bus = try PrivateBus()
    let connection = try bus.connect()
    defer { connection.close() }
    return try await body(bus, connection)
}

/// Runs a command to completion, off the cooperative thread pool, and
/// returns its exit status and output.
@discardableResult
func run(_ arguments: [String], timeout: TimeInterval = 20) async throws -> (status: Int32, output: String, error: String) {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try runBlocking(arguments, timeout: timeout) })
        }
    }
}

func runBlocking(_ arguments: [String], timeout: TimeInterval) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes while the process runs so a full pipe cannot stall it.
    let outData = Mutexed(Data())
    let errData = Mutexed(Data())
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) { outData.set(out.fileHandleForReading.readDataToEndOfFile()) }
    DispatchQueue.global().async(group: group) { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
    if group.wait(timeout: .now() + timeout) == .timedOut { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: outData.get(), as: UTF8.self),
        String(decoding: errData.get(), as: UTF8.self)
    )
}

final class Mutexed<T: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private var value: T
    private let lock = NSLock()
    init(_ value: T) { self.value = value }
    func get() -> T { lock.withLock { value } }
    func set(_ newValue: T) { lock.withLock { value = newValue } }
    func update(_ body: (inout T) -> Void) { lock.withLock { body(&value) } }
}
