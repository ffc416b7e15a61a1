// Times a full scan with validation of the bundle folder given, best of
// several runs, and prints `scan-ms <milliseconds> widgets <count>`.
import Foundation
import TodayCore

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: bundle-bench FOLDER\n".utf8))
    exit(2)
}
let folder = CommandLine.arguments[1]
var best = Duration.seconds(3600)
var count = 0
for _ in 0..<5 {
    let start = ContinuousClock.now
    let catalog = BundleCatalog.scan([folder])
    best = min(best, ContinuousClock.now - start)
    count = catalog.widgets.count
}
let milliseconds = Double(best.components.seconds) * 1000 + Double(best.components.attoseconds) / 1e15
print(String(format: "scan-ms %.2f widgets %d", milliseconds, count))
