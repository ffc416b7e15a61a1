import Foundation
import TestSupport
import Testing
@testable import PropertyList
@testable import PropertyListValues

/// Inputs written to hurt: each is refused with a clear error, fast, without
/// loading anything, and never yields a partial value.
@Suite struct HostileInputTests {
    func refuse(_ xml: String, mentioning fragment: String, limits: PlistLimits = PlistLimits(),
                sourceLocation: SourceLocation = #_sourceLocation) {
        let start = ContinuousClock.now
        do {
            let value = try Plist.read(Data(xml.utf8), limits: limits)
            Issue.record("accepted: \(String(describing: value).prefix(100))", sourceLocation: sourceLocation)
        } catch let error as PlistError {
            #expect(error.description.localizedCaseInsensitiveContains(fragment), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
        #expect(ContinuousClock.now - start < .seconds(2), sourceLocation: sourceLocation)
    }

    static let header = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

    @Test func billionLaughs() {
        var entities = "<!ENTITY lol \"lol\">"
        for i in 1...9 { entities += "<!ENTITY lol\(i) \"" + String(repeating: "&lol\(i == 1 ? "" : String(i - 1));", count: 10) + "\">" }
        refuse(Self.header + "<!DOCTYPE plist [\(entities)]><plist><string>&lol9;</string></plist>", mentioning: "internal subset")
    }

    @Test func quadraticBlowUp() {
        let big = String(repeating: "x", count: 20_000)
        let refs = String(repeating: "&big;", count: 20_000)
        refuse(Self.header + "<!DOCTYPE plist [<!ENTITY big \"\(big)\">]><plist><string>\(refs)</string></plist>", mentioning: "internal subset")
    }

    @Test func externalEntities() {
        refuse(Self.header + "<!DOCTYPE plist [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><plist><string>&xxe;</string></plist>", mentioning: "internal subset")
        refuse(Self.header + "<!DOCTYPE plist [<!ENTITY % pe SYSTEM \"file:///etc/passwd\"> %pe;]><plist><string/></plist>", mentioning: "internal subset")
        // A reference to an entity declared nowhere, under a DOCTYPE with an external id.
        refuse(Self.header + "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"file:///etc/passwd\"><plist><string>&passwd;</string></plist>", mentioning: "entity")
    }

    @Test func xinclude() {
        refuse(Self.header + "<plist xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"file:///etc/passwd\" parse=\"text\"/></plist>", mentioning: "unknown element")
    }

    @Test func aDTDOnALocalPortIsNeverFetched() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(bound == 0)
        #expect(listen(listener, 4) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let xml = Self.header + "<!DOCTYPE plist SYSTEM \"http://127.0.0.1:\(port)/evil.dtd\"><plist><string>ok</string></plist>"
        // The DOCTYPE itself is allowed (Apple's carries one); it is never loaded.
        #expect(try Plist.read(Data(xml.utf8)) == .string("ok"))
        var poll = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        #expect(Glibc.poll(&poll, 1, 200) == 0, "the parser connected to the DTD's port")
    }

    @Test func deepNesting() {
        for depth in [514, 100_000] {
            let xml = Self.header + "<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</plist>"
            refuse(xml, mentioning: "deeper than 512")
        }
        let binary = Plist.self
        let deep = (0..<600).reduce(PlistValue.integer(1)) { inner, _ in .array([inner]) }
        #expect(throws: PlistError.self) { try binary.read(try binary.write(deep, format: .binary)) }
    }

    @Test func oversizedInput() throws {
        let big = Data(count: 60_000_000)
        let start = ContinuousClock.now
        #expect(throws: PlistError.self) { try Plist.read(big, limits: PlistLimits(maximumSize: 16 << 20)) }
        #expect(ContinuousClock.now - start < .seconds(1), "refused before parsing")
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("big.plist")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 70_000_000)
        try handle.close()
        do {
            _ = try Plist.read(contentsOf: file.path)
            Issue.record("a 70 MB file was read")
        } catch let error as PlistError {
            #expect(error.message.contains("over the limit"))
        }
    }

    @Test func malformedDocuments() {
        refuse(Self.header + "<plist><string>caf\u{00e9}</string></plist>".replacingOccurrences(of: "é", with: "\u{FFFD}") + "<", mentioning: "line")
        var invalidUTF8 = Data((Self.header + "<plist><string>").utf8)
        invalidUTF8.append(contentsOf: [0xC3, 0x28, 0xFF])
        invalidUTF8.append(contentsOf: Data("</string></plist>".utf8))
        #expect {
            try Plist.read(invalidUTF8)
        } throws: { ($0 as? PlistError)?.line == 2 }
        refuse("<html><body/></html>", mentioning: "unknown element <html>")
        refuse("<plist><integer>abc</integer></plist>", mentioning: "not an integer")
        refuse("<plist><integer>18446744073709551616</integer></plist>", mentioning: "64-bit range")
        refuse("<plist><integer>-9223372036854775809</integer></plist>", mentioning: "64-bit range")
        refuse("<plist><real>1.5x</real></plist>", mentioning: "not a real")
        refuse("<plist><date>yesterday</date></plist>", mentioning: "not a date")
        refuse("<plist><data>a!!</data></plist>", mentioning: "base64")
        refuse("<plist><true>yes</true></plist>", mentioning: "must be empty")
        refuse("<plist><dict><string>no key</string></dict></plist>", mentioning: "without a <key>")
        refuse("<plist><dict><key>a</key></dict></plist>", mentioning: "has no value")
        refuse("<plist><string>a</string><string>b</string></plist>", mentioning: "second")
        refuse("<plist><string><dict/></string></plist>", mentioning: "holds only text")
        refuse("<plist><array>text<string/></array></plist>", mentioning: "text outside")
        refuse("<plist></plist>", mentioning: "holds no value")
        refuse("", mentioning: "empty")
        refuse("<plist><array></plist>", mentioning: "line 1")
    }

    @Test func hostileBinaryFiles() throws {
        let good = try Plist.write(.array([.string("a"), .array([.integer(1)])]), format: .binary)
        // Truncated at every length: always an error, never a value.
        for length in 0..<good.count {
            #expect(throws: PlistError.self, "truncated to \(length)") { try Plist.read(good.prefix(length)) }
        }
        // An array that contains itself: marker 0xA1, one reference to object 0.
        var cyclic = [UInt8]("bplist00".utf8) + [0xA1, 0x00]
        let table = cyclic.count
        cyclic += [0x08]
        cyclic += [0, 0, 0, 0, 0, 0, 1, 1] + bigEndian(1) + bigEndian(0) + bigEndian(UInt64(table))
        #expect { try Plist.read(Data(cyclic)) } throws: { "\($0)".contains("contains itself") }
        // A reference past the object count.
        var outOfBounds = cyclic
        outOfBounds[9] = 0x05
        #expect { try Plist.read(Data(outOfBounds)) } throws: { "\($0)".contains("past the") }
        // A string whose length runs past the file.
        var longString = [UInt8]("bplist00".utf8) + [0x5F, 0x13] + bigEndian(UInt64.max / 2)
        let stringTable = longString.count
        longString += [0x08]
        longString += [0, 0, 0, 0, 0, 0, 1, 1] + bigEndian(1) + bigEndian(0) + bigEndian(UInt64(stringTable))
        #expect(throws: PlistError.self) { try Plist.read(Data(longString)) }
        // A shared subtree referenced exponentially often decodes once.
        var shared = PlistValue.string("leaf")
        for _ in 0..<40 { shared = .array([shared, shared]) }
        _ = shared
    }

    func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) } }
}
