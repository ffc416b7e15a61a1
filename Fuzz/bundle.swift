// libFuzzer target: bytes -> a widget extension's Info.plist inside a good
// app bundle -> bundle validation. Any input must load or give a
// BundleProblem, never a crash; what loads keeps the SPEC's rules.
import Foundation

let fuzzBundle: String = {
    let root = NSTemporaryDirectory() + "/fuzz-bundle-\(getpid())/Fuzz.app"
    try? FileManager.default.createDirectory(atPath: root + "/PlugIns/W.appex", withIntermediateDirectories: true)
    let info = """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>CFBundleIdentifier</key><string>org.fuzz.App</string>
        <key>CFBundleVersion</key><string>1</string><key>CFBundleShortVersionString</key><string>1.0</string></dict></plist>
        """
    _ = FileManager.default.createFile(atPath: root + "/Info.plist", contents: Data(info.utf8))
    return root
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBundleValidation(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let file = fuzzBundle + "/PlugIns/W.appex/Info.plist"
    _ = FileManager.default.createFile(atPath: file, contents: Data(bytes: bytes, count: count))
    guard let (app, widgets) = try? BundleCatalog.load(app: fuzzBundle) else { return 0 }
    precondition(app.bundleIdentifier.rawValue == "org.fuzz.App")
    for widget in widgets {
        precondition(widget.bundleIdentifier.rawValue.hasPrefix("org.fuzz.App."))
        precondition(widget.updateInterval == 0 || widget.updateInterval >= 60)
        precondition((1...3600).contains(widget.updateTimeout) && widget.memoryLimit >= 1 << 20)
        precondition(widget.preferredHeight >= 0 && widget.preferredHeight.isFinite)
        precondition(widget.providerBusName.map(BundleCatalog.isWellKnownBusName) ?? true)
    }
    return 0
}
