// runtime-idle-floor: what the Swift runtime and FoundationEssentials hold
// in memory in a program that does nothing else, the other half of the
// floor under the banners' idle memory (the first is gtk-idle-floor, in
// bench/reference). Says when it started, then waits until killed.
import FoundationEssentials
import Glibc

let line = Array("idle since \(Date().timeIntervalSince1970)\n".utf8)
_ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
while true { pause() }
