// libFuzzer target: bytes -> the binary property-list reader.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBinaryPlist(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var data = Data("bplist00".utf8)
    data.append(bytes, count: count)
    if let value = try? BinaryPlistReader.read(data, limits: PlistLimits(maximumSize: 1 << 20)) {
        _ = try? Plist.write(value, format: .binary)
    }
    return 0
}
