import CDBus
import Glibc

/// Where libdbus keeps a message's bytes, which its API hands out only as a
/// copy (`dbus_message_marshal`) and changes only through calls that each
/// rewrite the header. The outbox reads a message's bytes where they are
/// (`headerBytes`, `bodyBytes`) rather than have them copied.
///
/// libdbus 1.x keeps a message (`struct DBusMessage`, private) as a
/// reference count, then its header (`DBusHeader`, whose first member is
/// a `DBusString` of the header's bytes, followed by a cache of 10 or 11
/// field positions and a word of flags), then a `DBusString` of the body's
/// bytes; a `DBusString` starts with the address of its bytes and their
/// length as an `int`. `current` looks for the two strings there in a
/// probe built through the API and checks them against everything the API
/// says of it: their lengths, bytes, and a header field's and an
/// argument's addresses. Where any check fails (another libdbus, another
/// layout), `current` is nil and every user takes the API's way.
struct MessageLayout: Sendable {
    /// Offsets, in a `DBusMessage`, of the header's and the body's
    /// `DBusString`.
    let header: Int
    let body: Int

    /// The layout of this process's libdbus, checked once; nil where it is
    /// not the one described above.
    static let current: MessageLayout? = {
        let word = MemoryLayout<Int>.size
        // The reference count, aligned to a pointer; the header's string
        // (address, length, allocated, flags), its 10 or 11 field
        // positions and its flags, aligned to a pointer.
        let header = word
        let string = word + 3 * MemoryLayout<Int32>.size
        let stringAligned = (string + word - 1) / word * word
        for fields in [10, 11] {
            let headerSize = stringAligned + (fields + 1) * MemoryLayout<Int32>.size
            let body = header + (headerSize + word - 1) / word * word
            let layout = MessageLayout(header: header, body: body)
            if layout.checked() { return layout }
        }
        return nil
    }()

    /// The header's bytes of `message`, which must be alive and not
    /// changed by another thread meanwhile.
    func headerBytes(_ message: OpaquePointer) -> UnsafeMutableRawBufferPointer {
        bytes(of: message, at: header)
    }

    /// The body's bytes of `message`, as `headerBytes`.
    func bodyBytes(_ message: OpaquePointer) -> UnsafeMutableRawBufferPointer {
        bytes(of: message, at: body)
    }

    private func bytes(of message: OpaquePointer, at offset: Int) -> UnsafeMutableRawBufferPointer {
        let raw = UnsafeRawPointer(message)
        let start = raw.load(fromByteOffset: offset, as: UnsafeMutableRawPointer?.self)
        let count = raw.load(fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self)
        return UnsafeMutableRawBufferPointer(start: start, count: start == nil ? 0 : Int(max(count, 0)))
    }

    /// True where this layout holds for a probe message built through the
    /// API. A length is compared, and an address the API gave found within
    /// the bytes, before any byte is read through the layout.
    private func checked() -> Bool {
        let serial: UInt32 = 0x5EED_1234
        let number: UInt32 = 0xC0FF_EE42
        guard let pointer = dbus_message_new(DBUS_MESSAGE_TYPE_METHOD_RETURN) else { return false }
        let handle = MessageHandle(owning: pointer)
        let probe = handle.pointer
        guard dbus_message_set_destination(probe, ":1.4242") != 0, dbus_message_set_reply_serial(probe, serial) != 0,
            (try? handle.append([.uint32(number), .string("probe")])) != nil
        else { return false }
        // Marshalling sets the lengths in the header it copies from.
        var marshalled: UnsafeMutablePointer<CChar>? = nil
        var length: Int32 = 0
        guard dbus_message_marshal(probe, &marshalled, &length) != 0, let marshalled else { return false }
        defer { dbus_free(marshalled) }
        let wire = UnsafeRawBufferPointer(start: marshalled, count: Int(length))
        guard let headerLength = Self.headerLength(wire) else { return false }
        let bodyLength = wire.count - headerLength

        // The API's addresses of a header field and an argument.
        guard let destination = dbus_message_get_destination(probe) else { return false }
        var iterator = DBusMessageIter()
        var text: UnsafePointer<CChar>? = nil
        guard dbus_message_iter_init(probe, &iterator) != 0, dbus_message_iter_next(&iterator) != 0,
            dbus_message_iter_get_arg_type(&iterator) == Int32(UInt8(ascii: "s"))
        else { return false }
        dbus_message_iter_get_basic(&iterator, &text)
        guard let text else { return false }

        let raw = UnsafeRawPointer(probe)
        guard raw.load(fromByteOffset: header + MemoryLayout<Int>.size, as: Int32.self) == Int32(headerLength),
            raw.load(fromByteOffset: body + MemoryLayout<Int>.size, as: Int32.self) == Int32(bodyLength)
        else { return false }
        let headerBytes = headerBytes(probe)
        let bodyBytes = bodyBytes(probe)
        guard Self.holds(headerBytes, UnsafeRawPointer(destination)), Self.holds(bodyBytes, UnsafeRawPointer(text)),
            headerBytes.elementsEqual(wire[..<headerLength]), bodyBytes.elementsEqual(wire[headerLength...])
        else { return false }
        return true
    }

    /// The length of a marshalled message's header, its fields' padding
    /// included; nil where the bytes are too short for it.
    static func headerLength(_ wire: UnsafeRawBufferPointer) -> Int? {
        guard wire.count >= 16 else { return nil }
        let fields = Int(number(UInt32.self, in: wire, at: 12, bigEndian: wire[0] == UInt8(ascii: "B")))
        let length = (16 + fields + 7) & ~7
        return length <= wire.count ? length : nil
    }

    private static func holds(_ bytes: UnsafeMutableRawBufferPointer, _ address: UnsafeRawPointer) -> Bool {
        guard let start = bytes.baseAddress else { return false }
        return address >= UnsafeRawPointer(start) && address < UnsafeRawPointer(start) + bytes.count
    }

    static func number<T: FixedWidthInteger>(_: T.Type, in bytes: UnsafeRawBufferPointer, at offset: Int, bigEndian: Bool) -> T {
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        return bigEndian ? T(bigEndian: value) : T(littleEndian: value)
    }
}

/// A message built once through libdbus and kept as the bytes the bus
/// reads, laid out again for each sending with its leading fixed-width
/// arguments, its serial and a reply's serial written in: Notify's answer
/// and the NotificationClosed that follows it cost a copy of some hundred
/// bytes each, where a build through the API costs a reply of one number
/// about 13,000 instructions and a signal of two numbers 30,000.
final class MessageStencil: Sendable {
    /// The body's argument types, in order.
    let types: [DBusType]
    /// Where each written argument starts in the body, and its width: the
    /// leading ones of fixed width.
    private let slots: [(offset: Int, width: Int)]
    /// Where a reply's serial is in the header.
    private let replySerial: Int?
    private let bigEndian: Bool
    /// The message as the bus reads it (serial 0), and where its body
    /// starts: what `write(into:serial:replyingTo:_:)` lays out.
    private let wire: [UInt8]
    private let headerLength: Int

    /// A stencil of `message`, which has not been sent (its serial is 0)
    /// and whose body's types are `types`; nil where the message does not
    /// read as expected.
    init?(copying message: OpaquePointer, types: [DBusType]) {
        guard dbus_message_get_serial(message) == 0, let copy = dbus_message_copy(message) else { return nil }
        // Marshalled from a copy: marshalling sets the lengths in the
        // header of the message it is given.
        defer { dbus_message_unref(copy) }
        self.types = types
        var marshalled: UnsafeMutablePointer<CChar>? = nil
        var length: Int32 = 0
        guard dbus_message_marshal(copy, &marshalled, &length) != 0, let marshalled else { return nil }
        defer { dbus_free(marshalled) }
        let wire = UnsafeRawBufferPointer(start: marshalled, count: Int(length))
        guard let headerLength = MessageLayout.headerLength(wire), wire[0] == UInt8(ascii: "l") || wire[0] == UInt8(ascii: "B") else {
            return nil
        }
        bigEndian = wire[0] == UInt8(ascii: "B")
        var slots: [(Int, Int)] = []
        var offset = 0
        for type in types {
            guard let width = type.fixedWidth else { break }
            offset = (offset + width - 1) / width * width
            slots.append((offset, width))
            offset += width
        }
        guard offset <= wire.count - headerLength else { return nil }
        self.slots = slots
        self.wire = Array(wire)
        self.headerLength = headerLength
        replySerial = Self.fieldValue(DBUS_HEADER_FIELD_REPLY_SERIAL, in: UnsafeRawBufferPointer(rebasing: wire[..<headerLength]), bigEndian: bigEndian)
    }

    /// Appends to `bytes` the message with `values` as its leading
    /// fixed-width arguments (of the stencil's types) and, for a reply,
    /// `serial` as its reply serial, as the bus reads it, with serial
    /// `own`: no libdbus message is made, for a sender that writes bytes
    /// (`Outbox`). False, and nothing appended, where `values` do not fit.
    func write(into bytes: inout [UInt8], serial own: UInt32, replyingTo serial: UInt32? = nil, _ values: [Value]) -> Bool {
        guard values.count <= slots.count, serial == nil || replySerial != nil else { return false }
        for (index, value) in values.enumerated() where value.type != types[index] || value.fixedBits == nil { return false }
        let start = bytes.count
        bytes.append(contentsOf: wire)
        bytes.withUnsafeMutableBytes { all in
            let message = UnsafeMutableRawBufferPointer(rebasing: all[start...])
            let body = UnsafeMutableRawBufferPointer(rebasing: message[headerLength...])
            for (index, value) in values.enumerated() {
                guard let bits = value.fixedBits else { continue }
                let (offset, width) = slots[index]
                put(bits, width: width, into: body, at: offset)
            }
            if let serial, let replySerial { put(UInt64(serial), width: 4, into: message, at: replySerial) }
            // The fixed header's serial: endianness, type, flags and
            // version (a byte each), then the body's length.
            put(UInt64(own), width: 4, into: message, at: 8)
        }
        return true
    }

    private func put(_ bits: UInt64, width: Int, into bytes: UnsafeMutableRawBufferPointer, at offset: Int) {
        switch width {
        case 1: bytes.storeBytes(of: UInt8(truncatingIfNeeded: bits), toByteOffset: offset, as: UInt8.self)
        case 2:
            let value = UInt16(truncatingIfNeeded: bits)
            bytes.storeBytes(of: bigEndian ? value.bigEndian : value.littleEndian, toByteOffset: offset, as: UInt16.self)
        case 4:
            let value = UInt32(truncatingIfNeeded: bits)
            bytes.storeBytes(of: bigEndian ? value.bigEndian : value.littleEndian, toByteOffset: offset, as: UInt32.self)
        default:
            bytes.storeBytes(of: bigEndian ? bits.bigEndian : bits.littleEndian, toByteOffset: offset, as: UInt64.self)
        }
    }

    /// Where the value of header field `code` starts, for a field of type
    /// UINT32; nil where the header has none.
    static func fieldValue(_ code: Int32, in header: UnsafeRawBufferPointer, bigEndian: Bool) -> Int? {
        guard header.count >= 16 else { return nil }
        let end = min(16 + Int(MessageLayout.number(UInt32.self, in: header, at: 12, bigEndian: bigEndian)), header.count)
        var offset = 16
        // Each field: a byte code, then a variant (signature, value),
        // the whole aligned to 8.
        while offset + 4 <= end {
            offset = (offset + 7) & ~7
            guard offset + 4 <= end else { return nil }
            let field = Int32(header[offset])
            let signatureLength = Int(header[offset + 1])
            guard signatureLength == 1, offset + 3 < end else { return nil }
            let type = header[offset + 2]
            var value = offset + 4
            switch type {
            case UInt8(ascii: "u"):
                if field == code { return value + 4 <= end ? value : nil }
                value += 4
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                guard value + 4 <= end else { return nil }
                value += 4 + Int(MessageLayout.number(UInt32.self, in: header, at: value, bigEndian: bigEndian)) + 1
            case UInt8(ascii: "g"):
                guard value < end else { return nil }
                value += 1 + Int(header[value]) + 1
            default:
                return nil
            }
            offset = value
        }
        return nil
    }
}

extension DBusType {
    /// The width of a fixed-width basic type on the wire, which is also
    /// its alignment; nil for the others.
    var fixedWidth: Int? {
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double: alignment
        default: nil
        }
    }
}

extension Value {
    /// A fixed-width value's bits as the wire holds them, in the low
    /// bytes; nil for the others (and for a file descriptor, which is an
    /// index only libdbus hands out).
    var fixedBits: UInt64? {
        switch self {
        case .byte(let number): UInt64(number)
        case .boolean(let on): on ? 1 : 0
        case .int16(let number): UInt64(UInt16(bitPattern: number))
        case .uint16(let number): UInt64(number)
        case .int32(let number): UInt64(UInt32(bitPattern: number))
        case .uint32(let number): UInt64(number)
        case .int64(let number): UInt64(bitPattern: number)
        case .uint64(let number): number
        case .double(let number): number.bitPattern
        default: nil
        }
    }
}
