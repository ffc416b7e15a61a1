import Foundation
import TodayCore

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(Daemon.usage)
    exit(0)
}
do {
    let options = try Daemon.parse(arguments)
    exit(await Daemon.run(options, environment: ProcessInfo.processInfo.environment))
} catch {
    FileHandle.standardError.write(Data("todayd: \(error)\n\(Daemon.usage)\n".utf8))
    exit(2)
}
