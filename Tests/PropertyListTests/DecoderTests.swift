import Foundation
import Testing
@testable import PropertyList
@testable import PropertyListValues

/// PlistDecoder: Swift types from property lists.
@Suite struct DecoderTests {
    struct Manifest: Decodable, Equatable {
        struct Attributes: Decodable, Equatable {
            var TodayPreferredHeight: Double?
            var TodayUpdateInterval: UInt32?
        }
        struct ExtensionInfo: Decodable, Equatable {
            var NSExtensionPointIdentifier: String
            var NSExtensionAttributes: Attributes?
        }
        var CFBundleIdentifier: String
        var CFBundleVersion: String
        var Tags: [String]
        var NSExtension: ExtensionInfo
        var Icon: Data?
        var Built: Date?
        var Home: URL?
    }

    @Test func decodesNestedTypes() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>CFBundleIdentifier</key><string>org.example.App.W</string>
            <key>CFBundleVersion</key><string>1</string>
            <key>Tags</key><array><string>a</string><string>b</string></array>
            <key>NSExtension</key><dict>
              <key>NSExtensionPointIdentifier</key><string>com.apple.widget-extension</string>
              <key>NSExtensionAttributes</key><dict><key>TodayPreferredHeight</key><integer>350</integer><key>TodayUpdateInterval</key><integer>900</integer></dict>
            </dict>
            <key>Icon</key><data>AAEC</data>
            <key>Built</key><date>2026-11-29T12:00:00Z</date>
            <key>Home</key><string>agostiniTech://openPost?postID=3</string>
            </dict></plist>
            """
        let manifest = try PlistDecoder().decode(Manifest.self, from: Data(xml.utf8))
        #expect(manifest.CFBundleIdentifier == "org.example.App.W")
        #expect(manifest.Tags == ["a", "b"])
        #expect(manifest.NSExtension.NSExtensionAttributes == .init(TodayPreferredHeight: 350, TodayUpdateInterval: 900))
        #expect(manifest.Icon == Data([0, 1, 2]))
        #expect(manifest.Built == Date(timeIntervalSince1970: 1_795_953_600))
        #expect(manifest.Home?.scheme == "agostiniTech")
    }

    @Test func errorsNameTheKey() {
        struct Small: Decodable { var count: UInt8 }
        func failure(_ value: PlistValue) -> String {
            let result = Result { try PlistDecoder().decode(Small.self, from: value) }
            guard case .failure(let error) = result else { return "decoded" }
            switch error as? DecodingError {
            case .typeMismatch(_, let context)?, .dataCorrupted(let context)?, .valueNotFound(_, let context)?:
                return context.codingPath.map(\.stringValue).joined(separator: ".") + ": " + context.debugDescription
            case .keyNotFound(let key, _)?: return "missing \(key.stringValue)"
            default: return "\(error)"
            }
        }
        #expect(failure(.dictionary(["count": .integer(300)])) == "count: integer(300) does not fit UInt8")
        #expect(failure(.dictionary(["count": .string("3")])) == "count: expected an integer, found string")
        #expect(failure(.dictionary([:])) == "missing count")
        #expect(failure(.array([])) == ": expected a dictionary, found array")
        #expect(failure(.dictionary(["count": .real(2.5)])) == "count: real(2.5) does not fit UInt8")
        #expect(failure(.dictionary(["count": .real(2)])) == "decoded")
    }
}
