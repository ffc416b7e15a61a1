import CDBus
import FoundationEssentials
import Glibc
import Posix

/// A received message's body read from its bytes as the specification
/// marshals them, rather than through libdbus's iterators, which walk the
/// signature again for every value and cost several times more (a Notify's
/// eight arguments and hints took most of a message's decoding time).
///
/// libdbus checked the body against its signature when the message
/// arrived; the reader still checks every length, offset and type code it
/// uses, and throws rather than read past the end or trap. Bodies that
/// carry file descriptors (`h`) are left to the iterators, which hand
/// out duplicates of the descriptors the message holds.
struct WireReader {
    /// The message as D-Bus marshals it (fixed header, fields, body), or
    /// its body alone.
    private let bytes: UnsafeRawBufferPointer
    private let bigEndian: Bool
    /// The next byte to read. Alignment counts from the start of `bytes`,
    /// the message's or its body's.
    private var offset: Int
    /// Where the body ends.
    private var end: Int
    /// The file descriptors that came with a message received by the
    /// connection itself (`ReceivedMessage`), which an `h` indexes; nil
    /// for a libdbus message, whose descriptors only its iterators hand out.
    private let descriptors: [FileDescriptor]?

    /// The values of `message`'s body, or nil where the reader leaves it
    /// to libdbus (its body carries file descriptors).
    static func body(of message: OpaquePointer, signature: String) throws -> [Value]? {
        guard !signature.isEmpty else { return [] }
        guard !signature.utf8.contains(UInt8(ascii: "h")) else { return nil }
        let types: [DBusType]
        do {
            types = try DBusType.parseList(signature)
        } catch {
            throw DBusError.invalidArgs("the message's signature '\(signature)' is not valid")
        }
        return try body(of: message, types: types)
    }

    /// The values of `message`'s body, whose signature is known to be
    /// that of `types`, or nil where it holds a file descriptor.
    static func body(of message: OpaquePointer, types: [DBusType]) throws -> [Value]? {
        guard !types.isEmpty else { return [] }
        return try reading(message) { reader in
            var values: [Value] = []
            values.reserveCapacity(types.count)
            for type in types {
                values.append(try reader.read(type))
            }
            return values
        }
    }

    /// A variant holds a file descriptor: the body is libdbus's to read.
    struct CarriesDescriptors: Error {}

    /// `read` over a reader at the start of `message`'s body, while the
    /// body's bytes are held; nil where the body is libdbus's to read.
    static func reading<T>(_ message: OpaquePointer, _ read: (inout WireReader) throws -> T) throws -> T? {
        var (copy, reader) = try bodyReader(message)
        defer { if let copy { dbus_free(copy) } }
        do {
            return try read(&reader)
        } catch is CarriesDescriptors {
            return nil
        }
    }

    /// A reader at the start of `message`'s body: over libdbus's own bytes
    /// where their place is known (`MessageLayout`), else over a copy as
    /// libdbus marshals it, which the caller frees with `dbus_free`
    /// (`copy`, nil for the first). `message` must outlive the reader.
    static func bodyReader(_ message: OpaquePointer) throws -> (copy: UnsafeMutablePointer<CChar>?, reader: WireReader) {
        if let layout = MessageLayout.current, let order = layout.headerBytes(message).first,
            order == UInt8(ascii: "l") || order == UInt8(ascii: "B")
        {
            return (nil, WireReader(body: UnsafeRawBufferPointer(layout.bodyBytes(message)), bigEndian: order == UInt8(ascii: "B")))
        }
        var marshalled: UnsafeMutablePointer<CChar>?
        var count: Int32 = 0
        guard dbus_message_marshal(message, &marshalled, &count) != 0, let marshalled else {
            throw DBusError(.noMemory, "out of memory reading a message")
        }
        do {
            return (marshalled, try WireReader(message: UnsafeRawBufferPointer(start: marshalled, count: Int(count))))
        } catch {
            dbus_free(marshalled)
            throw error
        }
    }

    /// A reader over a body's bytes, which begin at a multiple of 8 in
    /// their message, as the specification lays them out.
    init(body: UnsafeRawBufferPointer, bigEndian: Bool, descriptors: [FileDescriptor]? = nil) {
        bytes = body
        self.bigEndian = bigEndian
        self.descriptors = descriptors
        offset = 0
        end = body.count
    }

    /// A reader at the start of `message`'s body.
    init(message: UnsafeRawBufferPointer) throws {
        bytes = message
        descriptors = nil
        guard message.count >= 16 else { throw Self.malformed("shorter than its fixed header") }
        switch message[0] {
        case UInt8(ascii: "l"): bigEndian = false
        case UInt8(ascii: "B"): bigEndian = true
        default: throw Self.malformed("of an unknown byte order")
        }
        // The body's length at 4, the header fields' at 12; the body
        // starts at the next multiple of 8 after the fields.
        offset = 4
        end = message.count
        let bodyLength = Int(try readUInt32())
        offset = 12
        let fieldsLength = Int(try readUInt32())
        let bodyStart = (16 + fieldsLength + 7) & ~7
        guard bodyStart <= message.count, bodyLength <= message.count - bodyStart else {
            throw Self.malformed("whose body does not fit its length")
        }
        offset = bodyStart
        end = bodyStart + bodyLength
    }

    /// A reader over the header fields of `message` (its whole bytes), the
    /// `a(yv)` of `length` bytes that follows the fixed header.
    init(fieldsOf message: UnsafeRawBufferPointer, bigEndian: Bool, length: Int) {
        bytes = message
        self.bigEndian = bigEndian
        descriptors = nil
        offset = 16
        end = min(message.count, 16 + length)
    }

    /// True once every byte up to the end is read.
    var isAtEnd: Bool { offset >= end }

    private static func malformed(_ what: String) -> DBusError {
        .invalidArgs("a message \(what)")
    }

    // MARK: Reading values

    mutating func read(_ type: DBusType) throws -> Value {
        switch type {
        case .byte: return .byte(try take(1) { $0.load(as: UInt8.self) })
        case .boolean:
            let raw = try readUInt32()
            guard raw <= 1 else { throw Self.malformed("with a boolean that is neither 0 nor 1") }
            return .boolean(raw == 1)
        case .int16: return .int16(Int16(bitPattern: try readUInt16()))
        case .uint16: return .uint16(try readUInt16())
        case .int32: return .int32(Int32(bitPattern: try readUInt32()))
        case .uint32: return .uint32(try readUInt32())
        case .int64: return .int64(Int64(bitPattern: try readUInt64()))
        case .uint64: return .uint64(try readUInt64())
        case .double: return .double(Double(bitPattern: try readUInt64()))
        case .string: return .string(try readString())
        case .objectPath: return .objectPath(ObjectPath(unchecked: try readString()))
        case .signature:
            let text = try readSignature()
            guard let signature = Signature(rawValue: text) else { throw Self.malformed("with an invalid signature '\(text)'") }
            return .signature(signature)
        case .unixFD:
            // In a libdbus message, only libdbus can hand out the
            // descriptor the index names.
            guard let descriptors else { throw CarriesDescriptors() }
            let index = Int(try readUInt32())
            guard index < descriptors.count else { throw Self.malformed("naming file descriptor \(index) of \(descriptors.count)") }
            do {
                return .unixFD(UnixFileDescriptor(try descriptors[index].duplicate()))
            } catch {
                throw DBusError.failed("cannot keep a file descriptor the message carries: \(error)")
            }
        case .variant:
            let text = try readSignature()
            guard let inner = Self.singleType(text) else { throw Self.malformed("with a variant of signature '\(text)'") }
            if descriptors == nil, Self.carriesDescriptors(inner) { throw CarriesDescriptors() }
            return .variant(try read(inner))
        case .structure(let fields):
            try align(8)
            var values: [Value] = []
            values.reserveCapacity(fields.count)
            for field in fields { values.append(try read(field)) }
            return .structure(values)
        case .array(let element):
            let (start, stop) = try arrayBounds(element)
            if element == .byte {
                offset = stop
                return .bytes(Data(UnsafeRawBufferPointer(rebasing: bytes[start..<stop])))
            }
            return .array(element, try elements(upTo: stop) { try $0.read(element) })
        case .dictionary(let key, let value):
            let (_, stop) = try arrayBounds(.structure([key, value]))
            var entries: [DictionaryEntry] = []
            while offset < stop {
                try align(8)
                let k = try read(key)
                entries.append(DictionaryEntry(k, try read(value)))
            }
            guard offset == stop else { throw Self.malformed("whose dictionary ends inside an entry") }
            return .dictionary(key: key, value: value, entries)
        }
    }

    /// The one complete type `text` names; the common basic ones without
    /// parsing (a variant of `s` or `u` is most of what `a{sv}` holds).
    private static func singleType(_ text: String) -> DBusType? {
        var utf8 = text.utf8.makeIterator()
        if let first = utf8.next(), utf8.next() == nil {
            switch first {
            case UInt8(ascii: "s"): return .string
            case UInt8(ascii: "u"): return .uint32
            case UInt8(ascii: "i"): return .int32
            case UInt8(ascii: "b"): return .boolean
            case UInt8(ascii: "y"): return .byte
            case UInt8(ascii: "x"): return .int64
            case UInt8(ascii: "t"): return .uint64
            case UInt8(ascii: "d"): return .double
            case UInt8(ascii: "o"): return .objectPath
            default: break
            }
        }
        guard let types = try? DBusType.parseList(text), types.count == 1 else { return nil }
        return types[0]
    }

    private static func carriesDescriptors(_ type: DBusType) -> Bool {
        switch type {
        case .unixFD: true
        case .array(let element): carriesDescriptors(element)
        case .dictionary(let key, let value): carriesDescriptors(key) || carriesDescriptors(value)
        case .structure(let fields): fields.contains(where: carriesDescriptors)
        default: false
        }
    }

    /// An array's elements, each read by `element`, from here to `stop`
    /// (its end, from `arrayBounds`).
    mutating func elements<T>(upTo stop: Int, _ element: (inout WireReader) throws -> T) throws -> [T] {
        var elements: [T] = []
        while offset < stop { elements.append(try element(&self)) }
        guard offset == stop else { throw Self.malformed("whose array ends inside an element") }
        return elements
    }

    /// Reads an array's length and the padding to its first element; the
    /// offsets its elements run between, the reader at the first.
    mutating func arrayBounds(_ element: DBusType) throws -> (Int, Int) {
        let length = Int(try readUInt32())
        try align(element.alignment)
        guard length <= end - offset else { throw Self.malformed("whose array is longer than its body") }
        return (offset, offset + length)
    }

    // MARK: Reading bytes

    mutating func align(_ boundary: Int) throws {
        let aligned = (offset + boundary - 1) & ~(boundary - 1)
        guard aligned <= end else { throw Self.malformed("cut short") }
        offset = aligned
    }

    /// Hands the next `count` bytes to `body` and moves past them.
    private mutating func take<T>(_ count: Int, _ body: (UnsafeRawBufferPointer) -> T) throws -> T {
        guard count <= end - offset else { throw Self.malformed("cut short") }
        defer { offset += count }
        return body(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
    }

    private mutating func readUInt16() throws -> UInt16 {
        try align(2)
        let raw = try take(2) { $0.loadUnaligned(as: UInt16.self) }
        return bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw)
    }

    mutating func readUInt32() throws -> UInt32 {
        try align(4)
        let raw = try take(4) { $0.loadUnaligned(as: UInt32.self) }
        return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
    }

    private mutating func readUInt64() throws -> UInt64 {
        try align(8)
        let raw = try take(8) { $0.loadUnaligned(as: UInt64.self) }
        return bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
    }

    /// A string or object path: its length, its UTF-8 and a NUL.
    mutating func readString() throws -> String {
        let length = Int(try readUInt32())
        return try text(length)
    }

    /// A signature: its one-byte length, its bytes and a NUL.
    mutating func readSignature() throws -> String {
        String(decoding: try readSignatureBytes(), as: UTF8.self)
    }

    /// A signature's bytes, without its NUL; valid while the reader's bytes are.
    mutating func readSignatureBytes() throws -> UnsafeRawBufferPointer {
        let length = Int(try readByte())
        return try textBytes(length)
    }

    /// A string's or object path's bytes, without its NUL; valid while the
    /// reader's bytes are.
    mutating func readStringBytes() throws -> UnsafeRawBufferPointer {
        let length = Int(try readUInt32())
        return try textBytes(length)
    }

    mutating func readByte() throws -> UInt8 {
        try take(1) { $0.load(as: UInt8.self) }
    }

    private mutating func text(_ length: Int) throws -> String {
        // The bus checked the message's UTF-8 as it passed it on (libdbus
        // checks it again where it reads the message itself); a decoding
        // still never traps.
        String(decoding: try textBytes(length), as: UTF8.self)
    }

    private mutating func textBytes(_ length: Int) throws -> UnsafeRawBufferPointer {
        guard length < end - offset, bytes[offset + length] == 0 else { throw Self.malformed("with a string not ended by NUL") }
        let utf8 = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
        if let base = utf8.baseAddress, memchr(base, 0, length) != nil { throw Self.malformed("with a NUL inside a string") }
        offset += length + 1
        return utf8
    }
}

/// A call's arguments, read one after another as the Swift types its
/// method declared (`DBusArgument.read(from:)`), straight from the
/// message's bytes: no `Value` is made for a string or a number on the
/// way. The call's signature was checked against the method's before, so
/// each read meets the type it expects; the reader still checks every
/// length and offset, and throws rather than read past the body.
public struct ArgumentReader {
    var wire: WireReader

    /// The next argument as a `Value` of `type`.
    public mutating func value(of type: DBusType) throws -> Value {
        try wire.read(type)
    }

    public mutating func string() throws -> String {
        try wire.readString()
    }

    public mutating func uint32() throws -> UInt32 {
        try wire.readUInt32()
    }

    public mutating func int32() throws -> Int32 {
        Int32(bitPattern: try wire.readUInt32())
    }

    /// An `as`.
    public mutating func strings() throws -> [String] {
        let (_, stop) = try wire.arrayBounds(.string)
        return try wire.elements(upTo: stop) { try $0.readString() }
    }
}

/// The arguments of a call to a method declared with Swift types, handed
/// out in order (`MethodDeclaration`'s bindings pass each straight to the
/// handler, with no tuple of them in between). Read from the message's
/// bytes, held while the arguments are read; from `Value`s where the call
/// was decoded already.
public struct CallArguments: ~Copyable {
    /// Holds the message whose bytes `reader` reads.
    private let call: MethodCall
    private var reader: ArgumentReader?
    private var values: [Value]?
    private var index = 0

    @usableFromInline
    init(_ call: MethodCall) throws {
        self.call = call
        guard call.message.body.isEmpty, !call.message.signature.isEmpty else {
            values = call.message.body
            return
        }
        reader = ArgumentReader(wire: call.handle.bodyReader())
    }

    /// The next argument as `T`. Fails only where `T`'s own rules refuse
    /// the value (an id, say), or the message breaks its signature.
    @usableFromInline
    mutating func next<T: DBusArgument>(_: T.Type) throws -> T {
        defer { index += 1 }
        if values == nil, var wire = reader {
            let value = try T.read(from: &wire)
            reader = wire
            return value
        }
        let values = values ?? []
        guard index < values.count else {
            throw DBusError.invalidArgs("argument \(index + 1) is missing; the method takes '\(T.dbusType.signature)' there")
        }
        return try T(dbusValue: values[index])
    }
}
