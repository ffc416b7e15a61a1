import DBus
import FoundationEssentials
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

func run(_ name: String, _ arguments: [String], address: String?, json: Bool) async throws {
    switch name {
    case "lint": try lint(arguments, json: json)
    case "plist": try plist(arguments, json: json)
    case "run-provider": try await runProvider(arguments, json: json)
    case "install", "uninstall": try installOrUninstall(name, arguments, json: json)
    case "new": try newProject(arguments, json: json)
    case "completions": try printCompletions(arguments)
    default:
        let client = try Client(address: address)
        defer { client.close() }
        switch name {
        case "list": try await list(client, arguments, json: json)
        case "show": try await show(client, arguments, json: json)
        case "update": try await update(client, arguments, json: json)
        case "has-content": try await hasContent(client, arguments, json: json)
        case "open", "resolve": try await openOrResolve(client, name, arguments, json: json)
        case "defaults": try await defaults(client, arguments, json: json)
        case "watch": try await watch(client, arguments, json: json)
        case "reload": try await reload(client, arguments, json: json)
        case "timeline": try await timeline(client, arguments, json: json)
        case "action": try await action(client, arguments, json: json)
        case "bar": try await bar(client, arguments, json: json)
        case "notify": try await notify(client, arguments, json: json)
        case "notifications": try await notifications(client, arguments, json: json)
        case "layout": try await layout(client, arguments, json: json)
        case "add": try await add(client, arguments, json: json)
        case "remove": try await remove(client, arguments, json: json)
        case "move": try await move(client, arguments, json: json)
        case "configure": try await configure(client, arguments, json: json)
        default: throw Failure.usage("unknown command '\(name)'")
        }
    }
}

/// Reload(): todayd rescans its bundle folders and reads the user's
/// notifications.plist and layout.plist again, as at SIGHUP.
func reload(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.isEmpty else { throw Failure.usage("reload takes no operands") }
    try await client.center(Today.Center.reload)
    let widgets = try await client.widgetIDs().count
    // A todayd started with --no-notifications has no settings to read.
    let server = try await client.centerProperty(Today.Center.notificationServer.name)?.string
    let files = server == "off" ? "layout.plist" : "notifications.plist and layout.plist"
    if json {
        Out.json(.dictionary(["reloaded": .boolean(true), "widgets": .unsigned(UInt64(widgets))]))
    } else {
        Out.line("rescanned the bundle folders (\(widgets) widget\(widgets == 1 ? "" : "s")); read \(files) again")
    }
}

/// Takes `--as BUNDLE` out of the arguments.
func takeIdentity(_ arguments: inout [String]) throws -> String? {
    guard let index = arguments.firstIndex(of: "--as") else { return nil }
    guard index + 1 < arguments.count else { throw Failure.usage("--as needs a bundle id") }
    let bundle = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
    return bundle
}

func cardValue(_ card: TodayCard) -> PlistValue {
    .dictionary([
        "id": .string(card.id), "name": .string(card.name), "hasContent": .boolean(card.hasContent),
        "lastResult": .string(card.lastResult?.rawValue ?? ""), "lastFailure": .string(card.lastFailure),
        "lastUpdated": .unsigned(card.lastUpdated), "snapshot": .dictionary(card.snapshot.dictionary),
    ])
}
