// today-banners: the notification center's banners (SPEC section 15), the
// program todayd's notifications are shown by as they come. The bus starts
// it at the first banner (io.github.todayd.Today1.Banners); it ends once
// nothing has shown for a minute.
//
//   today-banners [--stay] [--describe] [--screenshot FILE.png] [--press KEY]... [--reply TEXT]... [--address ADDR]
//
// --stay keeps it running with nothing shown; --describe prints what the
// banners show as it changes; --screenshot renders the first banners into a
// PNG and exits; --press presses the action of that key on the first banner
// offering it, --reply types a reply into the first banner that takes one,
// as a person would.
//
// A program of its own, apart from today-view: it loads GTK, libdbus and
// the Swift runtime and nothing of todayd's (no XML parser, no widget
// layout), so that it idles small while it waits for the next banner.
import CGtk
import DBus
import FoundationEssentials
import Glibc
import Posix
import TodayGtk

// A session's end (SIGTERM, SIGHUP) and Ctrl-C end it, also where whoever
// started it had those signals blocked: a mask is inherited, and a program
// started from a thread that blocks them (a launcher's worker thread)
// would otherwise outlive the session.
Signals.unblock([SIGTERM, SIGHUP, SIGINT])

var stay = false
var describe = false
var screenshot: String?
var presses: [String] = []
var replies: [String] = []
var address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
// Started by the bus: the bus that started it, unless told otherwise.
if let starter = ProcessInfo.processInfo.environment["DBUS_STARTER_ADDRESS"], !starter.isEmpty {
    address = starter
}

/// The value after `option`, or a usage error.
func value(after option: String, _ arguments: inout IndexingIterator<[String]>, _ what: String) -> String {
    guard let value = arguments.next() else {
        FileDescriptor.standardError.writeAll("today-banners: \(option) takes \(what)\n")
        exit(2)
    }
    return value
}

var arguments = Array(CommandLine.arguments.dropFirst()).makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--stay": stay = true
    case "--describe": describe = true
    case "--screenshot": screenshot = value(after: argument, &arguments, "a file name")
    case "--press": presses.append(value(after: argument, &arguments, "an action key"))
    case "--reply": replies.append(value(after: argument, &arguments, "a text"))
    case "--address": address = value(after: argument, &arguments, "a bus address")
    case "--help", "-h":
        FileDescriptor.standardOutput.writeAll("usage: today-banners [--stay] [--describe] [--screenshot FILE.png] [--press KEY]... [--reply TEXT]... [--address ADDR]\n")
        exit(0)
    default:
        FileDescriptor.standardError.writeAll("today-banners: unknown argument '\(argument)'\n")
        exit(2)
    }
}
guard let address, !address.isEmpty, let connection = try? Connection(address: address) else {
    FileDescriptor.standardError.writeAll("today-banners: no session bus: set DBUS_SESSION_BUS_ADDRESS or pass --address ADDR\n")
    exit(1)
}

// Cairo draws everything here: without this, GDK opens OpenGL at start
// (under Xvfb, Mesa's software renderer: some 45 MiB) that nothing uses.
setenv("GDK_GL", "disable", 0)
gtk_init(nil, nil)
let program = Banners(connection: connection, describe: describe, screenshot: screenshot, presses: presses, replies: replies, stay: stay)
program.start()
while !program.finished { g_main_context_iteration(nil, 1) }
exit(program.status)
