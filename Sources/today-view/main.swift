// today-view: the Today view, one card per widget with content (SPEC
// section 13) and the notification center's list (section 15), following
// todayd live over D-Bus. The banners are a program of their own,
// today-banners.
//
//   today-view [--toggle] [--window] [--pane] [--style light|dark] [--edit] [--describe] [--address ADDR]
//   today-view [--pane] [--style light|dark] [--edit] --screenshot FILE.png [--delay SECONDS] [--describe]
//              [--press ACTION]... [--address ADDR]
//   today-view --first-frame [--address ADDR]
//
// One view runs per session: a second one brings the first forward, and
// --toggle shows or hides it. Where the compositor has layer-shell (sway,
// Plasma) the view is a panel along the right edge over other windows
// (--window: a window all the same); elsewhere a window.
// Without --style the window follows the desktop's light or dark
// preference (the settings portal), live.
// --screenshot renders the window once through GTK's snapshot into a PNG
// and exits; --describe then prints every text the window shows.
// --edit opens the view in Edit: the gallery to add widgets from, and on
// each card its controls (move, size, settings, remove); --settings CARD
// opens that card's settings form too (a picture is then of the form).
// --first-frame exits once the first frame showing todayd's answer is on
// screen: what `scripts/bench-center` times.
// --press presses a card's button or toggle of that action id, as a click
// would, once the window shows it; or the notifications' menu of Do Not
// Disturb for a while (do-not-disturb-menu) or one of its choices
// (do-not-disturb-1h, do-not-disturb-4h, do-not-disturb-morning).
import CGtk
import DBus
import FoundationEssentials
import Glibc
import Posix
import TodayCore
import TodayGtk

// A session's end (SIGTERM, SIGHUP) and Ctrl-C end it, also where whoever
// started it had those signals blocked: a mask is inherited, and a program
// started from a thread that blocks them (a launcher's worker thread)
// would otherwise outlive the session.
Signals.unblock([SIGTERM, SIGHUP, SIGINT])

var pane = false
var toggle = false
var windowed = false
var firstFrame = false
var editing = false
var settingsFor: String?
var screenshot: String?
var describe = false
var delay: UInt32 = 0
var style = Style.system
var presses: [String] = []
var address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
var arguments = Array(CommandLine.arguments.dropFirst()).makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--pane": pane = true
    case "--toggle": toggle = true
    case "--banners":
        FileSystem.writeAll(2, "today-view: the banners are a program of their own now: run today-banners (the bus starts it at the first banner)\n")
        exit(2)
    case "--window": windowed = true
    case "--first-frame": firstFrame = true
    case "--edit": editing = true
    case "--settings":
        guard let id = arguments.next() else {
            FileSystem.writeAll(2, "today-view: --settings takes a card's id (a widget's, or WIDGET/N)\n")
            exit(2)
        }
        editing = true
        settingsFor = id
    case "--screenshot": screenshot = arguments.next()
    case "--describe": describe = true
    case "--delay": delay = arguments.next().flatMap { UInt32($0) } ?? 0
    case "--address": address = arguments.next()
    case "--press":
        guard let action = arguments.next() else {
            FileSystem.writeAll(2, "today-view: --press takes an action id\n")
            exit(2)
        }
        presses.append(action)
    case "--style":
        guard let chosen = arguments.next().flatMap(Style.init(rawValue:)) else {
            FileSystem.writeAll(2, "today-view: --style takes light, dark or system\n")
            exit(2)
        }
        style = chosen
    case "--help", "-h":
        FileSystem.writeAll(
            1,
            """
            usage: today-view [--toggle] [--window] [--pane] [--style light|dark] [--edit] [--describe] [--address ADDR]
                   today-view [--pane] [--style light|dark] [--edit | --settings CARD] --screenshot FILE.png [--delay SECONDS] [--describe] [--press ACTION]... [--address ADDR]
                   today-view --first-frame [--address ADDR]

            """)
        exit(0)
    default:
        FileSystem.writeAll(2, "today-view: unknown argument '\(argument)'\n")
        exit(2)
    }
}
guard let address, !address.isEmpty, let connection = try? Connection(address: address) else {
    FileSystem.writeAll(2, "today-view: no session bus: set DBUS_SESSION_BUS_ADDRESS or pass --address ADDR\n")
    exit(1)
}

let view = TodayView(
    connection: connection, pane: pane, screenshot: screenshot, describe: describe, delay: delay, style: style, presses: presses,
    windowed: windowed, firstFrame: firstFrame, editing: editing)
view.settingsFor = settingsFor
if screenshot == nil, !firstFrame {
    let claim = ViewInstance.claim(
        connection, toggling: toggle,
        toggled: { onMainLoop { MainActor.assumeIsolated { view.toggle() } } },
        presented: { onMainLoop { MainActor.assumeIsolated { view.present() } } })
    switch claim {
    case .ours: break
    case .handedOver: exit(0)
    case .failed(let problem):
        FileSystem.writeAll(2, "today-view: cannot reach the running view: \(problem)\n")
        exit(1)
    }
}

// Cairo draws everything here: without this, GDK opens OpenGL at start
// (under Xvfb, Mesa's software renderer: some 45 MiB) that nothing uses.
setenv("GDK_GL", "disable", 0)
gtk_init(nil, nil)
view.start()
while !view.finished {
    g_main_context_iteration(nil, 1)
}
exit(view.status)
