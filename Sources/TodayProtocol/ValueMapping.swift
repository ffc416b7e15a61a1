import DBus
import FoundationEssentials
import PropertyListValues

/// The mapping between property-list values and D-Bus values of SPEC
/// section 2: string `s`, integer `x`, real `d`, boolean `b`, data `ay`,
/// date `t` (microseconds since the epoch), array `av`, dictionary `a{sv}`.
/// A snapshot's arrays of dictionaries travel as `aa{sv}` so that `items`
/// has the type the SPEC gives it.
public enum ValueMapping {
    /// The D-Bus form of a property-list value. With `typedArrays`, an
    /// array of dictionaries is `aa{sv}` (snapshots); otherwise every array
    /// is `av` (group defaults).
    public static func dbus(_ value: PlistValue, typedArrays: Bool = true) -> Value {
        switch value {
        case .string(let s): return .string(s)
        case .integer(let i): return .int64(i)
        case .unsignedInteger(let u): return .uint64(u)
        case .real(let d): return .double(d)
        case .boolean(let b): return .boolean(b)
        case .date(let date): return .uint64(microseconds(date))
        case .data(let data): return .bytes(data)
        case .array(let elements):
            if typedArrays, !elements.isEmpty, elements.allSatisfy({ $0.dictionary != nil }) {
                return .array(.dictionary(key: .string, value: .variant), elements.map { dbus($0, typedArrays: true) })
            }
            return .array(.variant, elements.map { .variant(dbus($0, typedArrays: typedArrays)) })
        case .dictionary(let dictionary):
            return .vardict(dictionary.map { ($0.0, dbus($0.1, typedArrays: typedArrays)) })
        }
    }

    /// The D-Bus form of a dictionary, as `a{sv}`.
    public static func dbus(_ dictionary: PlistDictionary, typedArrays: Bool = true) -> Value {
        dbus(.dictionary(dictionary), typedArrays: typedArrays)
    }

    public enum Failure: Error, CustomStringConvertible {
        case unsupported(String)
        public var description: String {
            switch self { case .unsupported(let m): m }
        }
    }

    /// The property-list form of a D-Bus value. `y n q i u x` become
    /// integers, `t` a date, `o` and `g` strings, `ay` data, other arrays
    /// and structures arrays; a unix fd or a dictionary whose keys are not
    /// strings is refused.
    public static func plist(_ value: Value) throws -> PlistValue {
        switch value {
        case .byte(let v): return .integer(Int64(v))
        case .boolean(let b): return .boolean(b)
        case .int16(let v): return .integer(Int64(v))
        case .uint16(let v): return .integer(Int64(v))
        case .int32(let v): return .integer(Int64(v))
        case .uint32(let v): return .integer(Int64(v))
        case .int64(let v): return .integer(v)
        case .uint64(let v): return .date(try date(microseconds: v))
        case .double(let d): return .real(d)
        case .string(let s): return .string(s)
        case .objectPath(let p): return .string(p.rawValue)
        case .signature(let g): return .string(g.rawValue)
        case .unixFD: throw Failure.unsupported("a file descriptor (h) cannot be stored")
        case .variant(let inner): return try plist(inner)
        case .bytes(let data): return .data(data)
        case .array(.byte, let bytes):
            return .data(Data(bytes.map { if case .byte(let b) = $0 { b } else { 0 } }))
        case .array(_, let elements): return .array(try elements.map(plist))
        case .structure(let fields): return .array(try fields.map(plist))
        case .dictionary(let keyType, _, let entries):
            guard keyType == .string else {
                throw Failure.unsupported("dictionary keys must be strings (s), not \(keyType.signature)")
            }
            var result = PlistDictionary()
            for entry in entries {
                guard case .string(let key) = entry.key else { continue }
                result[key] = try plist(entry.value)
            }
            return .dictionary(result)
        }
    }

    /// The date of a `t`: whole seconds, as stored dates keep them (XML
    /// property lists write no fraction), so that what is read back after
    /// a restart is what was given; the microseconds below the second are
    /// dropped here, where the value arrives. Dates after 9999-12-31
    /// cannot be stored and are refused.
    public static func date(microseconds: UInt64) throws -> Date {
        let seconds = microseconds / 1_000_000
        // Exact: whole seconds below 2^53.
        let date = Date(timeIntervalSince1970: Double(seconds))
        guard Plist.isStorable(date) else {
            throw Failure.unsupported(
                "the date \(microseconds) µs since 1970 lies after 9999-12-31T23:59:59Z, the last date a property list stores")
        }
        return date
    }

    /// A date as microseconds since the epoch; dates before it are 0
    /// (snapshots and group values never hold one: see `SnapshotRules.stored`).
    public static func microseconds(_ date: Date) -> UInt64 {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard value > 0 else { return 0 }
        // NaN fails the comparison above; a rounded value below 2^64 converts.
        return value < 0x1p64 ? UInt64(value) : UInt64.max
    }

    /// `date` as `microseconds` keeps it (what is kept as a time reads
    /// back equal), to the nearest microsecond, or, with `.down`, to the
    /// one at or before it (a deadline kept so is never late).
    public static func storable(_ date: Date, rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> Date {
        let value = (date.timeIntervalSince1970 * 1_000_000).rounded(rule)
        guard value > 0 else { return Date(timeIntervalSince1970: 0) }
        return Date(timeIntervalSince1970: (value < 0x1p64 ? value : 0x1p64 - 2048) / 1_000_000)
    }
}
