/// One complete D-Bus type, such as `s`, `a{sv}` or `(dddd)`.
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD, variant
    case array(DBusType)
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])

    /// The type written in a source literal, which must be one complete type.
    public init(stringLiteral literal: String) {
        guard let types = try? DBusType.parseList(literal), types.count == 1 else {
            preconditionFailure("invalid single D-Bus type literal \(literal)")
        }
        self = types[0]
    }

    /// The type's signature text.
    public var description: String { signature }

    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// The D-Bus specification's limits: signatures of at most 255 bytes, 32
    /// nested arrays and 32 nested structures.
    public static let maximumSignatureLength = 255
    public static let maximumArrayDepth = 32
    public static let maximumStructDepth = 32

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case invalid(String, reason: String)
        public var description: String {
            switch self {
            case .invalid(let text, let reason): "invalid D-Bus signature '\(text)': \(reason)"
            }
        }
    }

    /// Parses a signature holding any number of complete types.
    public static func parseList(_ text: String) throws -> [DBusType] {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumSignatureLength else {
            throw ParseError.invalid(text, reason: "longer than 255 bytes")
        }
        var parser = Parser(bytes: bytes, text: text)
        var types: [DBusType] = []
        while parser.index < bytes.count {
            types.append(try parser.parseOne(arrayDepth: 0, structDepth: 0))
        }
        return types
    }

    private struct Parser {
        let bytes: [UInt8]
        let text: String
        var index = 0

        mutating func fail(_ reason: String) -> ParseError { .invalid(text, reason: reason) }

        mutating func parseOne(arrayDepth: Int, structDepth: Int) throws -> DBusType {
            guard index < bytes.count else { throw fail("incomplete type at the end") }
            let code = bytes[index]
            index += 1
            switch code {
            case UInt8(ascii: "y"): return .byte
            case UInt8(ascii: "b"): return .boolean
            case UInt8(ascii: "n"): return .int16
            case UInt8(ascii: "q"): return .uint16
            case UInt8(ascii: "i"): return .int32
            case UInt8(ascii: "u"): return .uint32
            case UInt8(ascii: "x"): return .int64
            case UInt8(ascii: "t"): return .uint64
            case UInt8(ascii: "d"): return .double
            case UInt8(ascii: "s"): return .string
            case UInt8(ascii: "o"): return .objectPath
            case UInt8(ascii: "g"): return .signature
            case UInt8(ascii: "h"): return .unixFD
            case UInt8(ascii: "v"): return .variant
            case UInt8(ascii: "a"):
                guard arrayDepth < DBusType.maximumArrayDepth else { throw fail("more than 32 nested arrays") }
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    index += 1
                    let key = try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                    guard key.isBasic else { throw fail("a dictionary key must be a basic type") }
                    let value = try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                        throw fail("a dictionary entry holds exactly two types")
                    }
                    index += 1
                    return .dictionary(key: key, value: value)
                }
                return .array(try parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth))
            case UInt8(ascii: "("):
                guard structDepth < DBusType.maximumStructDepth else { throw fail("more than 32 nested structures") }
                var fields: [DBusType] = []
                while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                    fields.append(try parseOne(arrayDepth: arrayDepth, structDepth: structDepth + 1))
                }
                guard index < bytes.count else { throw fail("unclosed structure") }
                guard !fields.isEmpty else { throw fail("empty structure") }
                index += 1
                return .structure(fields)
            default:
                throw fail("unexpected '\(Character(Unicode.Scalar(code)))'")
            }
        }
    }
}

/// A signature value (D-Bus type `g`): zero or more complete types.
public struct Signature: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public let types: [DBusType]

    public init?(rawValue: String) {
        guard let types = try? DBusType.parseList(rawValue) else { return nil }
        self.rawValue = rawValue
        self.types = types
    }

    public init(_ types: [DBusType]) {
        self.types = types
        self.rawValue = types.map(\.signature).joined()
    }

    public var description: String { rawValue }
}
