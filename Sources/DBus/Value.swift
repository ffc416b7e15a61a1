import FoundationEssentials
import Posix
import Glibc

/// One D-Bus value of any type. Containers carry their element types so that
/// empty arrays and dictionaries keep their signature.
public enum Value: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(ObjectPath)
    case signature(Signature)
    case unixFD(UnixFileDescriptor)
    /// An `ay`: the bytes in one buffer, appended and read whole. Messages
    /// are read into this form; an `.array(.byte, …)` is sent the same way
    /// but is never produced.
    case bytes(Data)
    /// An array whose elements all have the given type (`ay` is `bytes`).
    case array(DBusType, [Value])
    /// A dictionary (`a{..}`) in wire order.
    case dictionary(key: DBusType, value: DBusType, [DictionaryEntry])
    case structure([Value])
    indirect case variant(Value)

    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .bytes: .array(.byte)
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// An `a{sv}` from string keys, in the order given.
    public static func vardict(_ entries: [(String, Value)]) -> Value {
        .dictionary(key: .string, value: .variant, entries.map { DictionaryEntry(.string($0.0), .variant($0.1)) })
    }

    /// An `as`.
    public static func strings(_ strings: [String]) -> Value {
        .array(.string, strings.map(Value.string))
    }

    /// An `ao`.
    public static func objectPaths(_ paths: [ObjectPath]) -> Value {
        .array(.objectPath, paths.map(Value.objectPath))
    }

    // MARK: Reading values

    public var string: String? {
        switch self {
        case .string(let s): s
        case .objectPath(let p): p.rawValue
        case .signature(let g): g.rawValue
        case .variant(let inner): inner.string
        default: nil
        }
    }

    public var bool: Bool? {
        switch self {
        case .boolean(let b): b
        case .variant(let inner): inner.bool
        default: nil
        }
    }

    public var double: Double? {
        switch self {
        case .double(let d): d
        case .variant(let inner): inner.double
        default: nil
        }
    }

    /// Any integer type that fits an Int64.
    public var int64: Int64? {
        switch self {
        case .byte(let v): Int64(v)
        case .int16(let v): Int64(v)
        case .uint16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .uint32(let v): Int64(v)
        case .int64(let v): v
        case .uint64(let v): Int64(exactly: v)
        case .variant(let inner): inner.int64
        default: nil
        }
    }

    public var uint64: UInt64? {
        switch self {
        case .uint64(let v): v
        case .variant(let inner): inner.uint64
        default: int64.flatMap { UInt64(exactly: $0) }
        }
    }

    /// The elements of an array, or nil.
    public var elements: [Value]? {
        switch self {
        case .array(_, let values): values
        case .variant(let inner): inner.elements
        default: nil
        }
    }

    /// The entries of a dictionary keyed by strings, or nil. Variant values
    /// are unwrapped.
    public var stringDictionary: [String: Value]? {
        switch self {
        case .dictionary(_, _, let entries):
            var result: [String: Value] = [:]
            for entry in entries {
                guard let key = entry.key.string else { return nil }
                if case .variant(let inner) = entry.value { result[key] = inner } else { result[key] = entry.value }
            }
            return result
        case .variant(let inner): return inner.stringDictionary
        default: return nil
        }
    }

    /// The entries of a dictionary in wire order, or empty.
    public var dictionaryEntries: [DictionaryEntry] {
        switch self {
        case .dictionary(_, _, let entries): entries
        case .variant(let inner): inner.dictionaryEntries
        default: []
        }
    }

    /// Bytes of an `ay`.
    public var data: Data? {
        switch self {
        case .bytes(let data): data
        case .array(.byte, let values): Data(values.compactMap { if case .byte(let b) = $0 { b } else { nil } })
        case .variant(let inner): inner.data
        default: nil
        }
    }

    /// Drops one level of variant.
    public var unwrapped: Value {
        if case .variant(let inner) = self { return inner }
        return self
    }
}

/// One entry of a D-Bus dictionary.
extension Value {
    /// About how many bytes the value takes marshalled: strings and byte
    /// strings at their length, every other value at 8.
    public var approximateSize: Int {
        switch self {
        case .string(let text): text.utf8.count
        case .objectPath(let path): path.rawValue.utf8.count
        case .bytes(let bytes): bytes.count
        case .array(_, let elements), .structure(let elements): elements.reduce(0) { $0 + $1.approximateSize }
        case .dictionary(_, _, let entries): entries.reduce(0) { $0 + $1.key.approximateSize + $1.value.approximateSize }
        case .variant(let value): value.approximateSize
        default: 8
        }
    }
}

public struct DictionaryEntry: Hashable, Sendable {
    public var key: Value
    public var value: Value
    public init(_ key: Value, _ value: Value) {
        self.key = key
        self.value = value
    }
}

/// A file descriptor received or sent over D-Bus; closed when released.
public final class UnixFileDescriptor: Hashable, Sendable {
    private let descriptor: FileDescriptor
    public var rawValue: Int32 { descriptor.rawValue }

    /// Takes ownership of `rawValue`.
    public init(owning rawValue: Int32) { descriptor = FileDescriptor(owning: rawValue) }

    init(_ descriptor: FileDescriptor) { self.descriptor = descriptor }

    public static func == (lhs: UnixFileDescriptor, rhs: UnixFileDescriptor) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

extension Value: CustomStringConvertible {
    /// A compact form in the style of `busctl`, for logs and messages.
    public var description: String {
        switch self {
        case .byte(let v): "\(v)"
        case .boolean(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): v.rawValue
        case .signature(let v): v.rawValue
        case .unixFD(let v): "fd \(v.rawValue)"
        case .bytes(let data): "[" + data.map(String.init).joined(separator: ", ") + "]"
        case .array(_, let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries):
            "{" + entries.map { "\($0.key.description): \($0.value.description)" }.joined(separator: ", ") + "}"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let inner): "<\(inner.type.signature) \(inner.description)>"
        }
    }
}
