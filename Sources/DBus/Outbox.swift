import CDBus
import Glibc
import Posix

/// The messages on their way to the bus, written to the connection's
/// socket here rather than by libdbus, so that what a turn of the loop
/// answers leaves in one write.
///
/// libdbus writes each message by itself, one system call a message, at
/// the moment it is sent. A service that answers a burst (32 Notify calls
/// in flight: each read from the socket brings several) then pays a
/// system call and a wake of the bus for each answer and each signal.
/// While the loop thread runs its jobs and dispatches what it read
/// (`hold`), messages are only queued; at the end of that work (`release`)
/// they leave together, in order, in as few writes as the socket takes.
/// At any other time a message is written at once, from the thread that
/// sends it, as libdbus would.
///
/// Everything written to the socket goes through here, under one lock, so
/// that messages never interleave: every message's serial is given here
/// (libdbus only authenticates the connection; the connection reads what
/// the bus sends itself, `Inbox`), and a message that carries file
/// descriptors (which only libdbus can pass) is handed to libdbus in its
/// place in the queue,
/// with nothing of ours written until libdbus has written all of it.
/// The socket is libdbus's own descriptor: a duplicate would double the
/// descriptors a process with many connections holds.
struct Outbox {
    /// A message waiting, whole or in part.
    fileprivate enum Entry {
        /// Bytes of ours to write: a message's header and body, kept alive
        /// by `owner`.
        case bytes(owner: AnyObject, header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer)
        /// A message laid out in `laidOut`, from `start`, `count` bytes long.
        case laidOut(start: Int, count: Int)
        /// A message that carries file descriptors, for libdbus to send.
        case libdbus(MessageHandle)
        /// Written, and let go.
        case gone
    }

    /// What a write left.
    enum Left: Equatable {
        /// Nothing: every message is written (or handed to libdbus).
        case nothing
        /// Messages the socket did not take: the loop waits until it can
        /// write (`POLLOUT`) and writes again.
        case waitingForSocket
        /// Messages behind one libdbus has not written yet: the loop lets
        /// libdbus write, then writes again.
        case waitingForLibdbus
    }

    /// The connection's socket, libdbus's own descriptor, borrowed: libdbus
    /// closes it when the connection ends, and the number could name
    /// another file by the time a thread writes, so the connection closes
    /// the outbox (`forget`) under its lock wherever libdbus may have closed
    /// it (`Connection.libdbusIO`). Nil once closed.
    private(set) var socket: FileDescriptor?
    private var entries: [Entry] = []
    /// The bytes of the messages queued as copies of a stencil
    /// (`append(_:replyingTo:_:)`), emptied with the queue.
    private var laidOut: [UInt8] = []
    /// The entries before `head` are written.
    private var head = 0
    /// Bytes of the entry at `head` already written.
    private var written = 0
    /// The serial the next message gets; Hello, the first, has 1.
    private var nextSerial: UInt32 = 1
    /// While true, messages are only queued (`hold`).
    private(set) var holding = false
    /// The parts of one write, kept from write to write: at 64 messages
    /// they are too many for the stack, and a write would allocate them.
    private var vectors = [iovec](repeating: iovec(), count: 2 * Outbox.messagesPerWrite)

    /// Messages are at most this many to a write (two parts each).
    static let messagesPerWrite = 64

    /// An outbox for the connection's socket `socket`, which it borrows.
    init(socket: Int32) {
        self.socket = FileDescriptor(borrowing: socket)
    }

    var isEmpty: Bool { head == entries.count }

    /// The socket the loop polls for room to write; nil once closed.
    var descriptor: Int32? { socket?.rawValue }

    /// Queues `message`, giving it its serial, which it returns.
    mutating func append(_ message: MessageHandle) -> UInt32 {
        let pointer = message.pointer
        guard socket != nil else { return 0 }
        var serial = dbus_message_get_serial(pointer)
        if serial == 0 {
            serial = nextSerial
            nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1
            dbus_message_set_serial(pointer, serial)
        }
        if dbus_message_contains_unix_fds(pointer) != 0 {
            entries.append(.libdbus(message))
            return serial
        }
        // Locked, the header holds the body's length as it will be sent.
        dbus_message_lock(pointer)
        if let layout = MessageLayout.current {
            entries.append(.bytes(owner: message, header: UnsafeRawBufferPointer(layout.headerBytes(pointer)), body: UnsafeRawBufferPointer(layout.bodyBytes(pointer))))
        } else if let copy = MarshalledMessage(pointer) {
            entries.append(.bytes(owner: copy, header: copy.bytes, body: UnsafeRawBufferPointer(start: nil, count: 0)))
        }
        return serial
    }

    /// Queues a copy of `stencil` with `values` (and, for a reply, reply
    /// serial `serial`), laid out in the outbox's own bytes: no libdbus
    /// message is made for it. False, and nothing queued, where the values
    /// do not fit the stencil.
    mutating func append(_ stencil: MessageStencil, replyingTo serial: UInt32? = nil, _ values: [Value]) -> Bool {
        guard socket != nil else { return true }
        let start = laidOut.count
        guard stencil.write(into: &laidOut, serial: nextSerial, replyingTo: serial, values) else { return false }
        nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1
        entries.append(.laidOut(start: start, count: laidOut.count - start))
        return true
    }

    /// From now until `release`, messages are only queued.
    mutating func hold() { holding = true }

    /// Messages are written as they come again; what is queued is written
    /// now, as far as the socket takes it.
    mutating func release(connection: OpaquePointer?) -> Left {
        holding = false
        return flush(connection: connection)
    }

    /// Writes what is queued, in order, as far as the socket takes it.
    /// While messages are held, nothing: the loop writes them at `release`.
    /// `connection` is libdbus's, for the messages only it can send (none
    /// without one: they are dropped).
    mutating func flush(connection: OpaquePointer?) -> Left {
        guard !holding else { return .nothing }
        guard socket != nil else { return .nothing }
        while !isEmpty {
            // Nothing of ours goes out while libdbus has a message
            // half-written.
            if let connection, dbus_connection_has_messages_to_send(connection) != 0 { return .waitingForLibdbus }
            if case .libdbus(let message) = entries[head] {
                if let connection { dbus_connection_send(connection, message.pointer, nil) }
                advance()
                // A write that failed closed the descriptor.
                if let connection, dbus_connection_get_is_connected(connection) == 0 {
                    forget()
                    return .nothing
                }
                continue
            }
            switch writeSome() {
            case .some(true): continue
            case .some(false): return .waitingForSocket
            case .none:
                // The socket is broken: the connection's next read sees
                // it and the connection ends; nothing queued can leave.
                drop()
                return .nothing
            }
        }
        entries.removeAll(keepingCapacity: entries.capacity <= 256)
        laidOut.removeAll(keepingCapacity: laidOut.capacity <= 1 << 16)
        head = 0
        return .nothing
    }

    /// Everything queued, forgotten: the socket is broken.
    mutating func drop() {
        entries.removeAll()
        laidOut.removeAll()
        head = 0
        written = 0
    }

    /// Forgets what is queued and the socket: the connection is closed or
    /// lost, and libdbus closes the descriptor. Nothing is written after.
    mutating func forget() {
        drop()
        socket = nil
    }

    /// One write of the byte entries from `head` on (up to a libdbus one):
    /// true where the socket took something, false where it would block,
    /// nil where it failed.
    private mutating func writeSome() -> Bool? {
        let end = min(entries.count, head + Self.messagesPerWrite)
        let taken: Int? = laidOut.withUnsafeBytes { laidOut in vectors.withUnsafeMutableBufferPointer { vectors in
            var count = 0
            // The first entry's bytes already written are left out.
            var skip = written
            func add(_ part: UnsafeRawBufferPointer) {
                guard skip < part.count, let base = part.baseAddress else {
                    skip -= min(skip, part.count)
                    return
                }
                vectors[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base + skip), iov_len: part.count - skip)
                count += 1
                skip = 0
            }
            // Up to a message only libdbus can write.
            parts: for index in head..<end {
                switch entries[index] {
                case .bytes(_, let header, let body):
                    add(header)
                    add(body)
                case .laidOut(let start, let length):
                    add(UnsafeRawBufferPointer(rebasing: laidOut[start..<start + length]))
                case .libdbus:
                    break parts
                case .gone:
                    continue
                }
            }
            guard let socket else { return nil }
            return try? socket.send(gathering: UnsafeMutableBufferPointer(rebasing: vectors[..<count]))
        } }
        guard let taken else { return nil }
        guard taken > 0 else { return false }
        var left = taken
        while left > 0, head < entries.count, let length = entries[head].length {
            let rest = length - written
            if left < rest {
                written += left
                break
            }
            left -= rest
            advance()
        }
        return true
    }

    private mutating func advance() {
        entries[head] = .gone
        head += 1
        written = 0
    }
}

extension Outbox.Entry {
    /// The bytes of a message written here; nil for one libdbus writes.
    fileprivate var length: Int? {
        switch self {
        case .bytes(_, let header, let body): header.count + body.count
        case .laidOut(_, let count): count
        case .libdbus, .gone: nil
        }
    }
}

/// A message's bytes as `dbus_message_marshal` copies them: for a libdbus
/// whose layout `MessageLayout` does not know.
private final class MarshalledMessage {
    let bytes: UnsafeRawBufferPointer

    init?(_ message: OpaquePointer) {
        var marshalled: UnsafeMutablePointer<CChar>? = nil
        var length: Int32 = 0
        guard dbus_message_marshal(message, &marshalled, &length) != 0, let marshalled else { return nil }
        bytes = UnsafeRawBufferPointer(start: marshalled, count: Int(length))
    }

    deinit { dbus_free(UnsafeMutableRawPointer(mutating: bytes.baseAddress)) }
}
