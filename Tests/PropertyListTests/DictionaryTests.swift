import Foundation
import TestSupport
import Testing
@testable import PropertyList
@testable import PropertyListValues

@Suite struct DictionaryTests {
    /// Random insertions, replacements, removals and lookups on a
    /// `PlistDictionary` against a plain model of ordered pairs, across the
    /// size at which it starts keeping an index.
    @Test func behavesLikeOrderedPairs() {
        var rng = SeededGenerator(state: 7)
        var dictionary = PlistDictionary()
        var model: [(String, PlistValue)] = []
        for step in 0..<4_000 {
            let key = "k\(Int.random(in: 0..<60, using: &rng))"
            let existing = model.firstIndex { $0.0 == key }
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                dictionary[key] = .integer(Int64(step))
                if let existing { model[existing].1 = .integer(Int64(step)) } else { model.append((key, .integer(Int64(step)))) }
            case 6..<8:
                dictionary[key] = nil
                if let existing { model.remove(at: existing) }
            default:
                let copy = dictionary  // a shared copy must not see later changes
                dictionary["fresh\(step)"] = .boolean(true)
                #expect(copy["fresh\(step)"] == nil)
                #expect(copy.count == model.count)
                model.append(("fresh\(step)", .boolean(true)))
            }
            #expect(dictionary[key] == model.first { $0.0 == key }?.1)
            #expect(dictionary.keys == model.map(\.0), "after step \(step)")
        }
    }

    /// A key a file repeats keeps its first place and takes the later value,
    /// in XML and in binary, in small and in indexed dictionaries.
    @Test func repeatedKeysInFiles() throws {
        for size in [3, 40] {
            var keys = (0..<size).map { "key\($0)" }
            var values = (0..<size).map { PlistValue.integer(Int64($0)) }
            keys.append("key1")
            values.append(.string("later"))
            let repeated = PlistValue.dictionary(PlistDictionary(uniqueKeys: keys, values: values))
            for format in [PlistFormat.xml, .binary] {
                let read = try #require(try Plist.read(Plist.write(repeated, format: format)).dictionary)
                #expect(read.count == size, "\(format), \(size) keys")
                #expect(read.keys == Array(keys.prefix(size)))
                #expect(read["key1"] == .string("later"))
                #expect(read["key0"] == .integer(0))
            }
        }
    }

    /// Keys are told apart by their bytes, as plistlib and Foundation do:
    /// "é" composed and decomposed are two keys of one dictionary.
    @Test func canonicallyEquivalentKeysStayDistinct() throws {
        for size in [2, 40] {
            let keys = ["\u{E9}", "e\u{301}"] + (2..<size).map { "key\($0)" }
            let values = (0..<size).map { PlistValue.integer(Int64($0)) }
            let value = PlistValue.dictionary(PlistDictionary(uniqueKeys: keys, values: values))
            for format in [PlistFormat.xml, .binary] {
                let read = try #require(try Plist.read(Plist.write(value, format: format)).dictionary)
                #expect(read.count == size)
                #expect(read.values == values)
            }
        }
    }
}
