import Foundation
import TestSupport
import Testing
@testable import PropertyList
@testable import PropertyListValues

/// The edges of what a property list holds: every real and date at an edge
/// either reads back equal through XML and binary or is refused at the API
/// with an error that says why; binary files in every layout Apple's reader
/// takes; the depth limit; and files written by libplist's `plistutil`.
@Suite struct EdgeTests {
    /// The value after a trip through `format` and back.
    func roundTrip(_ value: PlistValue, _ format: PlistFormat) throws -> PlistValue {
        try Plist.read(try Plist.write(value, format: format))
    }

    /// Bit-for-bit equality for reals, so NaN equals NaN and -0 differs from 0.
    func sameReal(_ a: PlistValue, _ b: Double) -> Bool {
        guard case .real(let d) = a else { return false }
        return d.bitPattern == b.bitPattern || (d.isNaN && b.isNaN)
    }

    /// One element of an array read alone is the element the whole file
    /// reads to; a wrong index or a top object that is not an array is refused.
    @Test func oneElementOfABinaryArray() throws {
        let elements: [PlistValue] = (0..<40).map { n in
            .dictionary(["title": .string("Departures"), "body": .string("in \(n) min"), "items": .array([.integer(Int64(n)), .boolean(n % 2 == 0)])])
        }
        let data = try Plist.write(.array(elements), format: .binary)
        for index in [0, 1, 17, 39] { #expect(try Plist.readElement(index, ofBinaryArray: data) == elements[index]) }
        // The keys and the repeated title are stored once: under half of 40 files of one each.
        let apart = try elements.reduce(0) { $0 + (try Plist.write($1, format: .binary)).count }
        #expect(data.count * 2 < apart, "\(data.count) bytes together, \(apart) apart")
        #expect(throws: PlistError.self) { try Plist.readElement(40, ofBinaryArray: data) }
        #expect(throws: PlistError.self) { try Plist.readElement(-1, ofBinaryArray: data) }
        #expect(throws: PlistError.self) { try Plist.readElement(0, ofBinaryArray: try Plist.write(elements[0], format: .binary)) }
        #expect(throws: PlistError.self) { try Plist.readElement(0, ofBinaryArray: try Plist.write(.array(elements), format: .xml)) }
    }

    @Test(arguments: [
        Double.nan, .infinity, -.infinity, 0, -0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
        .leastNormalMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, Double(bitPattern: 0x000F_FFFF_FFFF_FFFF), Double(bitPattern: 0x8000_0000_0000_0001),
    ])
    func realsAtTheEdgesRoundTrip(_ real: Double) throws {
        for format in [PlistFormat.xml, .binary] {
            let back = try roundTrip(.real(real), format)
            #expect(sameReal(back, real), "\(real) through \(format) came back as \(back)")
        }
    }

    /// Seconds since 1970 of a UTC calendar date.
    static func seconds(_ year: Int, _ month: Int = 1, _ day: Int = 1, _ second: Int = 0) -> Double {
        Double(PlistText.daysFromCivil(year: year, month: month, day: day) * 86_400 + second)
    }

    @Test(arguments: [
        seconds(0), seconds(0, 1, 1, 1), seconds(1), seconds(1969, 12, 31, 86_399), 0, seconds(2001),
        seconds(9999, 12, 31, 86_399), 1e9, 4e9,
    ])
    func datesInTheYears0000To9999RoundTrip(_ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        for format in [PlistFormat.xml, .binary] {
            #expect(try roundTrip(.date(date), format) == .date(date), "\(seconds) through \(format)")
        }
    }

    @Test(arguments: [
        seconds(10000), seconds(-1, 12, 31, 86_399), -1e12, 1e12, 1e300, Double.nan, .infinity, -.infinity,
    ])
    func datesOutsideTheRangeAreRefusedByBothWriters(_ seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        for format in [PlistFormat.xml, .binary] {
            #expect {
                try Plist.write(.array([.date(date)]), format: format)
            } throws: { error in
                "\(error)".contains("outside the years 0000 to 9999")
            }
        }
        #expect(!Plist.isStorable(date))
    }

    @Test func theXMLReaderRefusesWhatTheWriterNeverWrites() {
        for text in ["10000-01-01T00:00:00Z", "-0001-12-31T23:59:59Z", "+2026-01-01T00:00:00Z"] {
            #expect(throws: PlistError.self, "\(text)") {
                try Plist.read(Data("<plist><date>\(text)</date></plist>".utf8))
            }
        }
    }

    @Test func xmlKeepsWholeSecondsAndBinaryTheWholeValue() throws {
        let date = Date(timeIntervalSince1970: 1_764_450_000.123456)
        #expect(try roundTrip(.date(date), .binary) == .date(date))
        #expect(try roundTrip(.date(date), .xml) == .date(Date(timeIntervalSince1970: 1_764_450_000)))
        let before1970 = Date(timeIntervalSince1970: -0.5)
        #expect(try roundTrip(.date(before1970), .xml) == .date(Date(timeIntervalSince1970: -1)))
    }

    /// A binary plist holding one date with these 8 bytes of Double.
    static func binaryDate(_ bits: UInt64) -> Data { binaryDouble(marker: 0x33, bits) }

    /// A binary plist holding one object: `marker` and 8 bytes of Double.
    static func binaryDouble(marker: UInt8, _ bits: UInt64) -> Data {
        var bytes = Array("bplist00".utf8) + [marker]
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        bytes += [0x08]  // offset table: object 0 at 8
        bytes += [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8)
        bytes += [0, 0, 0, 0, 0, 0, 0, 0x11]
        return Data(bytes)
    }

    @Test func binaryDatesThatNoWriterCanWriteAreRefused() throws {
        // The file from the report: a NaN date, which used to trap while
        // being written out as XML.
        for bits in [Double.nan.bitPattern, Double.infinity.bitPattern, (-Double.infinity).bitPattern, (1e12).bitPattern] {
            #expect {
                try Plist.read(Self.binaryDate(bits))
            } throws: { error in
                "\(error)".contains("outside the years 0000 to 9999")
            }
        }
        #expect(try Plist.read(Self.binaryDate((0.0).bitPattern)) == .date(Date(timeIntervalSince1970: 978_307_200)))
    }

    @Test func everyNaNReadsAsTheOneTheTextFormsKeep() throws {
        // A payload or sign in a NaN's bits would be shown from the binary
        // answer but lost once written as XML: the value read back after a
        // restart would differ from the one shown (found by the
        // provider-output fuzz target).
        for bits: UInt64 in [0xFFFF_FFFF_FFFF_FF25, 0x7FF0_0000_0000_0001, 0xFFF8_0000_0000_0000, Double.nan.bitPattern] {
            let value = try Plist.read(Self.binaryDouble(marker: 0x23, bits))
            guard case .real(let real) = value else {
                Issue.record("\(String(bits, radix: 16)) read as \(value)")
                continue
            }
            #expect(real.bitPattern == Double.nan.bitPattern, "\(String(bits, radix: 16)) read with bits \(String(real.bitPattern, radix: 16))")
            #expect(try roundTrip(value, .xml).bitsOfReal == real.bitPattern)
        }
    }

    /// `["ab", "cd", ["ab"]]` laid out with the given offset and reference sizes.
    static func binaryArray(offsetSize: Int, referenceSize: Int) -> Data {
        func bigEndian(_ value: Int, _ size: Int) -> [UInt8] {
            (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
        }
        var objects: [[UInt8]] = []
        objects.append([0xA3] + bigEndian(1, referenceSize) + bigEndian(2, referenceSize) + bigEndian(3, referenceSize))
        objects.append([0x52] + Array("ab".utf8))
        objects.append([0x52] + Array("cd".utf8))
        objects.append([0xA1] + bigEndian(1, referenceSize))
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { bytes += bigEndian(offset, offsetSize) }
        bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
        bytes += bigEndian(objects.count, 8) + bigEndian(0, 8) + bigEndian(table, 8)
        return Data(bytes)
    }

    @Test func everyOffsetAndReferenceSizeFrom1To8IsRead() throws {
        let expected = PlistValue.array([.string("ab"), .string("cd"), .array([.string("ab")])])
        for offsetSize in 1...8 {
            for referenceSize in 1...8 {
                #expect(try Plist.read(Self.binaryArray(offsetSize: offsetSize, referenceSize: referenceSize)) == expected,
                        "offset size \(offsetSize), reference size \(referenceSize)")
            }
        }
        for size in [0, 9, 16] {
            #expect(throws: PlistError.self) { try Plist.read(Self.binaryArray(offsetSize: size, referenceSize: 1)) }
        }
    }

    @Test func depthLimitIs512InEveryFormat() throws {
        @Sendable func nested(_ depth: Int) -> PlistValue { (0..<depth).reduce(.integer(1)) { inner, _ in .array([inner]) } }
        func json(_ depth: Int) -> Data { Data((String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)).utf8) }
        var inputs: [(name: String, data: Data, depth: Int)] = []
        for depth in [512, 513] {
            inputs.append(("xml \(depth)", try Plist.write(nested(depth), format: .xml), depth))
            inputs.append(("binary \(depth)", try Plist.write(nested(depth), format: .binary), depth))
            inputs.append(("json \(depth)", json(depth), depth))
        }
        // The readers on a thread with half the stack of a main thread: in
        // a debug build, where a level of the binary reader takes about 4 KiB
        // (a few hundred bytes optimized), 512 levels fit with room to spare.
        let results = try onThread(stackSize: 4 << 20) { [inputs] () -> [(PlistValue?, String)] in
            inputs.map { input in
                do { return (try Plist.read(input.data, allowJSON: true), "") } catch { return (nil, "\(error)") }
            }
        }
        var problems: [String] = []
        for (input, (value, error)) in zip(inputs, results) {
            if input.depth <= 512, value != nested(input.depth) { problems.append("\(input.name): \(error)") }
            if input.depth > 512, value != nil || !error.contains("deeper than 512") { problems.append("\(input.name) was read (\(error))") }
        }
        #expect(problems == [])
    }

    @Test func dataSkipsWhatIsNotBase64() throws {
        let xml = "<plist><data>aGVs\n\t bG8*!~ \u{00e9}=</data></plist>"
        #expect(try Plist.read(Data(xml.utf8)) == .data(Data("hello".utf8)))
    }

    @Test func otherBinaryVersionsAreNamed() {
        for version in ["bplist01", "bplist15", "bplist16"] {
            let data = Data((version + String(repeating: "\u{0}", count: 40)).utf8)
            #expect {
                try Plist.read(data)
            } throws: { error in
                "\(error)".contains("unsupported binary property list version '\(version)'")
            }
        }
    }

    /// A dictionary of a few hundred KiB: past 64 KiB, where libplist
    /// switches to 3-byte offsets.
    static let large: PlistValue = {
        var dictionary = PlistDictionary()
        for i in 0..<6_000 {
            dictionary["key \(i)"] = i % 3 == 0 ? .string("value \(i) " + String(repeating: "x", count: i % 40)) : i % 3 == 1 ? .integer(Int64(i) * 1_000_003) : .array([.boolean(i % 2 == 0), .real(Double(i) / 7)])
        }
        return .dictionary(dictionary)
    }()

    @Test func filesWrittenByLibplistAreRead() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/plistutil") else {
            Issue.record("plistutil is missing: apt-get install libplist-utils (scripts/install-deps does)")
            return
        }
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let xml = folder.appendingPathComponent("large.plist")
        let binary = folder.appendingPathComponent("large.bplist")
        try Plist.write(Self.large, format: .xml).write(to: xml)
        let converted = try await run(["/usr/bin/plistutil", "-i", xml.path, "-o", binary.path, "-f", "bin"])
        #expect(converted.status == 0, "\(converted.error)")
        let bytes = try Data(contentsOf: binary)
        #expect(bytes.count > 65_536)
        #expect(bytes[bytes.count - 26] == 3, "libplist wrote offsets of \(bytes[bytes.count - 26]) bytes, not 3")
        #expect(try Plist.read(bytes) == Self.large)
        // And the other way: what we write in binary, libplist reads.
        let ours = folder.appendingPathComponent("ours.bplist")
        let back = folder.appendingPathComponent("back.plist")
        try Plist.write(Self.large, format: .binary).write(to: ours)
        let reverse = try await run(["/usr/bin/plistutil", "-i", ours.path, "-o", back.path, "-f", "xml"])
        #expect(reverse.status == 0, "\(reverse.error)")
        #expect(try Plist.read(contentsOf: back.path) == Self.large)
    }
}

extension PlistValue {
    /// The bits of a real, or nil for any other value.
    fileprivate var bitsOfReal: UInt64? {
        guard case .real(let real) = self else { return nil }
        return real.bitPattern
    }
}

extension EdgeTests {
    /// `<data>` is written and decoded in one pass each; both agree with
    /// Foundation's encoder, and the decoder with Foundation's decoder applied to the text without its stray characters, on every
    /// length, with junk, spaces and `=` anywhere.
    @Test func base64AsFoundationDecodesItsAlphabet() {
        var rng = SeededGenerator(state: 64)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let extra = Array("= \n\t\r!*-_.".utf8)
        func foundation(_ text: [UInt8]) -> Data? {
            Data(base64Encoded: Data(text.filter { alphabet.contains($0) || $0 == UInt8(ascii: "=") }))
        }
        for length in 0..<300 {
            // Valid text, then with stray characters sprinkled in.
            let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) })
            var text = Array(bytes.base64EncodedString().utf8)
            var written: [UInt8] = [0x41]
            XMLPlistWriter.appendBase64(bytes, to: &written)
            #expect(written == [0x41] + text, "the writer's base64 of \(length) bytes")
            #expect(PlistText.data(text) == bytes, "\(length) bytes")
            for _ in 0..<3 { text.insert(extra[Int.random(in: 1..<extra.count, using: &rng)], at: Int.random(in: 0...text.count, using: &rng)) }
            #expect(PlistText.data(text) == bytes, "\(length) bytes with stray characters")
            // Random text over the alphabet, `=` and junk: the same answer as Foundation's.
            let random = (0..<(length % 23)).map { _ in
                Int.random(in: 0..<6, using: &rng) == 0 ? extra[Int.random(in: 0..<extra.count, using: &rng)]
                    : alphabet[Int.random(in: 0..<alphabet.count, using: &rng)]
            }
            #expect(PlistText.data(random) == foundation(random), "\(String(decoding: random, as: UTF8.self))")
        }
        for text in ["AB=C", "A===", "====", "QQ==QQ==", "QQ=", "QQ", "QUI=", "QUJD", "QQ==\n", " Q Q = = "] {
            #expect(PlistText.data(Array(text.utf8)) == foundation(Array(text.utf8)), "\(text)")
        }
    }
}
