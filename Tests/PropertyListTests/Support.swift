import Foundation
import TestSupport
@testable import PropertyList
@testable import PropertyListValues

/// The tagged-JSON form that plistcheck.py prints, for comparing values
/// across implementations.
func tagged(_ value: PlistValue) -> String {
    switch value {
    case .string(let s): return "{\"s\": \(JSON.quote(s))}"
    case .integer(let i): return "{\"i\": \"\(i)\"}"
    case .unsignedInteger(let u): return "{\"i\": \"\(u)\"}"
    case .real(let d):
        let hex = String(d.bitPattern, radix: 16)
        return "{\"r\": \"\(String(repeating: "0", count: 16 - hex.count) + hex)\"}"
    case .boolean(let b): return "{\"b\": \(b)}"
    case .date(let d): return "{\"d\": \(Int(d.timeIntervalSince1970.rounded(.down)))}"
    case .data(let d): return "{\"data\": \"\(d.map { String(format: "%02x", $0) }.joined())\"}"
    case .array(let a): return "{\"a\": [" + a.map(tagged).joined(separator: ", ") + "]}"
    case .dictionary(let d):
        return "{\"dict\": [" + d.map { "[\(JSON.quote($0.0)), \(tagged($0.1))]" }.joined(separator: ", ") + "]}"
    }
}

enum Corpus {
    static let edgeStrings = [
        "", " ", "plain", "<&>\"'", "tab\tnew\nline", "héllo wörld", "日本語", "🙂👍🏽", "\u{FEFF}bom",
        "a]]>b", String(repeating: "long ", count: 2000), "key with spaces", "ümlaut-κλειδί",
    ]
    static let edgeIntegers: [PlistValue] = [
        .integer(0), .integer(1), .integer(-1), .integer(255), .integer(256), .integer(65535), .integer(65536),
        .integer(Int64(UInt32.max)), .integer(Int64(UInt32.max) + 1), .integer(.max), .integer(.min),
        .unsigned(UInt64(Int64.max) + 1), .unsigned(.max),
    ]
    static let edgeReals: [Double] = [
        0, -0.0, 1, -1.5, 0.1, 1e100, -1e-100, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 3.141592653589793,
        .infinity, -.infinity,
    ]

    static func random(_ rng: inout SeededGenerator, depth: Int) -> PlistValue {
        let kind = depth > 4 ? Int.random(in: 0..<6, using: &rng) : Int.random(in: 0..<8, using: &rng)
        switch kind {
        case 0: return .string(edgeStrings.randomElement(using: &rng) ?? "")
        case 1: return edgeIntegers.randomElement(using: &rng) ?? .integer(0)
        case 2: return .real(edgeReals.randomElement(using: &rng) ?? 0)
        case 3: return .boolean(Bool.random(using: &rng))
        case 4:
            return .date(Date(timeIntervalSince1970: TimeInterval(Int.random(in: -2_000_000_000...4_000_000_000, using: &rng))))
        case 5: return .data(Data((0..<Int.random(in: 0..<100, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        case 6: return .array((0..<Int.random(in: 0..<5, using: &rng)).map { _ in random(&rng, depth: depth + 1) })
        default:
            var dictionary = PlistDictionary()
            for i in 0..<Int.random(in: 0..<5, using: &rng) {
                dictionary["\(edgeStrings.randomElement(using: &rng) ?? "")#\(i)"] = random(&rng, depth: depth + 1)
            }
            return .dictionary(dictionary)
        }
    }

    /// Every type, edge values, empty containers and deep nesting.
    static func values() -> [PlistValue] {
        var rng = SeededGenerator(state: 2026)
        var values: [PlistValue] = edgeStrings.map(PlistValue.string) + edgeIntegers + edgeReals.map(PlistValue.real)
        values += [.boolean(true), .boolean(false), .data(Data()), .data(Data(0...255)), .array([]), .dictionary([:])]
        values.append(.date(Date(timeIntervalSince1970: 0)))
        values.append(.date(Date(timeIntervalSince1970: 978_307_200)))
        values.append(.date(Date(timeIntervalSince1970: -62_135_596_800)))  // 0001-01-01
        values.append((0..<100).reduce(PlistValue.string("bottom")) { inner, i in i % 2 == 0 ? .array([inner]) : .dictionary(["k": inner]) })
        values.append(.array((0..<300).map { .integer(Int64($0)) }))
        // Large enough to be indexed, with keys only their bytes tell apart.
        let keys = ["\u{E9}", "e\u{301}"] + (0..<100).map { "entry \($0)" }
        values.append(.dictionary(PlistDictionary(uniqueKeys: keys, values: keys.indices.map { .integer(Int64($0)) })))
        for _ in 0..<60 { values.append(random(&rng, depth: 0)) }
        return values
    }
}

let plistcheck = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("plistcheck.py").path
