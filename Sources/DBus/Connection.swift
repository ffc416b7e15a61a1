import CDBus
import Dispatch
import FoundationEssentials
import Glibc
import Posix
import Synchronization

/// A private connection to a message bus, driven by one loop thread of its own.
///
/// libdbus authenticates the connection; from then on the connection
/// reads and writes the socket itself (`Inbox`, `Outbox`), and libdbus
/// only writes the rare message that carries file descriptors. The loop
/// thread reads, dispatches and keeps the timeouts and pending calls;
/// other threads hand it work through a queue and an eventfd. Messages that need no reply (replies, errors, signals) are sent
/// by whichever thread has them, at once: libdbus locks the connection for
/// that, and a reply made on a provider's thread reaches the bus without
/// waking the loop. Method handlers run as tasks, so a slow handler never
/// delays other calls. Call `close()` when done.
public final class Connection: @unchecked Sendable {
    // @unchecked: `watches`, `timeouts`, `pending`, `subscriptions` and
    // `loopTurn` are touched only on the loop thread (see
    // `isOnLoopThread`); `raw` is used there, and by `send(_:)` from any
    // thread (libdbus is initialised for threads and locks the connection
    // itself); everything else shared with other threads is behind a
    // Mutex or immutable.
    let raw: OpaquePointer
    /// This connection's unique name on the bus, such as `:1.42`.
    public let uniqueName: String
    /// The objects this connection exports.
    public let objects: ObjectServer

    /// Wakes the loop when a job is queued; closed with the connection.
    private let wake: FileDescriptor
    /// Wakes the loop at the earliest deadline of the timed jobs
    /// (`submit(after:_:)`), armed only when that deadline changes: a poll
    /// with a timeout of its own would arm a kernel timer at every turn,
    /// which on a virtual machine costs more than the turn's work. Made at
    /// the first timed job: most connections (a client's, a command's)
    /// never have one, and a process with many connections would hold a
    /// descriptor more for each. Loop thread only.
    private var timer: FileDescriptor?
    /// The deadline `timer` was last armed for, in milliseconds. Loop
    /// thread only.
    private var timerDeadline: Int64?
    /// State any thread may touch, behind its lock.
    let shared = Mutex(Shared())
    /// Every message sent, on its way to the socket (`Outbox`).
    private let outbox: Mutex<Outbox>
    /// What the connection read from the bus and has not dispatched.
    /// Loop thread only.
    private let inbox = Inbox()
    /// Messages read while Hello waited for its answer, dispatched at the
    /// loop's first turn.
    private var early: [ReceivedMessage] = []
    /// True until the connection is lost or closed: the loop reads the
    /// socket. Loop thread only.
    private var receiving = true
    private var watches: [OpaquePointer] = []
    private var timeouts: [OpaquePointer: Int64] = [:]
    private var pending: [UInt32: PendingReply] = [:]
    /// Loop thread only.
    /// In the order they were made; they last as long as the connection.
    var subscriptions: [Subscription] = []
    private var loopThread: pthread_t?

    struct Shared {
        var jobs: [@Sendable () -> Void] = []
        /// Jobs for a later turn (`submit(after:_:)`), each with its
        /// deadline on the monotonic clock in milliseconds, in no order.
        var timed: [(deadline: Int64, job: @Sendable () -> Void)] = []
        var closed = false
        var disconnectHandlers: [@Sendable () -> Void] = []
        /// Run on the loop thread at the end of each turn's work, before
        /// what it sent is written (`beforeWriting(_:)`).
        var beforeWriting: [@Sendable () -> Void] = []
    }

    private struct PendingReply {
        let complete: @Sendable (Result<Message, any Error>) -> Void
        let deadline: Int64
    }

    struct Subscription {
        let rule: MatchRule
        let handler: @Sendable (Message) -> Void
    }

    /// Connects to the bus at `address` and says Hello.
    /// The corresponding C functions are `dbus_connection_open_private` and `dbus_bus_register`.
    public init(address: String) throws {
        _ = dbus_threads_init_default()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw Connection.convert(&error, fallback: "cannot connect to the bus at \(address)")
        }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        func giveUp(_ error: DBusError) -> DBusError {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            return error
        }
        // libdbus authenticates; the bus sends nothing after that until
        // Hello, so libdbus has read nothing of what follows.
        let deadline = Connection.now() + Connection.helloTimeout
        while dbus_connection_get_is_authenticated(raw) == 0 {
            guard dbus_connection_get_is_connected(raw) != 0, Connection.now() < deadline else {
                throw giveUp(DBusError(.authFailed, "the bus at \(address) did not accept this process: is it this user's bus?"))
            }
            _ = dbus_connection_read_write(raw, 100)
        }
        var socket: Int32 = -1
        guard dbus_connection_get_socket(raw, &socket) != 0 else {
            throw giveUp(DBusError.failed("cannot take the bus connection's socket"))
        }
        self.raw = raw
        self.outbox = Mutex(Outbox(socket: socket))
        let unique: String
        do {
            (unique, early) = try Connection.hello(socket: socket, outbox: outbox, inbox: inbox, until: deadline)
        } catch {
            let failure = (error as? DBusError) ?? DBusError.failed("\(error)")
            throw giveUp(DBusError(failure.name, "the bus at \(address) refused the connection: \(failure.message)"))
        }
        self.uniqueName = unique
        do {
            wake = try FileDescriptor.eventCounter(nonBlocking: true)
        } catch {
            throw giveUp(DBusError.failed("cannot make the connection's wake-up counter: \(error)"))
        }
        self.objects = ObjectServer()
        objects.connection = self
        do {
            try startLoop()
        } catch {
            dbus_connection_close(raw)
            throw error
        }
    }

    /// How long authentication and Hello may take together, in
    /// milliseconds (libdbus's default for a call).
    static let helloTimeout: Int64 = 25_000

    /// Says Hello through `outbox` and reads the answer into `inbox`: the
    /// connection's unique name, and the messages that came before it.
    private static func hello(
        socket: Int32, outbox: borrowing Mutex<Outbox>, inbox: Inbox, until deadline: Int64
    ) throws -> (String, [ReceivedMessage]) {
        let hello = try MessageHandle.methodCall(
            destination: "org.freedesktop.DBus", path: ObjectPath(unchecked: "/org/freedesktop/DBus"),
            interface: InterfaceName("org.freedesktop.DBus"), member: MemberName("Hello"))
        let (serial, written) = outbox.withLock { outbox in
            let serial = outbox.append(hello)
            return (serial, outbox.flush(connection: nil))
        }
        var left = written
        var early: [ReceivedMessage] = []
        while true {
            while let message = try inbox.next() {
                guard message.header.replySerial == serial, message.header.kind != .methodCall, message.header.kind != .signal else {
                    early.append(message)
                    continue
                }
                let reply = try message.decode()
                if let error = reply.error { throw error }
                guard case .string(let name)? = reply.body.first else { throw DBusError.failed("Hello was answered without a name") }
                return (name, early)
            }
            let remaining = deadline - Connection.now()
            guard remaining > 0 else { throw DBusError(.noReply, "Hello had no answer within \(helloTimeout / 1000) s") }
            var events = Int16(POLLIN)
            if left == .waitingForSocket { events |= Int16(POLLOUT) }
            var fds = [pollfd(fd: socket, events: events, revents: 0)]
            _ = try? Poll.wait(&fds, timeout: Int32(clamping: remaining))
            if fds[0].revents & Int16(POLLOUT) != 0 { left = outbox.withLock { $0.flush(connection: nil) } }
            guard fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
            let reading: Inbox.Reading
            do {
                reading = try inbox.read(from: FileDescriptor(borrowing: socket))
            } catch {
                throw DBusError.disconnected("the bus's socket failed: \(error)")
            }
            if reading == .ended { throw DBusError.disconnected("the bus closed the connection") }
        }
    }

    /// Connects to the bus at `address` and says Hello, from async code:
    /// the connection is made on a thread of its own, so that the wait for
    /// the bus's answer holds no thread of the cooperative pool.
    public static func connect(address: String) async throws -> Connection {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try Threads.detach { continuation.resume(with: Result { try Connection(address: address) }) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS`.
    public static func session() throws -> Connection {
        guard let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
            throw DBusError(.disconnected, "DBUS_SESSION_BUS_ADDRESS is not set: start a session bus or pass --address")
        }
        return try Connection(address: address)
    }

    static func convert(_ error: inout CDBus.DBusError, fallback: String) -> DBusError {
        guard dbus_error_is_set(&error) != 0 else { return DBusError(.failed, fallback) }
        let name = error.name.flatMap { ErrorName(rawValue: String(cString: $0)) } ?? .failed
        let message = error.message.map { String(cString: $0) } ?? fallback
        return DBusError(name, message)
    }

    /// True while the connection is open.
    public var isOpen: Bool { !shared.withLock { $0.closed } }

    /// Counts the loop's turns: each wakes from the poll, reads what the
    /// bus sent (at most libdbus's 2,048 bytes a read) and dispatches it. A
    /// handler on the loop thread that answers at once can count what it
    /// answered in a turn, and pass the rest on, so that the other messages
    /// of the turn do not wait behind all of it. Read on the loop thread only.
    public var turn: UInt64 { loopTurn }
    private var loopTurn: UInt64 = 0

    /// Closes the connection: pending calls fail with `Disconnected`.
    public func close() {
        submit { [self] in shutDown() }
    }

    /// Runs `handler` once when the connection is lost or closed.
    public func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
        let runNow = shared.withLock { state -> Bool in
            if state.closed { return true }
            state.disconnectHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    // MARK: Sending

    /// Sends a call from the loop thread and hands its reply, error or
    /// timeout to `complete`, exactly once. (Internal, not private: the
    /// service fuzz target sends the calls it makes up through it.)
    func send(
        _ message: MessageHandle, timeout: Duration, complete: @escaping @Sendable (Result<Message, any Error>) -> Void
    ) {
        let milliseconds = Int64(timeout.components.seconds) * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        let accepted = submit { [self] in
            // A close queued before this job has already failed the calls
            // it knew of; this one must not wait for a reply that cannot come.
            guard !shared.withLock({ $0.closed }), dbus_connection_get_is_connected(raw) != 0 else {
                complete(.failure(DBusError.disconnected("the connection to the bus is closed")))
                return
            }
            let serial = outbox.withLock { outbox in
                defer { _ = outbox.flush(connection: raw) }
                return outbox.append(message)
            }
            pending[serial] = PendingReply(complete: complete, deadline: Connection.now() + milliseconds)
        }
        if !accepted {
            complete(.failure(DBusError.disconnected("the connection to the bus is closed")))
        }
    }

    /// Sends a message that expects no reply, in the order of the calls:
    /// from the calling thread at once, or, while the loop thread works
    /// through a turn, with the rest of that turn's messages at its end
    /// (`Outbox`). What the socket does not take at once stays queued, and
    /// the loop is woken to write it when it can.
    func send(_ message: MessageHandle) {
        let left = outbox.withLock { outbox in
            _ = outbox.append(message)
            return outbox.flush(connection: raw)
        }
        if left != .nothing, !isOnLoopThread { submit {} }
    }

    /// Sends a copy of `stencil` with `values` (and, for a reply, reply
    /// serial `serial`), as `send(_:)` sends a message, laid out straight
    /// into the outbox's bytes; false, and nothing sent, where the values
    /// do not fit the stencil.
    func send(_ stencil: MessageStencil, replyingTo serial: UInt32? = nil, _ values: [Value]) -> Bool {
        let (fits, left) = outbox.withLock { outbox -> (Bool, Outbox.Left) in
            guard outbox.append(stencil, replyingTo: serial, values) else { return (false, .nothing) }
            return (true, outbox.flush(connection: raw))
        }
        if left != .nothing, !isOnLoopThread { submit {} }
        return fits
    }

    /// Runs `hook` on the loop thread at the end of each turn's work (its
    /// jobs and what it read), before the messages the turn sent are
    /// written: what it sends leaves with them. A service that keeps what
    /// a turn's calls asked for keeps it all at once here, then answers.
    public func beforeWriting(_ hook: @escaping @Sendable () -> Void) {
        shared.withLock { $0.beforeWriting.append(hook) }
    }

    deinit {
        // Last: other threads may send until the connection object is gone
        // (to a closed connection, libdbus drops the message), and submit
        // may write to the eventfd after the loop has ended.
        dbus_connection_unref(raw)
    }

    // MARK: The loop

    /// Runs `job` on the loop thread, at the start of its next turn (before
    /// it reads from the bus again), after the jobs submitted before it.
    /// False, and `job` dropped, when the connection is closed.
    @discardableResult
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        // The loop takes every queued job when it wakes, so only the job
        // that finds the queue empty needs to wake it; the loop thread
        // itself looks at the queue before it waits.
        let (accepted, wake) = shared.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, false) }
            state.jobs.append(job)
            return (true, state.jobs.count == 1)
        }
        // Full (2^64 - 2 jobs), it is already ready to read.
        if wake, !isOnLoopThread { try? self.wake.signal() }
        return accepted
    }

    /// Runs `job` on the loop thread once `delay` has passed (to the
    /// millisecond, rounded up), at the start of a turn, after the jobs
    /// submitted before that turn. False, and `job` dropped, when the
    /// connection is closed. Work that must leave on this connection
    /// later (a gathered signal) then wakes no other thread and never
    /// waits for the connection's lock behind the loop.
    @discardableResult
    public func submit(after delay: Duration, _ job: @escaping @Sendable () -> Void) -> Bool {
        // A year at most: a deadline further off is no different here.
        let (seconds, attoseconds) = delay.components
        let nanoseconds = min(max(0, seconds), 365 * 86_400) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        let due = monotonicNanoseconds() + nanoseconds
        // Rounded up: the loop's clock counts whole milliseconds, and a job
        // never runs before its time.
        let deadline = (due + 999_999) / 1_000_000
        let accepted = shared.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.timed.append((deadline, job))
            return true
        }
        // The loop looks at the deadlines before each wait; one waiting
        // already is woken to look again.
        if accepted, !isOnLoopThread { try? wake.signal() }
        return accepted
    }

    /// Whether the calling thread is the connection's loop thread.
    public var isOnLoopThread: Bool {
        guard let loopThread else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }

    private func startLoop() throws {
        let started = DispatchSemaphore(value: 0)
        try Threads.detach { [self] in
            loopThread = pthread_self()
            started.signal()
            runLoop()
        }
        started.wait()
    }

    /// The monotonic clock, in milliseconds.
    static func now() -> Int64 {
        monotonicNanoseconds() / 1_000_000
    }

    private func runLoop() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(
            raw,
            { watch, data in
                guard let watch, let data else { return 0 }
                Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().watches.append(watch)
                return 1
            },
            { watch, data in
                guard let watch, let data else { return }
                Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().watches.removeAll { $0 == watch }
            },
            nil, me, nil)
        dbus_connection_set_timeout_functions(
            raw,
            { timeout, data in
                guard let timeout, let data else { return 0 }
                let connection = Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue()
                connection.timeouts[timeout] = Connection.now() + Int64(dbus_timeout_get_interval(timeout))
                return 1
            },
            { timeout, data in
                guard let timeout, let data else { return }
                Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue().timeouts[timeout] = nil
            },
            { timeout, data in
                guard let timeout, let data else { return }
                let connection = Unmanaged<Connection>.fromOpaque(data).takeUnretainedValue()
                connection.timeouts[timeout] = Connection.now() + Int64(dbus_timeout_get_interval(timeout))
            },
            me, nil)
        var fds: [pollfd] = []
        var polled: [OpaquePointer] = []
        while true {
            loopTurn &+= 1
            // What the turn's work sends leaves together at its end.
            outbox.withLock { $0.hold() }
            let (jobs, hooks) = shared.withLock { state -> ([@Sendable () -> Void], [@Sendable () -> Void]) in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                guard !state.timed.isEmpty else { return (state.jobs, state.beforeWriting) }
                // The timed jobs that are due, in the order of their deadlines.
                let now = Connection.now()
                var due = state.timed.filter { $0.deadline <= now }
                guard !due.isEmpty else { return (state.jobs, state.beforeWriting) }
                state.timed.removeAll { $0.deadline <= now }
                due.sort { $0.deadline < $1.deadline }
                return (state.jobs + due.map(\.job), state.beforeWriting)
            }
            for job in jobs { job() }
            if shared.withLock({ $0.closed }) && pending.isEmpty && watches.isEmpty { break }
            if dbus_connection_get_is_connected(raw) == 0 && shared.withLock({ $0.closed }) { break }

            if !early.isEmpty {
                let messages = early
                early = []
                for message in messages { handle(message) }
            }
            dispatchReceived()
            for hook in hooks { hook() }
            let left = outbox.withLock { $0.release(connection: raw) }
            // The connection was lost in this turn: nothing more can come,
            // and a close would find the queue shut, so a wait here would
            // never end (the thread, and the connection it holds, left
            // behind).
            if dbus_connection_get_is_connected(raw) == 0 && shared.withLock({ $0.closed }) { break }

            fds.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: self.wake.rawValue, events: Int16(POLLIN), revents: 0))
            // Jobs this thread submitted since it took the queue: they run
            // after what is ready to read, without waiting.
            let (idle, earliest) = shared.withLock { state in
                (state.jobs.isEmpty, state.timed.lazy.map(\.deadline).min())
            }
            // Never disarmed: a timed job leaves only once it is due, so the
            // one-shot timer has already gone off when none is left.
            if let earliest, earliest != timerDeadline {
                if timer == nil { timer = try? FileDescriptor.monotonicTimer() }
                if let timer, (try? timer.arm(atMonotonicNanoseconds: earliest * 1_000_000)) != nil { timerDeadline = earliest }
            }
            if let timer { fds.append(pollfd(fd: timer.rawValue, events: Int16(POLLIN), revents: 0)) }
            let watched = fds.count
            // libdbus only writes (a message with file descriptors it has
            // not finished): its watches for reading are left alone.
            for watch in watches
            where dbus_watch_get_enabled(watch) != 0 && dbus_watch_get_flags(watch) & DBUS_WATCH_WRITABLE.rawValue != 0 {
                fds.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: Int16(POLLOUT), revents: 0))
                polled.append(watch)
            }
            // What the bus sends, and room in the socket for what it did
            // not take.
            let socket = receiving ? outbox.withLock { $0.descriptor } : nil
            let reading = fds.count
            if let socket {
                let events = left == .waitingForSocket ? Int16(POLLIN | POLLOUT) : Int16(POLLIN)
                fds.append(pollfd(fd: socket, events: events, revents: 0))
            }
            var wait = idle ? pollTimeout() : 0
            // Without a timer (none could be made), the poll's own timeout.
            if let earliest, earliest != timerDeadline {
                let due = Int32(clamping: max(0, earliest - Connection.now()))
                wait = wait < 0 ? due : min(wait, due)
            }
            guard (try? Poll.wait(&fds, timeout: wait)) != nil else { break }
            if fds[0].revents != 0 { self.wake.drain() }
            if let timer, fds[1].revents != 0 { timer.drain() }
            for (index, watch) in polled.enumerated() {
                // An error or hang-up is the read's to find.
                guard fds[watched + index].revents & Int16(POLLOUT) != 0, watches.contains(watch) else { continue }
                libdbusIO { dbus_watch_handle(watch, DBUS_WATCH_WRITABLE.rawValue) }
            }
            if socket != nil, fds[reading].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { receive() }
            fireTimeouts()
        }
        // Jobs accepted while the loop was closing down: each sees the
        // connection closed and fails its caller rather than strand it.
        let stranded = shared.withLock { state -> [@Sendable () -> Void] in
            state.closed = true
            defer {
                state.jobs.removeAll()
                state.timed.removeAll()
            }
            return state.jobs + state.timed.map(\.job)
        }
        for job in stranded { job() }
        failPending()
    }

    /// Runs `io`, a libdbus call that may read or write the socket and,
    /// finding the connection broken, close its descriptor, under the
    /// outbox's lock: no other thread writes meanwhile, and the outbox
    /// forgets the descriptor as soon as libdbus has closed it.
    private func libdbusIO(_ io: () -> Void) {
        outbox.withLock { outbox in
            io()
            if dbus_connection_get_is_connected(raw) == 0 { outbox.forget() }
        }
    }

    private func pollTimeout() -> Int32 {
        var nearest = Int64.max
        for (timeout, deadline) in timeouts where dbus_timeout_get_enabled(timeout) != 0 {
            nearest = min(nearest, deadline)
        }
        for reply in pending.values { nearest = min(nearest, reply.deadline) }
        if nearest == Int64.max { return -1 }
        return Int32(clamping: max(0, nearest - Connection.now()))
    }

    private func fireTimeouts() {
        let now = Connection.now()
        for (timeout, deadline) in timeouts where deadline <= now && dbus_timeout_get_enabled(timeout) != 0 {
            timeouts[timeout] = now + Int64(dbus_timeout_get_interval(timeout))
            libdbusIO { _ = dbus_timeout_handle(timeout) }
        }
        let expired = pending.filter { $0.value.deadline <= now }
        for (serial, reply) in expired {
            pending[serial] = nil
            reply.complete(.failure(DBusError(.noReply, "no reply within the time allowed")))
        }
    }

    /// Reads once from the bus, as much as it has sent (`Inbox`); the end
    /// of the stream or an error ends the connection.
    private func receive() {
        let reading = outbox.withLock { outbox -> Inbox.Reading? in
            // Under the lock: a failed write by libdbus closes the
            // descriptor, and the outbox forgets it at once.
            guard let socket = outbox.socket else { return nil }
            return (try? inbox.read(from: socket)) ?? .ended
        }
        if reading == nil || reading == .ended { lose() }
    }

    /// Dispatches every whole message read; bytes that cannot be a
    /// message end the connection (nothing after them can be read).
    private func dispatchReceived() {
        while receiving {
            let message: ReceivedMessage?
            do {
                message = try inbox.next()
            } catch {
                lose()
                return
            }
            guard let message else { return }
            handle(message)
        }
    }

    private func handle(_ received: ReceivedMessage) {
        switch received.header.kind {
        case .methodReturn, .error:
            guard let reply = pending.removeValue(forKey: received.header.replySerial) else { return }
            reply.complete(Result { try received.decode() })
        case .signal:
            guard !subscriptions.isEmpty, let message = try? received.decode() else { return }
            for subscription in subscriptions where subscription.rule.matches(message) {
                subscription.handler(message)
            }
        case .methodCall:
            objects.dispatch(received, on: self)
        }
    }

    /// The bus has gone, or sent what cannot be read: the connection ends.
    private func lose() {
        guard receiving else { return }
        receiving = false
        outbox.withLock { outbox in
            outbox.forget()
            dbus_connection_close(raw)
        }
        connectionLost()
    }

    private func connectionLost() {
        outbox.withLock { $0.forget() }
        let handlers = shared.withLock { state -> [@Sendable () -> Void] in
            state.closed = true
            defer { state.disconnectHandlers = [] }
            return state.disconnectHandlers
        }
        failPending()
        for handler in handlers { handler() }
    }

    private func failPending() {
        let replies = pending
        pending = [:]
        for reply in replies.values {
            reply.complete(.failure(DBusError.disconnected("the connection to the bus was closed")))
        }
    }

    private func shutDown() {
        // What was sent before the close leaves first, as far as the bus
        // takes it within a second.
        var left = outbox.withLock { $0.release(connection: raw) }
        let giveUp = Connection.now() + 1000
        while left != .nothing, Connection.now() < giveUp {
            if left == .waitingForSocket, let socket = outbox.withLock({ $0.descriptor }) {
                var room = [pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)]
                _ = try? Poll.wait(&room, timeout: 100)
            } else {
                libdbusIO { dbus_connection_flush(raw) }
            }
            left = outbox.withLock { $0.flush(connection: raw) }
        }
        receiving = false
        outbox.withLock { outbox in
            dbus_connection_flush(raw)
            outbox.forget()
            dbus_connection_close(raw)
        }
        connectionLost()
        watches.removeAll()
    }
}
