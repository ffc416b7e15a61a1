import FoundationEssentials
import Glibc
import Posix

/// One property-list value. Dictionaries keep their key order.
public enum PlistValue: Hashable, Sendable {
    case string(String)
    /// Any integer that fits an Int64.
    case integer(Int64)
    /// Integers above `Int64.max` only; readers never produce it for smaller
    /// values, so equal numbers compare equal. Build it with `unsigned(_:)`.
    case unsignedInteger(UInt64)
    case real(Double)
    case boolean(Bool)
    case date(Date)
    case data(Data)
    case array([PlistValue])
    case dictionary(PlistDictionary)

    /// An integer from an unsigned value, in its one canonical form.
    public static func unsigned(_ value: UInt64) -> PlistValue {
        if let signed = Int64(exactly: value) { return .integer(signed) }
        return .unsignedInteger(value)
    }

    /// The element name of the value's XML form, for messages.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer, .unsignedInteger: "integer"
        case .real: "real"
        case .boolean: "boolean"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dict"
        }
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var bool: Bool? { if case .boolean(let b) = self { b } else { nil } }
    public var int64: Int64? { if case .integer(let i) = self { i } else { nil } }
    public var uint64: UInt64? {
        switch self {
        case .integer(let i): UInt64(exactly: i)
        case .unsignedInteger(let u): u
        default: nil
        }
    }
    public var double: Double? {
        switch self {
        case .real(let d): d
        case .integer(let i): Double(i)
        default: nil
        }
    }
    public var array: [PlistValue]? { if case .array(let a) = self { a } else { nil } }
    public var dictionary: PlistDictionary? { if case .dictionary(let d) = self { d } else { nil } }
    public var data: Data? { if case .data(let d) = self { d } else { nil } }
    public var date: Date? { if case .date(let d) = self { d } else { nil } }

    /// The value at `key` when this is a dictionary.
    public subscript(key: String) -> PlistValue? { dictionary?[key] }
}

/// Why a property list could not be read or written.
public struct PlistError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    /// 1-based line and column in XML input, when known.
    public var line: Int?
    public var column: Int?

    public init(_ message: String, line: Int? = nil, column: Int? = nil) {
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String {
        if let line, let column { return "line \(line), column \(column): \(message)" }
        if let line { return "line \(line): \(message)" }
        return message
    }
}

/// The formats a property list is stored in.
public enum PlistFormat: String, Sendable, CaseIterable {
    case xml, binary, json
}

/// Reading and writing property lists.
public enum Plist {
    /// Whether `data` holds nothing but white space (nothing to read).
    public static func isBlank(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in bytes.allSatisfy(JSON.isSpace) }
    }

    /// The element at `index` of a binary property list whose top object is
    /// an array, read without decoding the other elements: many values kept
    /// encoded together (sharing their keys and repeated strings) and read
    /// one at a time.
    public static func readElement(_ index: Int, ofBinaryArray data: Data, limits: PlistLimits = PlistLimits()) throws -> PlistValue {
        guard data.starts(with: Array("bplist00".utf8)) else { throw PlistError("not a binary property list (bplist00)") }
        return try BinaryPlistReader.readElement(index, of: data, limits: limits)
    }

    /// Everything on standard input, refused once it passes `limit` bytes.
    public static func readStandardInput(limit: Int = PlistLimits().maximumSize) throws -> Data {
        let input = FileDescriptor.standardInput
        do {
            guard let data = try input.readToEnd(limit: limit) else {
                throw PlistError("standard input is over the limit of \(limit) bytes")
            }
            return data
        } catch let error as Errno {
            throw PlistError("cannot read standard input: \(error)")
        }
    }

    /// The bytes of a regular file, refused before reading when over `limit`.
    package static func readFile(_ path: String, limit: Int) throws -> Data {
        do {
            let file = try FileDescriptor.open(path, O_RDONLY)
            let info = try file.status()
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw PlistError("cannot read \(path): not a regular file") }
            let size = Int(info.st_size)
            guard size <= limit else { throw PlistError("\(path) is \(size) bytes, over the limit of \(limit)") }
            // A file that grew since fstat is still refused past the limit.
            guard let data = try file.readToEnd(limit: limit) else {
                throw PlistError("\(path) is over the limit of \(limit) bytes")
            }
            return data
        } catch let error as Errno {
            throw PlistError("cannot read \(path): \(error)")
        }
    }

    /// JSON for display: every value has a form (data as base64, dates as
    /// ISO 8601, non-finite reals as null), indented or on one line.
    public static func displayJSON(_ value: PlistValue, compact: Bool = false) -> String {
        (try? JSON.text(value, compact: compact, lossy: true)) ?? "null"
    }

    /// The first and last date a property list holds: years 0000 to 9999,
    /// the four digits of the XML form. Readers refuse dates outside them;
    /// writers throw. XML keeps whole seconds (rounded down); binary keeps
    /// the Double.
    public static let firstDate = Date(timeIntervalSince1970: PlistText.firstDate)
    public static let lastDate = Date(timeIntervalSince1970: PlistText.lastDate)

    /// Whether `date` lies between `firstDate` and the end of `lastDate`'s second.
    public static func isStorable(_ date: Date) -> Bool { PlistText.isStorable(date) }

    /// At least the size of `value` in the binary format, found without
    /// writing it: each object's marker, length, offset and references at
    /// their widest, strings as UTF-16 at two bytes per UTF-8 byte, and
    /// nothing shared. A size under a limit here is under it written.
    public static func binarySizeBound(of value: PlistValue) -> Int {
        let object = 1 + 9 + 8
        switch value {
        case .string(let s): return object + 2 * s.utf8.count
        case .data(let d): return object + d.count
        case .integer, .unsignedInteger: return object + 16
        case .real, .date: return object + 8
        case .boolean: return object
        case .array(let elements): return elements.reduce(object + 8 * elements.count) { $0 + binarySizeBound(of: $1) }
        case .dictionary(let dictionary):
            var size = object + 16 * dictionary.count
            for (key, element) in dictionary { size += object + 2 * key.utf8.count + binarySizeBound(of: element) }
            return size
        }
    }

    public static func write(_ value: PlistValue, format: PlistFormat) throws -> Data {
        switch format {
        case .xml: try XMLPlistWriter.write(value)
        case .binary: try BinaryPlistWriter.write(value)
        case .json: try JSON.write(value)
        }
    }
}

/// Bounds on what a reader accepts.
public struct PlistLimits: Sendable {
    /// Largest input, in bytes.
    public var maximumSize: Int
    /// Deepest nesting of arrays and dictionaries.
    public var maximumDepth: Int

    /// The default depth, 512, is well past what real files reach
    /// (plistlib and libplist read 300), and bounded so that the recursive
    /// readers and writers stay far inside a thread's stack.
    public init(maximumSize: Int = 64 << 20, maximumDepth: Int = 512) {
        self.maximumSize = maximumSize
        self.maximumDepth = maximumDepth
    }
}
