import Foundation
import TestSupport
import Testing
@testable import PropertyList
@testable import PropertyListValues

/// The same values everywhere: ours, Python's plistlib and the toolchain's
/// plutil, in XML and binary, each way.
@Suite struct DifferentialTests {
    let values = Corpus.values()

    @Test func oursRoundTrips() throws {
        for value in values {
            for format in [PlistFormat.xml, .binary] {
                let data = try Plist.write(value, format: format)
                let back = try Plist.read(data)
                #expect(tagged(back) == tagged(value), "\(format) round trip of \(tagged(value).prefix(200))")
            }
        }
    }

    @Test func plistlibReadsWhatWeWrite() async throws {
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        var paths: [String] = []
        var expected: [String] = []
        for (i, value) in values.enumerated() {
            for format in [PlistFormat.xml, .binary] {
                let path = folder.appendingPathComponent("\(i).\(format.rawValue).plist").path
                try Plist.write(value, format: format).write(to: URL(fileURLWithPath: path))
                paths.append(path)
                expected.append(tagged(value))
            }
        }
        let result = try await run(["python3", plistcheck, "dump"] + paths)
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (i, path) in paths.enumerated() {
            let theirs = i < lines.count ? lines[i] : "(missing)"
            let ours = try Plist.read(Data(contentsOf: URL(fileURLWithPath: path)))
            // Compare through our reader of their JSON dump so formatting does not matter.
            #expect(theirs == tagged(ours), "plistlib read \(path) differently")
            #expect(tagged(ours) == expected[i])
        }
    }

    @Test func weReadWhatPlistlibWrites() async throws {
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (i, value) in values.enumerated() {
            try Data(tagged(value).utf8).write(to: folder.appendingPathComponent("\(i).json"))
        }
        let written = try await run(["python3", plistcheck, "write", folder.path])
        #expect(written.status == 0, "\(written.error)")
        for (i, value) in values.enumerated() {
            for format in ["xml", "binary"] {
                let out = folder.appendingPathComponent("\(i).\(format)").path
                let ours = try Plist.read(Data(contentsOf: URL(fileURLWithPath: out)))
                #expect(tagged(ours) == tagged(value), "reading plistlib's \(format) of \(tagged(value).prefix(200))")
            }
        }
    }

    /// plutil holds values in Foundation's unordered dictionaries, reads a
    /// real -0.0 as 0.0, drops a leading U+FEFF from strings and, on Linux,
    /// merges keys that differ only in Unicode normalization (plistlib and
    /// Apple's Foundation keep both); equality here ignores key order and the
    /// sign of zero, and skips such strings and keys.
    @Test func plutilAgrees() async throws {
        let folder = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (i, value) in values.enumerated() {
            // ours XML -> plutil binary -> ours; ours binary -> plutil XML -> ours.
            if tagged(value).contains("\u{FEFF}") || tagged(value).unicodeScalars.contains("\u{301}") { continue }
            for (format, target) in [(PlistFormat.xml, "binary1"), (.binary, "xml1")] {
                let input = folder.appendingPathComponent("\(i).\(format.rawValue)").path
                let output = input + ".\(target)"
                try Plist.write(value, format: format).write(to: URL(fileURLWithPath: input))
                let lint = try await run(["plutil", "-lint", input])
                #expect(lint.status == 0, "plutil -lint \(input): \(lint.output) \(lint.error)")
                let converted = try await run(["plutil", "-convert", target, "-o", output, input])
                #expect(converted.status == 0, "plutil -convert \(target): \(converted.error)")
                let back = try Plist.read(Data(contentsOf: URL(fileURLWithPath: output)))
                #expect(back == value, "through plutil \(target): \(tagged(value).prefix(200))")
            }
        }
    }

    @Test func xmlLayoutIsApples() throws {
        let value = PlistValue.dictionary(["CFBundleIdentifier": .string("tech.agostini.app"), "List": .array([.integer(1), .boolean(true)])])
        let text = String(decoding: try Plist.write(value, format: .xml), as: UTF8.self)
        #expect(text == """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>CFBundleIdentifier</key>
            \t<string>tech.agostini.app</string>
            \t<key>List</key>
            \t<array>
            \t\t<integer>1</integer>
            \t\t<true/>
            \t</array>
            </dict>
            </plist>

            """)
    }

    @Test func jsonForWhatJSONHolds() throws {
        let value = PlistValue.dictionary(["a": .array([.integer(1), .real(2.5), .boolean(false), .string("x\"y")]), "b": .dictionary([:])])
        let json = try Plist.write(value, format: .json)
        #expect(try Plist.read(json, allowJSON: true) == value)
        #expect(throws: PlistError.self) { try Plist.write(.data(Data([1])), format: .json) }
        #expect(throws: PlistError.self) { try Plist.read(Data("{\"a\": null}".utf8), allowJSON: true) }
    }

    /// Strings as providers print them: plain, escaped, raw UTF-8, and
    /// broken.
    @Test func jsonStrings() throws {
        func read(_ bytes: [UInt8]) throws -> String? { try Plist.read(Data(bytes), allowJSON: true).array?.first?.string }
        func read(_ text: String) throws -> String? { try read(Array(text.utf8)) }
        #expect(try read(#"["plain text"]"#) == "plain text")
        #expect(try read(#"[""]"#) == "")
        #expect(try read(#"["a\"b\\c\/d\n\t\r\b\f"]"#) == "a\"b\\c/d\n\t\r\u{8}\u{c}")
        #expect(try read(#"["caf\u00e9 \ud83d\ude00 end"]"#) == "café 😀 end")
        #expect(try read("[\"café 😀\"]") == "café 😀")
        #expect(try read("[\"before \\n after é\"]") == "before \n after é")
        #expect(try read([0x5B, 0x22, 0x61, 0xFF, 0x62, 0x22, 0x5D]) == "a\u{FFFD}b")
        #expect(throws: PlistError.self) { try read("[\"tab\there\"]") }
        #expect(throws: PlistError.self) { try read(#"["unclosed]"#) }
        #expect(throws: PlistError.self) { try read(#"["\ud83d alone"]"#) }
        #expect(throws: PlistError.self) { try read(#"["\q"]"#) }
    }
}
