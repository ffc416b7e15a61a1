import CDBus
import FoundationEssentials
import Glibc

/// Values kept on disk exactly as D-Bus carries them: a hint or an action's
/// target read back after a restart is the same value of the same type,
/// which a property list (no unsigned, no 16-bit, no variants) cannot promise.
extension Value {
    /// The value in D-Bus's wire format: a signal message that holds only
    /// it, little-endian, with serial 1, its header's fields the path,
    /// interface, member and signature, in that order. These are the bytes
    /// libdbus marshals for such a message (`dbus_message_marshal`), laid
    /// out here by `WireWriter`: a notification's hints are kept this way
    /// before its Notify is answered, and a message built through libdbus
    /// cost several times the rest of the record.
    public func wireBytes() throws -> Data {
        var body = WireWriter()
        try body.write(self)
        var message = WireWriter()
        try message.writeSignalHeader(
            path: "/io/github/todayd/Value", interface: "io.github.todayd.Value", member: "V", signature: type.signature,
            bodyLength: body.bytes.count)
        message.bytes.append(contentsOf: body.bytes)
        return Data(message.bytes)
    }

    /// The value `wireBytes` wrote; throws for anything else.
    /// The corresponding C function is `dbus_message_demarshal`.
    public init(wireBytes data: Data) throws {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let pointer = data.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count <= Int(Int32.max) else { return nil }
            return dbus_message_demarshal(base, Int32(raw.count), &error)
        }
        guard let pointer else { throw Connection.convert(&error, fallback: "not a value in D-Bus's wire format") }
        let body = try MessageHandle(owning: pointer).decodeBody()
        guard body.count == 1 else { throw DBusError.invalidArgs("the kept bytes hold \(body.count) values, not one") }
        self = body[0]
    }
}

/// Lays values out as the specification marshals them, little-endian: the
/// counterpart of `WireReader`, for values kept as bytes. Alignment counts
/// from the start of `bytes`, which a body must begin at a multiple of 8.
struct WireWriter {
    /// The bytes laid out so far.
    var bytes: [UInt8] = []

    /// The longest array the specification allows, in bytes.
    static let longestArray = 1 << 26

    mutating func write(_ value: Value) throws {
        switch value {
        case .byte(let byte): bytes.append(byte)
        case .boolean(let on): put(UInt32(on ? 1 : 0))
        case .int16(let number): put(UInt16(bitPattern: number))
        case .uint16(let number): put(number)
        case .int32(let number): put(UInt32(bitPattern: number))
        case .uint32(let number): put(number)
        case .int64(let number): put(UInt64(bitPattern: number))
        case .uint64(let number): put(number)
        case .double(let number): put(number.bitPattern)
        case .string(let text): try putString(text)
        case .objectPath(let path): try putString(path.rawValue)
        case .signature(let signature): try putSignature(signature.rawValue)
        case .unixFD:
            throw DBusError.invalidArgs("a file descriptor cannot be kept as bytes")
        case .bytes(let data):
            try array(of: .byte) { $0.bytes.append(contentsOf: data) }
        case .array(let element, let values):
            try array(of: element) { writer in
                for value in values {
                    guard value.type == element else { throw DBusError.invalidArgs("an array of \(element.signature) holds a \(value.type.signature)") }
                    try writer.write(value)
                }
            }
        case .dictionary(let keyType, let valueType, let entries):
            try array(of: .structure([keyType, valueType])) { writer in
                for entry in entries {
                    guard entry.key.type == keyType, entry.value.type == valueType else {
                        throw DBusError.invalidArgs("a dictionary of {\(keyType.signature)\(valueType.signature)} holds another entry")
                    }
                    writer.pad(to: 8)
                    try writer.write(entry.key)
                    try writer.write(entry.value)
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError.invalidArgs("an empty structure cannot be kept") }
            pad(to: 8)
            for field in fields { try write(field) }
        case .variant(let inner):
            try putSignature(inner.type.signature)
            try write(inner)
        }
    }

    /// A signal's fixed header and its fields, padded to where the body
    /// begins.
    mutating func writeSignalHeader(path: String, interface: String, member: String, signature: String, bodyLength: Int) throws {
        guard let length = UInt32(exactly: bodyLength) else { throw DBusError.invalidArgs("a value of \(bodyLength) bytes is too long") }
        // Little-endian, a signal, no reply expected (as libdbus marks
        // every signal), version 1.
        bytes.append(contentsOf: [UInt8(ascii: "l"), 4, 1, 1])
        put(length)
        put(UInt32(1))
        try array(of: .structure([.byte, .variant])) { fields in
            try fields.field(1, "o", path)
            try fields.field(2, "s", interface)
            try fields.field(3, "s", member)
            fields.pad(to: 8)
            fields.bytes.append(8)
            try fields.putSignature("g")
            try fields.putSignature(signature)
        }
        pad(to: 8)
    }

    /// A header field `(yv)` whose variant holds a string of type `code`.
    private mutating func field(_ number: UInt8, _ code: String, _ text: String) throws {
        pad(to: 8)
        bytes.append(number)
        try putSignature(code)
        try putString(text)
    }

    /// An array's length, the padding to its first element, and what
    /// `elements` writes.
    private mutating func array(of element: DBusType, _ elements: (inout WireWriter) throws -> Void) throws {
        pad(to: 4)
        let lengthAt = bytes.count
        put(UInt32(0))
        pad(to: element.alignment)
        let start = bytes.count
        try elements(&self)
        let length = bytes.count - start
        guard length <= Self.longestArray else { throw DBusError.invalidArgs("an array of \(length) bytes is longer than D-Bus allows") }
        withUnsafeBytes(of: UInt32(length).littleEndian) { bytes.replaceSubrange(lengthAt..<lengthAt + 4, with: $0) }
    }

    private mutating func putString(_ text: String) throws {
        guard Validation.isTransportable(text) else { throw DBusError.invalidArgs("a string holds a NUL byte, which D-Bus cannot carry") }
        let utf8 = text.utf8
        guard let length = UInt32(exactly: utf8.count) else { throw DBusError.invalidArgs("a string is too long") }
        put(length)
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    private mutating func putSignature(_ text: String) throws {
        let utf8 = text.utf8
        guard let length = UInt8(exactly: utf8.count) else { throw DBusError.invalidArgs("a signature of \(utf8.count) characters is too long") }
        bytes.append(length)
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    /// A number at its own alignment, little-endian.
    private mutating func put<T: FixedWidthInteger>(_ number: T) {
        pad(to: MemoryLayout<T>.size)
        withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func pad(to boundary: Int) {
        let padding = (boundary - bytes.count % boundary) % boundary
        if padding > 0 { bytes.append(contentsOf: repeatElement(0, count: padding)) }
    }
}

extension DBusType {
    /// The boundary a value of this type starts at, in the wire format.
    var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .unixFD, .string, .objectPath, .array, .dictionary: 4
        case .int64, .uint64, .double, .structure: 8
        }
    }
}
