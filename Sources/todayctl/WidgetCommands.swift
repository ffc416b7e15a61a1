import DBus
import FoundationEssentials
import Posix
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

// MARK: Widgets

func list(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.isEmpty else { throw Failure.usage("list takes no arguments") }
    var cards: [TodayCard] = []
    for id in try await client.widgetIDs() { cards.append(try await client.card(id)) }
    if json {
        Out.json(.array(cards.map { card in
            var value = cardValue(card).dictionary ?? [:]
            value["snapshot"] = nil
            return .dictionary(value)
        }))
        return
    }
    for card in cards {
        let state = card.lastResult.map { $0.rawValue + (card.lastFailure.isEmpty ? "" : " (\(card.lastFailure))") } ?? "never updated"
        Out.line([card.id, card.name, card.hasContent ? "content" : "no content", state].joined(separator: "\t"))
    }
}

func show(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count <= 1 else { throw Failure.usage("show takes at most one widget id") }
    // As the view: the layout, in its order.
    let ids = try arguments.isEmpty ? await client.layoutIDs() : arguments
    var cards: [TodayCard] = []
    for id in ids { cards.append(try await client.card(id)) }
    if json {
        Out.json(.array(cards.map(cardValue)))
        return
    }
    if cards.isEmpty {
        Out.line("no widgets are installed; bundles go in ~/.local/share/todayd/bundles (see `todayctl lint`)")
        return
    }
    let columns = (Out.isTerminal ? FileDescriptor.standardOutput.terminalColumns : nil) ?? 72
    let width = min(columns, 72)
    // As a panel: widgets without content are left out unless asked for by id.
    let shown = arguments.isEmpty ? cards.filter(\.hasContent) : cards
    for (index, card) in shown.enumerated() {
        if index > 0 { Out.line("") }
        Out.line(Out.isTerminal ? card.framed(width: width) : card.plain(width: width))
    }
    // Widgets without content are not in the layout: counted, not shown.
    var hidden = cards.count - shown.count
    if arguments.isEmpty {
        for id in try await client.widgetIDs() where !(try await client.card(id).hasContent) { hidden += 1 }
    }
    if hidden > 0 { Out.line("\n(\(hidden) widget\(hidden == 1 ? "" : "s") without content hidden; `todayctl show WIDGET` shows one)") }
}

func action(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 2 else { throw Failure.usage("action needs a widget id and an action id") }
    let (id, action) = (arguments[0], arguments[1])
    let widget = try Client.instanceID(id)
    let result = try await client.widget(widget, Today.Widget.performAction, action, VariantDictionary([])).value(String.self, answering: "PerformAction")
    let card = try await client.card(id)
    if json {
        Out.json(.dictionary(["id": .string(id), "action": .string(action), "result": .string(result), "failure": .string(card.lastFailure)]))
    } else {
        Out.line(result == "failed" ? "\(id) \(action): failed: \(card.lastFailure)" : "\(id) \(action): \(result)")
    }
    if result == "failed" { throw Failure(message: "the action \(action) of \(id) failed: \(card.lastFailure)", status: 1) }
}

func update(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 1 else { throw Failure.usage("update needs one widget id, or --all") }
    if arguments[0] != "--all" {
        let id = arguments[0]
        let result = try await client.widget(try Client.instanceID(id), Today.Widget.performUpdate).value(String.self, answering: "PerformUpdate")
        let card = try await client.card(id)
        if json {
            Out.json(.dictionary(["id": .string(id), "result": .string(result), "failure": .string(card.lastFailure)]))
        } else {
            Out.line(result == "failed" ? "\(id): failed: \(card.lastFailure)" : "\(id): \(result)")
        }
        if result == "failed" { throw Failure(message: "the update of \(id) failed: \(card.lastFailure)", status: 1) }
        return
    }
    // Each widget with content, concurrently, reported as it finishes.
    var ids: [String] = []
    for id in try await client.widgetIDs() where try await client.card(id).hasContent { ids.append(id) }
    let total = ids.count
    var results: [(String, String)] = []
    try await withThrowingTaskGroup(of: (String, String).self) { group in
        for id in ids {
            group.addTask {
                (id, try await client.center(Today.Center.performUpdate, try Client.widgetID(id)).value(String.self, answering: "PerformUpdate"))
            }
        }
        for try await (id, result) in group {
            results.append((id, result))
            if !json { Out.line("[\(results.count)/\(total)] \(id): \(result)") }
        }
    }
    if json { Out.json(.dictionary(PlistDictionary(results.sorted { $0.0 < $1.0 }.map { ($0.0, PlistValue.string($0.1)) }))) }
    if total == 0 && !json { Out.line("no widget has content to update") }
    let failed = results.filter { $0.1 == "failed" }.count
    if failed > 0 { throw Failure(message: "\(failed) of \(total) updates failed; `todayctl list` shows why", status: 1) }
}

func hasContent(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    let bundle = try takeIdentity(&arguments)
    guard arguments.count == 2, let flag = ["true": true, "false": false, "yes": true, "no": false][arguments[1]] else {
        throw Failure.usage("has-content needs a widget id and true or false")
    }
    guard let bundle else { throw Failure.usage("has-content needs --as BUNDLE: the widget itself or its container app") }
    let widget = try Client.widgetID(arguments[0])
    try await client.register(as: bundle)
    try await client.center(Today.Center.setHasContent, flag, widget)
    if json {
        Out.json(.dictionary(["id": .string(arguments[0]), "hasContent": .boolean(flag)]))
    } else {
        Out.line("\(arguments[0]): \(flag ? "has content" : "has no content")")
    }
}

func openOrResolve(_ client: Client, _ command: String, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 1 else { throw Failure.usage("\(command) needs one URL") }
    let url = arguments[0]
    let reply = command == "open"
        ? try await client.center(Today.Center.openURL, url, VariantDictionary([]))
        : try await client.center(Today.Center.resolveURL, url)
    let handler = try reply.value(String.self, answering: command == "open" ? "OpenURL" : "ResolveURL")
    if json {
        Out.json(.dictionary(["url": .string(url), "handler": .string(handler)]))
    } else {
        Out.line(command == "open" ? "opened in \(handler)" : handler)
    }
}

// MARK: Timelines

func timeline(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 1 else { throw Failure.usage("timeline needs one widget id") }
    let id = arguments[0]
    let card = try await client.card(id)
    let instance = try Client.instanceID(id)
    let values = try await client.properties(instance.path)
    let reply = try await client.widget(instance, Today.Widget.getTimeline)
    var entries: [(date: UInt64, snapshot: PlistDictionary, relevance: Double)] = []
    let timelineType = DBusType.array(.structure([.uint64, .dictionary(key: .string, value: .variant), .double]))
    for case .structure(let fields) in try reply.value(of: timelineType, answering: "GetTimeline").elements ?? [] where fields.count == 3 {
        let snapshot = (try? ValueMapping.plist(fields[1]).dictionary) ?? nil
        entries.append((fields[0].uint64 ?? 0, snapshot ?? [:], fields[2].double ?? 0))
    }
    let policy = values["ReloadPolicy"]?.string ?? ""
    let reload = values["NextScheduledUpdate"]?.uint64 ?? 0
    if json {
        Out.json(.dictionary([
            "id": .string(id), "policy": .string(policy), "nextReload": .unsigned(reload),
            "entries": .array(entries.map { .dictionary(["date": .unsigned($0.date), "relevance": .real($0.relevance), "snapshot": .dictionary($0.snapshot)]) }),
        ]))
        return
    }
    Out.line("\(card.name) (\(id))")
    for (index, entry) in entries.enumerated() {
        let title = Snapshot(entry.snapshot).title.map { "\"\($0)\"" } ?? "(\(entry.snapshot.count) keys)"
        let relevance = entry.relevance == 0 ? "" : "  relevance \(entry.relevance)"
        Out.line("\(index == 0 ? "▶" : " ") \(localTime(entry.date))  \(title)\(relevance)")
    }
    if entries.isEmpty { Out.line("  (no entries: never updated)") }
    Out.line("policy: \(policy); next reload: \(reload == 0 ? "none" : localTime(reload))")
}

/// A snapshot in a few words, for `watch`.
func snapshotSummary(_ value: PlistValue) -> String {
    guard let d = value.dictionary, !d.isEmpty else { return "{}" }
    if let title = Snapshot(d).title { return "\"\(title)\" (\(d.count) keys)" }
    return "(\(d.count) keys)"
}
