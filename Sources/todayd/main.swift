import FoundationEssentials
import Glibc
import TodayCore

Daemon.ensureStandardDescriptors()
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(Daemon.usage)
    exit(0)
}
let options: Daemon.Options
do {
    options = try Daemon.parse(arguments)
} catch {
    FileSystem.writeAll(2, "todayd: \(error)\n\(Daemon.usage)\n")
    exit(2)
}
exit(Daemon.runBlocking(options, environment: ProcessInfo.processInfo.environment))
