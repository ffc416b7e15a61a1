// libFuzzer target: bytes -> the Desktop Entry parser (as a desktop file
// and as a mimeapps.list) and Exec expansion. Any input must give a value
// or an error, never a crash or a hang; an expanded argv carries the URL
// whole, in exactly one element.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDesktopEntry(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    _ = try? DesktopEntry(parsing: text, anyKeys: true)
    guard let entry = try? DesktopEntry(parsing: text) else { return 0 }
    _ = entry.list("MimeType")
    _ = entry.localized("Name", locale: "de_DE.UTF-8@euro")
    let url = "fuzz://u?a=1&b=%20;c"
    if let argv = try? entry.argv(opening: url, file: "/x.desktop", locale: nil) {
        precondition(argv.filter { $0.contains(url) }.count == 1, "the URL is not in exactly one argument: \(argv)")
    }
    if let exec = entry.string("Exec") { _ = try? DesktopEntry.splitExec(exec) }
    return 0
}
