import DBus
import FoundationEssentials
import Glibc
import PropertyList
import TodayCore

let usage = """
    usage: todayctl [--address ADDR] [--json] COMMAND …

    \(commands.map { "  \($0.usage)\n      \($0.summary)" }.joined(separator: "\n"))

    Options for every command:
      --address ADDR   the bus todayd serves on (default: DBUS_SESSION_BUS_ADDRESS)
      --json           machine-readable output (docs/todayctl.md describes its shape)
      --help           this text, or a command's own with `todayctl COMMAND --help`

    Exit status: 0 on success, 1 when todayd (or a file) said no, 2 on bad usage.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
var address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
var json = false
var help = false
var rest: [String] = []
var iterator = arguments.makeIterator()
while let argument = iterator.next() {
    switch argument {
    case "--address":
        guard let value = iterator.next() else {
            Out.error("todayctl: --address needs a bus address\n")
            exit(2)
        }
        address = value
    case "--json": json = true
    case "--help", "-h": help = true
    default: rest.append(argument)
    }
}

guard let name = rest.first else {
    if help {
        Out.line(usage)
        exit(0)
    }
    Out.error(usage + "\n")
    exit(2)
}
guard let command = commands.first(where: { $0.name == name }) else {
    Out.error("todayctl: unknown command '\(name)'\n\n\(usage)\n")
    exit(2)
}
if help {
    Out.line("usage: todayctl [--address ADDR] [--json] \(command.usage)\n\n\(command.summary).")
    exit(0)
}

do {
    try await run(command.name, Array(rest.dropFirst()), address: address, json: json)
    exit(0)
} catch let failure as Failure {
    Out.error("todayctl: \(failure.message)\n")
    if failure.status == 2 { Out.error("usage: todayctl \(command.usage)\n") }
    exit(failure.status)
} catch {
    Out.error("todayctl: \(error)\n")
    exit(1)
}
