// libFuzzer target: bytes -> the XML property-list reader. Any input must
// give a value or a PlistError, never a crash, a hang or unbounded memory.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzXMLPlist(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    if let value = try? XMLPlistReader.read(data, limits: PlistLimits(maximumSize: 1 << 20)) {
        // What was read must write and read back to the same value.
        if let xml = try? Plist.write(value, format: .xml) {
            let back = try? Plist.read(xml)
            precondition(back.map { tagless($0) == tagless(value) } ?? false, "XML round trip changed a value")
        }
    }
    return 0
}

/// Equality that treats NaN as equal to itself.
func tagless(_ value: PlistValue) -> String {
    "\(value)"
}
