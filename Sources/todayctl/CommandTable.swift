/// todayctl's commands, described once: `--help` prints from this table,
/// and the bash, zsh and fish completions are made from it
/// (`todayctl completions SHELL`).
struct Command {
    /// What a word of the command line completes to.
    enum Completion: Equatable {
        /// Anything (a URL, a key, a bundle id): nothing is offered.
        case free
        /// An installed widget's id, asked of todayd.
        case widget
        case file
        case folder
        case words([String])
    }

    let name: String
    let usage: String
    let summary: String
    /// What each operand completes to, in order; the last repeats when
    /// `repeats` is set.
    var operands: [Completion] = []
    var repeats = false
    /// Options of this command: a bare flag, or one that takes a value.
    var options: [(name: String, value: Completion?)] = []
}

/// Options every command takes, before or after it.
let globalOptions: [(name: String, value: Command.Completion?)] = [("--address", .free), ("--json", nil), ("--help", nil)]

let commands: [Command] = [
    Command(name: "list", usage: "list", summary: "the widgets, one per line: id, name, state"),
    Command(name: "show", usage: "show [WIDGET]", summary: "the widgets as cards, as a panel would show them", operands: [.widget]),
    Command(
        name: "update", usage: "update WIDGET | update --all", summary: "ask for fresh content now", operands: [.widget],
        options: [("--all", nil)]),
    Command(
        name: "has-content", usage: "has-content WIDGET true|false --as BUNDLE",
        summary: "say whether a widget has content (as the widget or its app)", operands: [.widget, .words(["true", "false"])],
        options: [("--as", .free)]),
    Command(name: "open", usage: "open URL", summary: "open a URL in the app that handles it", operands: [.free]),
    Command(name: "resolve", usage: "resolve URL", summary: "which app would get a URL, launching nothing", operands: [.free]),
    Command(
        name: "defaults",
        usage: "defaults GROUP get KEY | set KEY VALUE [--int|--real|--bool|--date|--data] | remove KEY | list  --as BUNDLE",
        summary: "read and write an app group's defaults", operands: [.free, .words(["get", "set", "remove", "list"])],
        options: [("--as", .free), ("--int", nil), ("--real", nil), ("--bool", nil), ("--date", nil), ("--data", nil)]),
    Command(
        name: "action", usage: "action WIDGET ACTION", summary: "press a button or toggle of a widget's current snapshot",
        operands: [.widget, .free]),
    Command(
        name: "timeline", usage: "timeline WIDGET",
        summary: "a widget's timeline: its entries, their relevance, the reload policy and the next reload", operands: [.widget]),
    Command(
        name: "bar", usage: "bar [WIDGET…] --format waybar|i3bar|polybar|genmon [--once] | bar --notifications --format …",
        summary:
            "the widgets as a bar module: a line per change (genmon: once), clicks call Activate; --notifications: the count and Do Not Disturb",
        operands: [.widget], repeats: true,
        options: [("--format", .words(["waybar", "i3bar", "polybar", "genmon"])), ("--once", nil), ("--notifications", nil)]),
    Command(
        name: "notify",
        usage:
            "notify SUMMARY [BODY] [--app NAME] [--icon ICON] [--urgency low|normal|critical] [--action KEY=LABEL]… [--hint NAME=TYPE:VALUE]… [--replace ID] [--timeout MS] [--image FILE] [--progress N] [--wait]",
        summary: "send a notification, as notify-send does; prints its id, or with --wait the action chosen or why it closed",
        operands: [.free, .free],
        options: [
            ("--app", .free), ("--icon", .free), ("--urgency", .words(["low", "normal", "critical"])), ("--action", .free), ("--hint", .free),
            ("--replace", .free), ("--timeout", .free), ("--image", .file), ("--progress", .free), ("--wait", nil),
        ]),
    Command(
        name: "notifications",
        usage:
            "notifications [list | dismiss [ID] | clear [APP] | invoke [ID [KEY]] | reply ID TEXT | dnd [on [for DURATION|until HH:MM]|off|toggle|schedule FROM TO|schedule none] | policy [APP [KEY=VALUE…|reset]] | position [top-right|top-left|top|bottom-right|bottom-left|bottom] | output [NAME|default] | at-once [1|2|3] | idle [SECONDS|never] | limit [N] | watch]",
        summary: "the notification center: its list, dismissing and acting on notifications, Do Not Disturb, each app's policy",
        operands: [.words(["list", "dismiss", "clear", "invoke", "reply", "dnd", "policy", "position", "output", "at-once", "idle", "limit", "watch"]), .free, .free]),
    Command(name: "watch", usage: "watch", summary: "print changes as they happen, until interrupted"),
    Command(
        name: "reload", usage: "reload",
        summary: "rescan the bundle folders and read notifications.plist and layout.plist again (as SIGHUP does)"),
    Command(name: "layout", usage: "layout", summary: "what the Today view shows, in order: position, instance, name, family, settings"),
    Command(
        name: "add", usage: "add WIDGET [--set KEY=VALUE]… [--family small|medium|large] [--at N]",
        summary: "place another instance of a widget, with its settings", operands: [.widget],
        options: [("--set", .free), ("--family", .words(["small", "medium", "large"])), ("--at", .free)]),
    Command(
        name: "remove", usage: "remove INSTANCE",
        summary: "take an instance out of the layout (an added one is gone; a widget's own stays installed)", operands: [.free]),
    Command(name: "move", usage: "move INSTANCE N", summary: "move an instance to position N of the layout (0: first)", operands: [.free, .free]),
    Command(
        name: "configure", usage: "configure INSTANCE [--set KEY=VALUE]… [--family small|medium|large]",
        summary: "change an added instance's settings (the others stay)", operands: [.free],
        options: [("--set", .free), ("--family", .words(["small", "medium", "large"]))]),
    Command(
        name: "new",
        usage:
            "new app NAME --id ID [--group GROUP] [--scheme SCHEME] [--widget NAME] [--todaykit PATH|URL] [DIR] | new widget NAME --app DIR",
        summary: "a Swift package for a container app and its widget, written with TodayKit; or another widget for it",
        operands: [.words(["app", "widget"]), .free, .folder],
        options: [
            ("--id", .free), ("--group", .free), ("--scheme", .free), ("--widget", .free), ("--todaykit", .folder), ("--app", .folder),
        ]),
    Command(
        name: "install", usage: "install PATH.app [--dir DIR]",
        summary: "check a bundle as lint does and install it whole (replacing one of the same id)", operands: [.folder],
        options: [("--dir", .folder)]),
    Command(
        name: "uninstall", usage: "uninstall BUNDLE_ID [--dir DIR]", summary: "remove an installed bundle", operands: [.free],
        options: [("--dir", .folder)]),
    Command(
        name: "lint", usage: "lint PATH…", summary: "check .app bundles, or folders of them, against the bundle rules",
        operands: [.folder], repeats: true),
    Command(
        name: "plist", usage: "plist FILE|- [--to xml|binary|json]",
        summary: "print a property list (XML by default; - reads standard input)", operands: [.file],
        options: [("--to", .words(["xml", "binary", "json"]))]),
    Command(
        name: "run-provider", usage: "run-provider WIDGET [--bundles DIR]… [--verbose]",
        summary: "run a widget's provider once, outside todayd, with the same limits and sandbox (--verbose: its command line)",
        operands: [.widget], options: [("--bundles", .folder), ("--verbose", nil)]),
    Command(
        name: "completions", usage: "completions bash|zsh|fish",
        summary: "print todayctl's completions for a shell, made from this list of commands",
        operands: [.words(Completions.Shell.allCases.map(\.rawValue))]),
]
