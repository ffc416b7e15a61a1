// Parses a generated 1.6 MB XML plist of 20,000 mixed entries (every type) and its binary
// form with our reader, and times libxml2's xmlReadMemory alone on the same
// bytes through the same library, for `make bench`; Foundation's
// PropertyListSerialization is timed here too.
//
//   plist-bench OUTDIR     writes OUTDIR/bench.xml, OUTDIR/bench.bplist and
//                          prints "ours-xml MS", "ours-binary MS", "xmlReadMemory MS"
//   plist-bench OUTDIR xml|binary N
//                          reads that form N times and nothing else, for a profiler
import Foundation
import PropertyList

let arguments = CommandLine.arguments
guard arguments.count == 2 || arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: plist-bench OUTDIR [xml|binary N]\n".utf8))
    exit(2)
}
let folder = URL(fileURLWithPath: arguments[1])

var entries = PlistDictionary()
for i in 0..<20_000 {
    let value: PlistValue
    switch i % 8 {
    case 0: value = .string("value number \(i) with some text about it")
    case 1: value = .integer(Int64(i) * 7919)
    case 2: value = .real(Double(i) / 3)
    case 3: value = .boolean(i % 2 == 0)
    case 4: value = .date(Date(timeIntervalSince1970: 1_700_000_000 + Double(i) * 60))
    case 5: value = .data(Data((0..<32).map { UInt8(truncatingIfNeeded: i &+ $0) }))
    case 6: value = .array([.string("item \(i)"), .integer(Int64(i)), .real(Double(i) * 0.5)])
    default: value = .dictionary(["name": .string("entry \(i)"), "count": .integer(Int64(i)), "enabled": .boolean(true)])
    }
    entries["key-\(i)"] = value
}
let root = PlistValue.dictionary(entries)
do {
    let xml = try Plist.write(root, format: .xml)
    let binary = try Plist.write(root, format: .binary)
    try xml.write(to: folder.appendingPathComponent("bench.xml"))
    try binary.write(to: folder.appendingPathComponent("bench.bplist"))
    if arguments.count == 4 {
        let input = arguments[2] == "binary" ? binary : xml
        for _ in 0..<(Int(arguments[3]) ?? 1) { _ = try Plist.read(input) }
        exit(0)
    }

    func best(_ runs: Int, _ body: () throws -> Void) rethrows -> Double {
        var fastest = Double.infinity
        for _ in 0..<runs {
            let start = ContinuousClock.now
            try body()
            let elapsed = ContinuousClock.now - start
            fastest = min(fastest, Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
        }
        return fastest
    }
    let ourXML = try best(15) { _ = try Plist.read(xml) }
    let ourBinary = try best(15) { _ = try Plist.read(binary) }
    let foundationXML = try best(5) { _ = try PropertyListSerialization.propertyList(from: xml, format: nil) }
    let foundationBinary = try best(5) { _ = try PropertyListSerialization.propertyList(from: binary, format: nil) }
    print(String(format: "foundation-xml %.2f", foundationXML))
    print(String(format: "foundation-binary %.2f", foundationBinary))
    print(String(format: "ours-xml %.2f", ourXML))
    print(String(format: "ours-binary %.2f", ourBinary))
    print("bytes-xml \(xml.count)")
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
