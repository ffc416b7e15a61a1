import CDBus
import Dispatch
import FoundationEssentials
import Glibc
import Posix
import Synchronization

/// Method calls and signals, made on any thread; the loop sends them.
extension Connection {
    /// Calls a method and waits for its reply; a remote error is thrown as a
    /// `DBusError` with its name and message.
    @discardableResult
    public func call(
        _ destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
        _ arguments: [Value] = [], timeout: Duration = .seconds(25)
    ) async throws -> Message {
        let message = try MessageHandle.methodCall(
            destination: destination?.rawValue, path: path, interface: interface, member: member)
        try message.append(arguments)
        let reply = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Message, any Error>) in
            send(message, timeout: timeout) { continuation.resume(with: $0) }
        }
        if let error = reply.error { throw error }
        return reply
    }

    /// Sends a call without waiting for its reply: calls sent this way from
    /// one thread leave in the order they were made. `complete` gets the
    /// reply, or the error (a remote one as a `DBusError`), on the
    /// connection's loop thread, exactly once.
    public func call(
        _ destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
        _ arguments: [Value] = [], timeout: Duration = .seconds(25), complete: @escaping @Sendable (Result<Message, any Error>) -> Void
    ) {
        do {
            let message = try MessageHandle.methodCall(destination: destination?.rawValue, path: path, interface: interface, member: member)
            try message.append(arguments)
            send(message, timeout: timeout) { result in
                complete(result.flatMap { reply in reply.error.map { .failure($0) } ?? .success(reply) })
            }
        } catch {
            complete(.failure(error))
        }
    }

    /// Calls a method and blocks the calling thread until the reply comes;
    /// for synchronous APIs. Never call it on the connection's loop thread.
    @discardableResult
    public func callBlocking(
        _ destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
        _ arguments: [Value] = [], timeout: Duration = .seconds(25)
    ) throws -> Message {
        precondition(!isOnLoopThread, "callBlocking on the connection's own loop thread would never return")
        let message = try MessageHandle.methodCall(
            destination: destination?.rawValue, path: path, interface: interface, member: member)
        try message.append(arguments)
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Message, any Error>?>(nil)
        send(message, timeout: timeout) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        let reply = try outcome.withLock { $0 }?.get()
        guard let reply else { throw DBusError.failed("no reply") }
        if let error = reply.error { throw error }
        return reply
    }

    /// Calls a method declared with Swift types, by the declaration's name
    /// and with arguments of its types.
    @discardableResult
    public func call<each Input: DBusArgument>(
        _ destination: BusName?, path: ObjectPath, interface: InterfaceName?, _ method: MethodDeclaration<repeat each Input>,
        _ inputs: repeat each Input, timeout: Duration = .seconds(25)
    ) async throws -> Message {
        try await call(destination, path: path, interface: interface, member: method.method.name, method.values(repeat each inputs), timeout: timeout)
    }

    /// `call` of a declared method, waiting on this thread.
    @discardableResult
    public func callBlocking<each Input: DBusArgument>(
        _ destination: BusName?, path: ObjectPath, interface: InterfaceName?, _ method: MethodDeclaration<repeat each Input>,
        _ inputs: repeat each Input, timeout: Duration = .seconds(25)
    ) throws -> Message {
        try callBlocking(destination, path: path, interface: interface, member: method.method.name, method.values(repeat each inputs), timeout: timeout)
    }

    /// Calls a method on the bus itself (`org.freedesktop.DBus`).
    @discardableResult
    public func callBus(_ member: MemberName, _ arguments: [Value] = []) async throws -> Message {
        try await call(.bus, path: ObjectPath("/org/freedesktop/DBus"), interface: .bus, member: member, arguments)
    }

    /// `callBus`, blocking the calling thread: for programs that keep out
    /// of Swift concurrency (whose thread pool wakes the process every
    /// second, even when idle).
    @discardableResult
    public func callBusBlocking(_ member: MemberName, _ arguments: [Value] = []) throws -> Message {
        try callBlocking(.bus, path: ObjectPath("/org/freedesktop/DBus"), interface: .bus, member: member, arguments)
    }

    /// Emits a signal: to everyone who listens, or only to `destination`.
    public func emit(
        path: ObjectPath, interface: InterfaceName, member: MemberName, _ arguments: [Value],
        to destination: BusName? = nil
    ) throws {
        let message = try MessageHandle.signal(path: path, interface: interface, member: member, arguments)
        if let destination { message.setDestination(destination.rawValue) }
        send(message)
    }
}
