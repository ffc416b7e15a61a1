import DBus
import Foundation
import Testing

extension BusDaemon {
    func connect() throws -> Connection { try Connection(address: address) }
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
