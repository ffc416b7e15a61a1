// libFuzzer target: a provider's standard output through todayd's whole
// path: parsed (XML, binary or JSON), checked, made the widget's timeline,
// written as the snapshot cache, read back as at the next start. Nothing
// may trap; what was stored reads back as what is shown.
import Foundation

private let now = Date(timeIntervalSince1970: 1_796_119_200)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProviderOutput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let output = Data(bytes: bytes, count: count)
    guard case .newData(let answer) = ExecProvider.parse(output) else { return 0 }
    let timeline = Timeline().replaced(by: answer, at: now)
    // The snapshot a D-Bus client would read is built from it.
    _ = ValueMapping.dbus(timeline.snapshot)
    let stored: Data
    do {
        stored = try Plist.write(timeline.plist, format: .xml)
    } catch {
        fatalError("an accepted answer could not be stored: \(error)")
    }
    guard let dictionary = try? Plist.read(stored).dictionary else { fatalError("the stored timeline does not read back") }
    let restored = Timeline(stored: dictionary, shownSince: now, at: now)
    // Compared as encoded: a NaN real is not equal to itself.
    func encoded(_ snapshot: PlistDictionary) -> Data? { try? Plist.write(.dictionary(snapshot), format: .binary) }
    guard encoded(restored.snapshot) == encoded(timeline.snapshot), restored.entries.count == timeline.entries.count else {
        fatalError("the timeline read back differs from the one shown")
    }
    return 0
}
