import FoundationEssentials
import Glibc

/// The text forms of scalar values in XML property lists.
package enum PlistText {
    private static func trimmed(_ bytes: [UInt8]) -> Substring {
        String(decoding: bytes, as: UTF8.self).trimmingWhitespace()[...]
    }

    /// Decimal, or hexadecimal with `0x`; negative values to Int64.min,
    /// positive ones to UInt64.max.
    package static func integer(_ bytes: [UInt8]) -> PlistValue? {
        // The common case: plain decimal digits with an optional minus.
        if !bytes.isEmpty, bytes.count <= 18 {
            var negative = false
            var index = 0
            if bytes[0] == UInt8(ascii: "-") {
                negative = true
                index = 1
            }
            var value: Int64 = 0
            var plain = index < bytes.count
            while index < bytes.count {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else {
                    plain = false
                    break
                }
                value = value * 10 + Int64(digit)
                index += 1
            }
            if plain { return .integer(negative ? -value : value) }
        }
        var text = trimmed(bytes)
        var negative = false
        if text.hasPrefix("-") {
            negative = true
            text = text.dropFirst()
        } else if text.hasPrefix("+") {
            text = text.dropFirst()
        }
        var radix = 10
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            radix = 16
            text = text.dropFirst(2)
        }
        guard !text.isEmpty, text.first != "+", text.first != "-", let magnitude = UInt64(text, radix: radix) else {
            return nil
        }
        if !negative { return .unsigned(magnitude) }
        if magnitude == UInt64(Int64.max) + 1 { return .integer(.min) }
        guard let value = Int64(exactly: magnitude) else { return nil }
        return .integer(-value)
    }

    package static func real(_ bytes: [UInt8]) -> Double? {
        if let first = bytes.first, first == UInt8(ascii: "-") || (first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")),
            let value = bytes.withUnsafeBufferPointer({ Double(Substring(decoding: $0, as: UTF8.self)) }), value.isFinite
        {
            return value
        }
        let text = trimmed(bytes).lowercased()
        switch text {
        case "nan": return .nan
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        default:
            guard !text.isEmpty, !text.contains("n"), !text.contains("i") else { return nil }
            return Double(text)
        }
    }

    static func formatReal(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-infinity" : "+infinity" }
        return "\(value)"
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, in UTC.
    package static func date(_ bytes: [UInt8]) -> Date? {
        // Exactly the 20 characters of the form, as writers put them, need
        // no trimming (which goes through Foundation's character sets).
        let text = bytes.count == 20 ? bytes : Array(trimmed(bytes).utf8)
        guard text.count == 20, text[4] == UInt8(ascii: "-"), text[7] == UInt8(ascii: "-"),
            text[10] == UInt8(ascii: "T"), text[13] == UInt8(ascii: ":"), text[16] == UInt8(ascii: ":"),
            text[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var result = 0
            for byte in text[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                result = result * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return result
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The dates a property list holds: the years 0000 to 9999, the four
    /// digits of the XML form, which Apple's readers and writers share.
    /// Readers refuse dates outside it and writers never write one.
    static let firstDate = Double(daysFromCivil(year: 0, month: 1, day: 1) * 86_400)
    static let lastDate = Double(daysFromCivil(year: 9999, month: 12, day: 31) * 86_400 + 86_399)

    /// Whether `date` lies in the range property lists hold (which excludes
    /// NaN and the infinities).
    static func isStorable(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds >= firstDate && seconds < lastDate + 1
    }

    /// Why `date` cannot be written, for messages.
    static func unstorable(_ date: Date) -> PlistError {
        let seconds = date.timeIntervalSince1970
        let what = seconds.isNaN ? "NaN" : seconds.isInfinite ? (seconds < 0 ? "-infinity" : "+infinity") : "\(seconds)"
        return PlistError(
            "a date of \(what) seconds since 1970 lies outside the years 0000 to 9999 that a property list holds")
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, in UTC, whole seconds (rounded down, as
    /// Apple's writer does); nil outside the years 0000 to 9999.
    static func formatDate(_ date: Date) -> String? {
        guard isStorable(date) else { return nil }
        // In range, the rounded value is exact and far inside Int.
        let total = Int(date.timeIntervalSince1970.rounded(.down))
        var days = total / 86400
        var rest = total % 86400
        if rest < 0 {
            rest += 86400
            days -= 1
        }
        let (year, month, day) = civilFromDays(days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(yearText)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))Z"
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719468
    }

    static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let dayOfEra = z - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Base64, skipping every byte outside its alphabet (white space, line
    /// breaks, stray characters), as Apple's reader and Python's plistlib do.
    /// The bytes of base64 text. Characters outside the alphabet are
    /// skipped (as Apple's reader and plistlib do). Text that is whole
    /// groups of four with `=` only at the end of the last, as every
    /// writer makes it, is decoded in one pass into one buffer; anything
    /// else goes to Foundation's decoder, whose answer stands.
    package static func data(_ text: [UInt8]) -> Data? {
        if let data = decodeWholeGroups(text) { return data }
        let compact = text.filter { base64Value[Int($0)] != skip }
        return Data(base64Encoded: Data(compact))
    }

    private static func decodeWholeGroups(_ text: [UInt8]) -> Data? {
        text.withUnsafeBufferPointer { text -> Data? in
            base64Value.withUnsafeBufferPointer { table -> Data? in
                let capacity = text.count / 4 * 3 + 3
                guard let bytes = malloc(capacity)?.assumingMemoryBound(to: UInt8.self) else { return nil }
                var written = 0, index = 0, symbols = 0, padding = 0
                var group: UInt32 = 0
                let count = text.count
                while index < count {
                    // Four symbols in a row, at the start of a group: the usual case.
                    if symbols == 0, index + 4 <= count {
                        let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                        let c = table[Int(text[index + 2])], d = table[Int(text[index + 3])]
                        if a | b | c | d < 64 {
                            guard padding == 0, written + 3 <= capacity else { return failed(bytes) }
                            let whole = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                            bytes[written] = UInt8(truncatingIfNeeded: whole >> 16)
                            bytes[written + 1] = UInt8(truncatingIfNeeded: whole >> 8)
                            bytes[written + 2] = UInt8(truncatingIfNeeded: whole)
                            written += 3
                            index += 4
                            continue
                        }
                    }
                    let value = table[Int(text[index])]
                    index += 1
                    if value == skip { continue }
                    if value == pad {
                        padding += 1
                    } else {
                        // A symbol after `=`, or after a group that ended with one.
                        guard padding == 0 else { return failed(bytes) }
                        group |= UInt32(value) << (18 - 6 * UInt32(symbols))
                    }
                    symbols += 1
                    guard symbols == 4 else { continue }
                    symbols = 0
                    guard padding <= 2, written + 3 <= capacity else { return failed(bytes) }
                    bytes[written] = UInt8(truncatingIfNeeded: group >> 16)
                    bytes[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                    bytes[written + 2] = UInt8(truncatingIfNeeded: group)
                    written += 3 - padding
                    group = 0
                    if padding > 0 { padding = 3 }  // nothing may follow
                }
                guard symbols == 0 else { return failed(bytes) }
                return Data(bytesNoCopy: bytes, count: written, deallocator: .free)
            }
        }
    }

    private static func failed(_ bytes: UnsafeMutablePointer<UInt8>) -> Data? {
        free(bytes)
        return nil
    }

    private static let skip: UInt8 = 0xFF
    private static let pad: UInt8 = 0xFE
    /// Each byte's value in base64: 0 to 63, `pad` for `=`, `skip` otherwise.
    private static let base64Value: [UInt8] = {
        var table = [UInt8](repeating: skip, count: 256)
        for (value, byte) in Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8).enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        table[Int(UInt8(ascii: "="))] = pad
        return table
    }()
}

extension StringProtocol {
    /// Without the scalars at either end for which `drop` holds, compared
    /// scalar by scalar (a combining mark after a space stays).
    package func trimmingScalars(where drop: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !drop($0) }) ?? first
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[first...last])
        return String(result)
    }

    /// Without the white space at either end: the scalars with the Unicode
    /// White_Space property, which are those of Foundation's
    /// `.whitespacesAndNewlines`.
    package func trimmingWhitespace() -> String { trimmingScalars { $0.properties.isWhitespace } }
}
