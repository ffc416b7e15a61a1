import DBus
import FoundationEssentials
import Glibc
import PropertyList
import TodayCore

let commands: [(name: String, usage: String, summary: String)] = [
    ("list", "list", "the widgets, one per line: id, name, state"),
    ("show", "show [WIDGET]", "the widgets as cards, as a panel would show them"),
    ("update", "update WIDGET | update --all", "ask for fresh content now"),
    ("has-content", "has-content WIDGET true|false --as BUNDLE", "say whether a widget has content (as the widget or its app)"),
    ("open", "open URL", "open a URL in the app that handles it"),
    ("resolve", "resolve URL", "which app would get a URL, launching nothing"),
    ("defaults", "defaults GROUP get KEY | set KEY VALUE [--int|--real|--bool|--date|--data] | remove KEY | list  --as BUNDLE",
     "read and write an app group's defaults"),
    ("action", "action WIDGET ACTION", "press a button or toggle of a widget's current snapshot"),
    ("timeline", "timeline WIDGET", "a widget's timeline: its entries, their relevance, the reload policy and the next reload"),
    ("bar", "bar [WIDGET…] --format waybar|i3bar|polybar|genmon [--once]",
     "the widgets as a bar module: a line per change (genmon: once), clicks call Activate"),
    ("watch", "watch", "print changes as they happen, until interrupted"),
    ("new", "new app NAME --id ID [--group GROUP] [--scheme SCHEME] [--widget NAME] [--todaykit PATH|URL] [DIR] | new widget NAME --app DIR",
     "a Swift package for a container app and its widget, written with TodayKit; or another widget for it"),
    ("install", "install PATH.app [--dir DIR]", "check a bundle as lint does and install it whole (replacing one of the same id)"),
    ("uninstall", "uninstall BUNDLE_ID [--dir DIR]", "remove an installed bundle"),
    ("lint", "lint PATH…", "check .app bundles, or folders of them, against the bundle rules"),
    ("plist", "plist FILE|- [--to xml|binary|json]", "print a property list (XML by default; - reads standard input)"),
    ("run-provider", "run-provider WIDGET [--bundles DIR]… [--verbose]",
     "run a widget's provider once, outside todayd, with the same limits and sandbox (--verbose: its command line)"),
]

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
