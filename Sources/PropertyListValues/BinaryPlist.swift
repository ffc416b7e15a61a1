import FoundationEssentials

/// Reads `bplist00` files. Every offset, length and reference is checked
/// against the file; cycles are refused; a shared object is decoded once.
package enum BinaryPlistReader {
    private static let referenceDate = 978_307_200.0  // 2001-01-01 in Unix time

    package static func read(_ data: Data, limits: PlistLimits) throws -> PlistValue {
        guard data.count <= limits.maximumSize else {
            throw PlistError("the file is \(data.count) bytes, over the limit of \(limits.maximumSize)")
        }
        return try data.withUnsafeBytes { buffer in
            var reader = try Reader(bytes: buffer.bindMemory(to: UInt8.self), limits: limits)
            return try reader.object(reader.topObject, depth: 0)
        }
    }

    /// The element at `index` of the array that is the file's top
    /// object, decoding only that element and what it refers to.
    static func readElement(_ index: Int, of data: Data, limits: PlistLimits) throws -> PlistValue {
        try data.withUnsafeBytes { buffer in
            var reader = try Reader(bytes: buffer.bindMemory(to: UInt8.self), limits: limits)
            var at = try reader.offset(of: reader.topObject)
            let marker = reader.bytes[at]
            guard marker >> 4 == 0xA else { throw PlistError("binary plist: the top object is not an array") }
            at += 1
            let count = try reader.length(marker, at: &at)
            guard index >= 0, index < count else { throw PlistError("binary plist: no element \(index) in an array of \(count)") }
            try reader.needReferences(at: at, count: count)
            return try reader.object(reader.reference(at: at, index), depth: 1)
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        let limits: PlistLimits
        let offsetSize: Int
        let referenceSize: Int
        let objectCount: Int
        let topObject: Int
        let offsetTable: Int
        var cache: [PlistValue?]
        var visiting: [Bool]

        init(bytes: UnsafeBufferPointer<UInt8>, limits: PlistLimits) throws {
            self.bytes = bytes
            self.limits = limits
            guard bytes.count >= 8 + 32 + 1 else { throw PlistError("binary plist: truncated (\(bytes.count) bytes)") }
            let trailer = bytes.count - 32
            offsetSize = Int(bytes[trailer + 6])
            referenceSize = Int(bytes[trailer + 7])
            let count = Self.bigEndian(bytes, trailer + 8, 8)
            let top = Self.bigEndian(bytes, trailer + 16, 8)
            let table = Self.bigEndian(bytes, trailer + 24, 8)
            // Apple's reader takes any size from 1 to 8 bytes; libplist writes
            // 3-byte offsets into files between 64 KiB and 16 MiB.
            guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
                throw PlistError("binary plist: bad trailer (offset size \(offsetSize), reference size \(referenceSize))")
            }
            guard count > 0, count < UInt64(bytes.count), top < count else {
                throw PlistError("binary plist: bad trailer (\(count) objects, top object \(top))")
            }
            let (tableBytes, overflow) = count.multipliedReportingOverflow(by: UInt64(offsetSize))
            guard !overflow, table >= 8, table <= UInt64(trailer), tableBytes <= UInt64(trailer) - table else {
                throw PlistError("binary plist: the offset table lies outside the file")
            }
            objectCount = Int(count)
            cache = Array(repeating: nil, count: objectCount)
            visiting = Array(repeating: false, count: objectCount)
            topObject = Int(top)
            offsetTable = Int(table)
        }

        @inline(__always)
        static func bigEndian(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int, _ size: Int) -> UInt64 {
            switch size {
            case 1: return UInt64(bytes[at])
            case 2: return UInt64(bytes[at]) << 8 | UInt64(bytes[at + 1])
            default:
                var value: UInt64 = 0
                for i in 0..<size { value = value << 8 | UInt64(bytes[at + i]) }
                return value
            }
        }

        func offset(of object: Int) throws -> Int {
            let value = Self.bigEndian(bytes, offsetTable + object * offsetSize, offsetSize)
            guard value >= 8, value < UInt64(offsetTable) else {
                throw PlistError("binary plist: object \(object) lies outside the object area")
            }
            return Int(value)
        }

        func need(_ at: Int, _ count: Int) throws {
            guard count >= 0, at <= offsetTable, count <= offsetTable - at else {
                throw PlistError("binary plist: an object runs past the end of the object area")
            }
        }

        /// The length in a marker's low nibble, or in the integer after it.
        func length(_ marker: UInt8, at: inout Int) throws -> Int {
            let nibble = Int(marker & 0x0F)
            guard nibble == 0x0F else { return nibble }
            try need(at, 1)
            let intMarker = bytes[at]
            guard intMarker & 0xF0 == 0x10 else { throw PlistError("binary plist: bad length marker") }
            let size = 1 << Int(intMarker & 0x0F)
            guard size <= 8 else { throw PlistError("binary plist: bad length size") }
            try need(at + 1, size)
            let value = Self.bigEndian(bytes, at + 1, size)
            at += 1 + size
            guard value <= UInt64(offsetTable) else { throw PlistError("binary plist: a length larger than the file") }
            return Int(value)
        }

        /// Checks that `count` references fit the object area from `start`.
        func needReferences(at start: Int, count: Int) throws {
            let (total, overflow) = count.multipliedReportingOverflow(by: referenceSize)
            guard !overflow else { throw PlistError("binary plist: too many references") }
            try need(start, total)
        }

        /// The `position`th reference from `start`, checked against the object count.
        func reference(at start: Int, _ position: Int) throws -> Int {
            let reference = Self.bigEndian(bytes, start + position * referenceSize, referenceSize)
            guard reference < UInt64(objectCount) else {
                throw PlistError("binary plist: reference \(reference) past the \(objectCount) objects")
            }
            return Int(reference)
        }

        /// The object at `index`. Only this and `container` recurse, and
        /// both keep their frames small (scalars are decoded in `scalar`), so
        /// the depth limit bounds the stack even in a debug build.
        mutating func object(_ index: Int, depth: Int) throws -> PlistValue {
            if let cached = cache[index] { return cached }
            guard depth <= limits.maximumDepth else {
                throw PlistError("binary plist: nested deeper than \(limits.maximumDepth) levels")
            }
            let at = try offset(of: index)
            let marker = bytes[at]
            let value: PlistValue
            // Only arrays and dictionaries refer to other objects.
            if marker >> 4 == 0xA || marker >> 4 == 0xD {
                guard !visiting[index] else { throw PlistError("binary plist: object \(index) contains itself") }
                visiting[index] = true
                defer { visiting[index] = false }
                value = try container(marker, at: at + 1, depth: depth)
            } else {
                value = try scalar(marker, at: at + 1)
            }
            // Numbers, booleans and dates are cheaper to decode again than to
            // keep; strings, data and containers are kept, so a file that
            // refers to one object many times holds it once.
            if marker >> 4 >= 0x4 { cache[index] = value }
            return value
        }

        @inline(never)
        mutating func container(_ marker: UInt8, at start: Int, depth: Int) throws -> PlistValue {
            var at = start
            let value: PlistValue
            switch marker >> 4 {
            case 0xA:
                let count = try length(marker, at: &at)
                try needReferences(at: at, count: count)
                var elements: [PlistValue] = []
                elements.reserveCapacity(count)
                for position in 0..<count { elements.append(try object(reference(at: at, position), depth: depth + 1)) }
                value = .array(elements)
            case 0xD:
                let count = try length(marker, at: &at)
                try needReferences(at: at, count: count)
                let valuesAt = at + count * referenceSize
                try needReferences(at: valuesAt, count: count)
                var keys: [String] = []
                var values: [PlistValue] = []
                keys.reserveCapacity(count)
                values.reserveCapacity(count)
                for position in 0..<count {
                    guard case .string(let key) = try object(reference(at: at, position), depth: depth + 1) else {
                        throw PlistError("binary plist: a dictionary key that is not a string")
                    }
                    keys.append(key)
                    values.append(try object(reference(at: valuesAt, position), depth: depth + 1))
                }
                value = .dictionary(PlistDictionary(readingKeys: keys, values: values))
            default:
                throw PlistError("binary plist: unsupported marker 0x\(String(marker, radix: 16))")
            }
            return value
        }

        @inline(never)
        func scalar(_ marker: UInt8, at start: Int) throws -> PlistValue {
            var at = start
            let value: PlistValue
            switch marker >> 4 {
            case 0x0:
                switch marker {
                case 0x08: value = .boolean(false)
                case 0x09: value = .boolean(true)
                default: throw PlistError("binary plist: unsupported marker 0x\(String(marker, radix: 16))")
                }
            case 0x1:
                let size = 1 << Int(marker & 0x0F)
                try need(at, size)
                switch size {
                case 1, 2, 4: value = .integer(Int64(Self.bigEndian(bytes, at, size)))
                case 8: value = .integer(Int64(bitPattern: Self.bigEndian(bytes, at, 8)))
                case 16:
                    let high = Self.bigEndian(bytes, at, 8)
                    let low = Self.bigEndian(bytes, at + 8, 8)
                    if high == 0 {
                        value = .unsigned(low)
                    } else if high == UInt64.max, Int64(bitPattern: low) < 0 {
                        value = .integer(Int64(bitPattern: low))
                    } else {
                        throw PlistError("binary plist: an integer outside the 64-bit range")
                    }
                default: throw PlistError("binary plist: an integer of \(size) bytes")
                }
            case 0x2:
                let size = 1 << Int(marker & 0x0F)
                try need(at, size)
                let real: Double
                switch size {
                case 4: real = Double(Float(bitPattern: UInt32(Self.bigEndian(bytes, at, 4))))
                case 8: real = Double(bitPattern: Self.bigEndian(bytes, at, 8))
                default: throw PlistError("binary plist: a real of \(size) bytes")
                }
                // One NaN, as the XML and JSON forms have: a payload in its
                // bits would be shown but not kept by a text form.
                value = .real(real.isNaN ? .nan : real)
            case 0x3:
                guard marker == 0x33 else { throw PlistError("binary plist: bad date marker") }
                try need(at, 8)
                let seconds = Double(bitPattern: Self.bigEndian(bytes, at, 8))
                let date = Date(timeIntervalSince1970: seconds + BinaryPlistReader.referenceDate)
                guard PlistText.isStorable(date) else { throw PlistError("binary plist: \(PlistText.unstorable(date).message)") }
                value = .date(date)
            case 0x4:
                let count = try length(marker, at: &at)
                try need(at, count)
                value = .data(Data(UnsafeBufferPointer(rebasing: bytes[at..<at + count])))
            case 0x5:
                let count = try length(marker, at: &at)
                try need(at, count)
                let slice = UnsafeBufferPointer(rebasing: bytes[at..<at + count])
                guard slice.allSatisfy({ $0 < 0x80 }) else { throw PlistError("binary plist: a non-ASCII byte in an ASCII string") }
                value = .string(String(decoding: slice, as: UTF8.self))
            case 0x6:
                let count = try length(marker, at: &at)
                let (byteCount, overflow) = count.multipliedReportingOverflow(by: 2)
                guard !overflow else { throw PlistError("binary plist: string too long") }
                try need(at, byteCount)
                let units = (0..<count).map { UInt16(bytes[at + 2 * $0]) << 8 | UInt16(bytes[at + 2 * $0 + 1]) }
                guard let text = String(validating: units, as: UTF16.self) else {
                    throw PlistError("binary plist: a string with invalid UTF-16")
                }
                value = .string(text)
            default:
                throw PlistError("binary plist: unsupported marker 0x\(String(marker, radix: 16)) (UIDs and sets are not property-list values)")
            }
            return value
        }
    }
}

/// Writes `bplist00` files, with equal strings stored once.
enum BinaryPlistWriter {
    static func write(_ value: PlistValue) throws -> Data {
        var writer = Writer()
        let top = try writer.flatten(value)
        return writer.encode(top: top)
    }

    private struct Writer {
        enum Object {
            case scalar(PlistValue)
            case array([Int])
            case dictionary(keys: [Int], values: [Int])
        }
        var objects: [Object] = []
        var strings: [ByteKey: Int] = [:]

        mutating func flatten(_ value: PlistValue) throws -> Int {
            switch value {
            case .date(let date) where !PlistText.isStorable(date):
                throw PlistText.unstorable(date)
            case .string(let s):
                if let existing = strings[ByteKey(s)] { return existing }
                objects.append(.scalar(value))
                strings[ByteKey(s)] = objects.count - 1
                return objects.count - 1
            case .array(let elements):
                let index = objects.count
                objects.append(.array([]))
                let references = try elements.map { try flatten($0) }
                objects[index] = .array(references)
                return index
            case .dictionary(let dictionary):
                let index = objects.count
                objects.append(.array([]))
                let keys = try dictionary.keys.map { try flatten(.string($0)) }
                let values = try dictionary.values.map { try flatten($0) }
                objects[index] = .dictionary(keys: keys, values: values)
                return index
            default:
                objects.append(.scalar(value))
                return objects.count - 1
            }
        }

        static func size(for value: Int) -> Int {
            value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
        }

        func encode(top: Int) -> Data {
            var out = [UInt8]("bplist00".utf8)
            let referenceSize = Self.size(for: objects.count)
            var offsets: [Int] = []
            offsets.reserveCapacity(objects.count)
            func bigEndian(_ value: UInt64, _ size: Int) {
                for shift in stride(from: (size - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
            }
            func marker(_ high: UInt8, _ count: Int) {
                if count < 15 {
                    out.append(high << 4 | UInt8(count))
                } else {
                    out.append(high << 4 | 0x0F)
                    let size = Self.size(for: count)
                    out.append(0x10 | UInt8(size.trailingZeroBitCount))
                    bigEndian(UInt64(count), size)
                }
            }
            for object in objects {
                offsets.append(out.count)
                switch object {
                case .array(let references):
                    marker(0xA, references.count)
                    for r in references { bigEndian(UInt64(r), referenceSize) }
                case .dictionary(let keys, let values):
                    marker(0xD, keys.count)
                    for r in keys { bigEndian(UInt64(r), referenceSize) }
                    for r in values { bigEndian(UInt64(r), referenceSize) }
                case .scalar(let value):
                    switch value {
                    case .boolean(let b): out.append(b ? 0x09 : 0x08)
                    case .integer(let i):
                        if i >= 0 && i <= 0xFF { out.append(0x10); bigEndian(UInt64(i), 1) }
                        else if i >= 0 && i <= 0xFFFF { out.append(0x11); bigEndian(UInt64(i), 2) }
                        else if i >= 0 && i <= 0xFFFF_FFFF { out.append(0x12); bigEndian(UInt64(i), 4) }
                        else { out.append(0x13); bigEndian(UInt64(bitPattern: i), 8) }
                    case .unsignedInteger(let u):
                        out.append(0x14)
                        bigEndian(0, 8)
                        bigEndian(u, 8)
                    case .real(let d):
                        out.append(0x23)
                        bigEndian(d.bitPattern, 8)
                    case .date(let date):
                        out.append(0x33)
                        bigEndian((date.timeIntervalSince1970 - 978_307_200.0).bitPattern, 8)
                    case .data(let data):
                        marker(0x4, data.count)
                        out.append(contentsOf: data)
                    case .string(let s):
                        if s.utf8.allSatisfy({ $0 < 0x80 }) {
                            marker(0x5, s.utf8.count)
                            out.append(contentsOf: s.utf8)
                        } else {
                            let units = Array(s.utf16)
                            marker(0x6, units.count)
                            for unit in units { bigEndian(UInt64(unit), 2) }
                        }
                    case .array, .dictionary: break
                    }
                }
            }
            let tableOffset = out.count
            let offsetSize = Self.size(for: tableOffset)
            for offset in offsets { bigEndian(UInt64(offset), offsetSize) }
            out.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
            bigEndian(UInt64(objects.count), 8)
            bigEndian(UInt64(top), 8)
            bigEndian(UInt64(tableOffset), 8)
            return Data(out)
        }
    }
}
