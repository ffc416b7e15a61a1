import CDBus
import FoundationEssentials
import Glibc
import Posix

/// A message as it came from the bus, read by the connection itself: its
/// header read into a `Message` (with no body), its bytes kept for the
/// body to be read once its method's types are known (`WireReader`), and
/// the file descriptors it carries.
///
/// The bus checked every message it passes on against the specification
/// (its signature, its UTF-8, its header's fields), so the header is read
/// here without libdbus's second check of all of it, which cost a quarter
/// of a busy service's time; the reading still checks every length,
/// offset and type it uses and throws rather than read past the end.
final class ReceivedMessage: @unchecked Sendable {
    // @unchecked: everything is immutable after init; the bytes and the
    // descriptors are owned here and freed with the message.
    let header: Message
    /// The whole message, as the bus sent it.
    private let bytes: UnsafeMutableRawBufferPointer
    private let bodyStart: Int
    private let bigEndian: Bool
    /// The descriptors the message carries; an `h` is an index here.
    private let descriptors: [FileDescriptor]

    /// The message whose bytes are `bytes` (taken over), with the
    /// descriptors `take` hands over for the number its header counts
    /// (taken for a message of a kind to come too, which is then refused
    /// with `UnknownKind`).
    init(taking bytes: UnsafeMutableRawBufferPointer, descriptors take: (Int) throws -> [FileDescriptor]) throws {
        self.bytes = bytes
        do {
            let read = try Self.readHeader(UnsafeRawBufferPointer(bytes))
            descriptors = try take(read.carried)
            guard let header = read.header else { throw UnknownKind() }
            (self.header, bodyStart, bigEndian) = (header, read.bodyStart, read.bigEndian)
        } catch {
            bytes.deallocate()
            throw error
        }
    }

    deinit {
        bytes.deallocate()
    }

    var serial: UInt32 { header.serial }

    /// A reader at the start of the body; valid while the message lives.
    func bodyReader() -> WireReader {
        WireReader(
            body: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[bodyStart...]), bigEndian: bigEndian,
            descriptors: descriptors)
    }

    /// The message with its body's values.
    func decode() throws -> Message {
        var message = header
        message.body = try decodeBody()
        return message
    }

    /// The body's values, read by the message's own signature.
    func decodeBody() throws -> [Value] {
        let signature = header.signature
        guard !signature.isEmpty else { return [] }
        let types: [DBusType]
        do {
            types = try DBusType.parseList(signature)
        } catch {
            throw DBusError.invalidArgs("the message's signature '\(signature)' is not valid")
        }
        return try decodeBody(types: types)
    }

    /// The body's values, read as `method`'s inputs: the caller has checked
    /// that the message's signature is the method's.
    func decodeBody(as method: Method) throws -> [Value] {
        try decodeBody(types: method.inputTypes)
    }

    private func decodeBody(types: [DBusType]) throws -> [Value] {
        guard !types.isEmpty else { return [] }
        var reader = bodyReader()
        var values: [Value] = []
        values.reserveCapacity(types.count)
        for type in types {
            values.append(try reader.read(type))
        }
        return values
    }

    /// An empty method return for this call, addressed to its caller.
    /// The corresponding C function is `dbus_message_new_method_return`.
    func methodReturn() throws -> MessageHandle {
        try answer(DBUS_MESSAGE_TYPE_METHOD_RETURN)
    }

    /// The error `error` in answer to this call, addressed to its caller.
    /// The corresponding C function is `dbus_message_new_error`.
    func errorReply(_ error: DBusError) throws -> MessageHandle {
        let reply = try answer(DBUS_MESSAGE_TYPE_ERROR)
        guard dbus_message_set_error_name(reply.pointer, error.name.rawValue) != 0 else {
            throw DBusError(.noMemory, "out of memory creating an error reply")
        }
        let text = Validation.isTransportable(error.message) ? error.message : "(message had a NUL byte)"
        try reply.append([.string(text)])
        return reply
    }

    private func answer(_ type: Int32) throws -> MessageHandle {
        guard let pointer = dbus_message_new(type) else { throw DBusError(.noMemory, "out of memory creating a reply") }
        let reply = MessageHandle(owning: pointer)
        dbus_message_set_no_reply(pointer, 1)
        guard dbus_message_set_reply_serial(pointer, header.serial) != 0,
            header.sender.map({ dbus_message_set_destination(pointer, $0) != 0 }) ?? true
        else {
            throw DBusError(.noMemory, "out of memory addressing a reply")
        }
        return reply
    }

    // MARK: The header

    /// The fixed header's size, and where the fields begin.
    static let fixedHeaderSize = 16
    /// The specification's largest message, 128 MiB.
    static let maximumSize = 1 << 27

    /// How many bytes the message starting with the fixed header `fixed`
    /// (16 bytes) takes, header and body; nil where it cannot be a message.
    static func size(fixedHeader fixed: UnsafeRawBufferPointer) -> Int? {
        guard fixed.count >= fixedHeaderSize, fixed[0] == UInt8(ascii: "l") || fixed[0] == UInt8(ascii: "B"), fixed[3] == 1 else {
            return nil
        }
        let bigEndian = fixed[0] == UInt8(ascii: "B")
        func number(at offset: Int) -> Int {
            let raw = fixed.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return Int(bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw))
        }
        let bodyLength = number(at: 4)
        let fieldsLength = number(at: 12)
        guard bodyLength <= maximumSize, fieldsLength <= maximumSize else { return nil }
        let size = (fixedHeaderSize + fieldsLength + 7) & ~7 + bodyLength
        return size <= maximumSize ? size : nil
    }

    /// The header of the message `bytes`, nil for a kind to come; where its
    /// body starts; its byte order; the descriptors it says it carries.
    private static func readHeader(
        _ bytes: UnsafeRawBufferPointer
    ) throws -> (header: Message?, bodyStart: Int, bigEndian: Bool, carried: Int) {
        guard let size = size(fixedHeader: bytes), size == bytes.count else { throw malformed("whose lengths do not add up") }
        let bigEndian = bytes[0] == UInt8(ascii: "B")
        func number(at offset: Int) -> UInt32 {
            let raw = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
        }
        let kind: Message.Kind?
        switch bytes[1] {
        case 1: kind = .methodCall
        case 2: kind = .methodReturn
        case 3: kind = .error
        case 4: kind = .signal
        default: kind = nil
        }
        let noReplyExpected = bytes[2] & 0x1 != 0
        let serial = number(at: 8)
        guard serial != 0 else { throw malformed("with serial 0") }
        let fieldsLength = Int(number(at: 12))

        var path: ObjectPath?
        var interface: String?
        var member: String?
        var errorName: String?
        var replySerial: UInt32 = 0
        var destination: String?
        var sender: String?
        var signature = ""
        var carried: UInt32 = 0
        let strings = HeaderStrings.shared
        var fields = WireReader(fieldsOf: bytes, bigEndian: bigEndian, length: fieldsLength)
        while !fields.isAtEnd {
            try fields.align(8)
            let code = try fields.readByte()
            let type = try fields.readSignatureBytes()
            let expected: UInt8
            switch code {
            case 1: expected = UInt8(ascii: "o")
            case 2, 3, 4, 6, 7: expected = UInt8(ascii: "s")
            case 5, 9: expected = UInt8(ascii: "u")
            case 8: expected = UInt8(ascii: "g")
            default:
                // A field of a later version of the specification: skipped.
                guard let inner = try? DBusType.parseList(String(decoding: type, as: UTF8.self)), inner.count == 1 else {
                    throw malformed("with a header field of type '\(String(decoding: type, as: UTF8.self))'")
                }
                _ = try fields.read(inner[0])
                continue
            }
            guard type.count == 1, type[0] == expected else { throw malformed("with header field \(code) of the wrong type") }
            switch code {
            case 1: path = ObjectPath(unchecked: strings.string(try fields.readStringBytes()))
            case 2: interface = strings.string(try fields.readStringBytes())
            case 3: member = strings.string(try fields.readStringBytes())
            case 4: errorName = strings.string(try fields.readStringBytes())
            case 5: replySerial = try fields.readUInt32()
            case 6: destination = strings.string(try fields.readStringBytes())
            case 7: sender = strings.string(try fields.readStringBytes())
            case 8: signature = strings.string(try fields.readSignatureBytes())
            default: carried = try fields.readUInt32()
            }
        }
        let bodyStart = (fixedHeaderSize + fieldsLength + 7) & ~7
        guard let kind else { return (nil, bodyStart, bigEndian, Int(carried)) }
        switch kind {
        case .methodCall:
            guard path != nil, member != nil else { throw malformed("calling without a path or a member") }
        case .signal:
            guard path != nil, interface != nil, member != nil else { throw malformed("signalling without a path, an interface or a member") }
        case .error:
            guard errorName != nil, replySerial != 0 else { throw malformed("answering with an error without its name or the call's serial") }
        case .methodReturn:
            guard replySerial != 0 else { throw malformed("answering without the call's serial") }
        }
        let message = Message(
            kind: kind, serial: serial, replySerial: replySerial, sender: sender, destination: destination, path: path,
            interface: interface, member: member, errorName: errorName, signature: signature, body: [],
            noReplyExpected: noReplyExpected)
        return (message, bodyStart, bigEndian, Int(carried))
    }

    /// A message of a type later versions of the specification may add,
    /// which a receiver ignores.
    struct UnknownKind: Error {}

    private static func malformed(_ what: String) -> DBusError {
        .invalidArgs("the bus sent a message \(what)")
    }
}

/// What the connection has read from the bus's socket and not yet cut into
/// messages: the bytes, and the file descriptors that came with them.
/// The loop thread's alone.
final class Inbox {
    private var storage: UnsafeMutableRawBufferPointer
    /// The bytes from `start` to `end` are read and not yet taken.
    private var start = 0
    private var end = 0
    /// Descriptors received and not yet taken by a message, in order.
    private var descriptors: [FileDescriptor] = []

    /// The room a read asks for: a burst of calls in flight (32 Notify
    /// calls are about 12 KiB) comes in one read, and is answered in one turn.
    static let readSize = 32 * 1024
    /// What the inbox keeps allocated between messages larger than this.
    private static let keptSize = 2 * readSize

    init() {
        storage = .allocate(byteCount: Self.keptSize, alignment: 8)
    }

    deinit {
        storage.deallocate()
    }

    /// What one read found.
    enum Reading: Equatable {
        /// Bytes (and perhaps descriptors).
        case read
        /// Nothing waiting.
        case nothing
        /// The end of the stream: the bus has gone.
        case ended
    }

    /// Reads what the socket holds, as much as there is room for, without
    /// waiting.
    func read(from socket: FileDescriptor) throws(Errno) -> Reading {
        makeRoom(for: Self.readSize)
        let length: Int
        do {
            length = try socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: storage[end...]), descriptors: &descriptors)
        } catch Errno.wouldBlock {
            return .nothing
        }
        guard length > 0 else { return .ended }
        end += length
        return .read
    }

    /// The next whole message read, taken out; nil until one is whole.
    /// Throws where the bytes cannot be a message: the stream is then
    /// lost, and the connection with it.
    func next() throws -> ReceivedMessage? {
        while end - start >= ReceivedMessage.fixedHeaderSize {
            let waiting = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[start..<end])
            guard let size = ReceivedMessage.size(fixedHeader: waiting) else {
                throw DBusError.failed("the bus sent bytes that do not start a message")
            }
            guard size <= waiting.count else {
                makeRoom(for: size - waiting.count)
                return nil
            }
            let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
            bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: waiting[0..<size]))
            start += size
            if start == end { start = 0; end = 0 }
            do {
                return try ReceivedMessage(taking: bytes) { carried in
                    guard carried <= descriptors.count else {
                        throw DBusError.failed("the bus sent a message with \(carried) file descriptors, where \(descriptors.count) came")
                    }
                    defer { descriptors.removeFirst(carried) }
                    return Array(descriptors[0..<carried])
                }
            } catch is ReceivedMessage.UnknownKind {
                continue
            }
        }
        return nil
    }

    /// Makes room for `more` bytes after `end`: the waiting bytes move to
    /// the front, and the storage grows where that is not enough, or
    /// shrinks back once a large message is gone.
    private func makeRoom(for more: Int) {
        let waiting = end - start
        if storage.count > Self.keptSize, waiting == 0, more <= Self.keptSize {
            storage.deallocate()
            storage = .allocate(byteCount: Self.keptSize, alignment: 8)
            (start, end) = (0, 0)
            return
        }
        guard storage.count - end < more else { return }
        if waiting + more <= storage.count {
            if waiting > 0, let base = storage.baseAddress { memmove(base, base + start, waiting) }
            (start, end) = (0, waiting)
            return
        }
        let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(2 * storage.count, waiting + more), alignment: 8)
        larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[start..<end]))
        storage.deallocate()
        storage = larger
        (start, end) = (0, waiting)
    }
}
