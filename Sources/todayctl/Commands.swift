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
        case "timeline": try await timeline(client, arguments, json: json)
        case "action": try await action(client, arguments, json: json)
        case "bar": try await bar(client, arguments, json: json)
        default: throw Failure.usage("unknown command '\(name)'")
        }
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

func cardValue(_ card: WidgetCard) -> PlistValue {
    .dictionary([
        "id": .string(card.id), "name": .string(card.name), "hasContent": .boolean(card.hasContent),
        "lastResult": .string(card.lastResult), "lastFailure": .string(card.lastFailure),
        "lastUpdated": .unsigned(card.lastUpdated), "snapshot": .dictionary(card.snapshot),
    ])
}

// MARK: Widgets

func list(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.isEmpty else { throw Failure.usage("list takes no arguments") }
    var cards: [WidgetCard] = []
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
        let state = card.lastResult.isEmpty ? "never updated" : card.lastResult + (card.lastFailure.isEmpty ? "" : " (\(card.lastFailure))")
        Out.line([card.id, card.name, card.hasContent ? "content" : "no content", state].joined(separator: "\t"))
    }
}

func show(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count <= 1 else { throw Failure.usage("show takes at most one widget id") }
    let ids = try arguments.isEmpty ? await client.widgetIDs() : arguments
    var cards: [WidgetCard] = []
    for id in ids { cards.append(try await client.card(id)) }
    if json {
        Out.json(.array(cards.map(cardValue)))
        return
    }
    if cards.isEmpty {
        Out.line("no widgets are installed; bundles go in ~/.local/share/todayd/bundles (see `todayctl lint`)")
        return
    }
    var size = winsize()
    let columns = Out.isTerminal && ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 72
    let width = min(columns, 72)
    // As a panel: widgets without content are left out unless asked for by id.
    let shown = arguments.isEmpty ? cards.filter(\.hasContent) : cards
    for (index, card) in shown.enumerated() {
        if index > 0 { Out.line("") }
        Out.line(Out.isTerminal ? card.framed(width: width) : card.plain(width: width))
    }
    let hidden = cards.count - shown.count
    if hidden > 0 { Out.line("\n(\(hidden) widget\(hidden == 1 ? "" : "s") without content hidden; `todayctl show WIDGET` shows one)") }
}

func action(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 2 else { throw Failure.usage("action needs a widget id and an action id") }
    let (id, action) = (arguments[0], arguments[1])
    guard BundleCatalog.isValidBundleID(id) else { throw Failure.usage("'\(id)' is not a widget id") }
    let result = try await Client.attempt {
        try await client.connection.call(
            Today.busName, path: Today.widgetPath(id), interface: Today.widget.name, member: MemberName("PerformAction"),
            [.string(action), .vardict([])], timeout: .seconds(120))
    }.body.first?.string ?? ""
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
        guard BundleCatalog.isValidBundleID(id) else { throw Failure.usage("'\(id)' is not a widget id") }
        let result = try await client.center("PerformUpdate", [.string(id)]).body.first?.string ?? ""
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
            group.addTask { (id, try await client.center("PerformUpdate", [.string(id)]).body.first?.string ?? "") }
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
    try await client.register(as: bundle)
    try await client.center("SetHasContent", [.boolean(flag), .string(arguments[0])])
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
        ? try await client.center("OpenURL", [.string(url), .vardict([])])
        : try await client.center("ResolveURL", [.string(url)])
    let handler = reply.body.first?.string ?? ""
    if json {
        Out.json(.dictionary(["url": .string(url), "handler": .string(handler)]))
    } else {
        Out.line(command == "open" ? "opened in \(handler)" : handler)
    }
}

// MARK: Groups

func defaults(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    let bundle = try takeIdentity(&arguments)
    guard arguments.count >= 2 else { throw Failure.usage("defaults needs a group id and get, set, remove or list") }
    let group = arguments[0]
    guard BundleCatalog.isValidGroupID(group) else { throw Failure.usage("'\(group)' is not a group id (group.…)") }
    guard let bundle else { throw Failure.usage("defaults needs --as BUNDLE: a bundle entitled to \(group)") }
    try await client.register(as: bundle)
    let path = Today.groupPath(group)
    func call(_ member: String, _ values: [Value]) async throws -> Message {
        try await Client.attempt {
            try await client.connection.call(
                Today.busName, path: path, interface: Today.group.name, member: MemberName(rawValue: member) ?? MemberName("Get"), values)
        }
    }
    let verb = arguments[1]
    let operands = Array(arguments.dropFirst(2))
    switch verb {
    case "get":
        guard operands.count == 1 else { throw Failure.usage("defaults GROUP get KEY") }
        let value = try ValueMapping.plist(try await call("Get", [.string(operands[0])]).body.first ?? .string(""))
        if json {
            Out.json(.dictionary(["key": .string(operands[0]), "value": value]))
        } else {
            Out.line(describe(value))
        }
    case "list":
        guard operands.isEmpty else { throw Failure.usage("defaults GROUP list") }
        let value = try ValueMapping.plist(try await call("GetAll", []).body.first ?? .vardict([]))
        if json {
            Out.json(value)
        } else {
            for (key, item) in value.dictionary ?? [:] { Out.line("\(key)\t\(describe(item))") }
        }
    case "remove":
        guard operands.count == 1 else { throw Failure.usage("defaults GROUP remove KEY") }
        _ = try await call("Remove", [.string(operands[0])])
        if json { Out.json(.dictionary(["key": .string(operands[0]), "removed": .boolean(true)])) }
    case "set":
        let types = ["--int", "--real", "--bool", "--date", "--data", "--string"]
        let type = operands.first(where: { types.contains($0) }) ?? "--string"
        let plain = operands.filter { !types.contains($0) }
        guard plain.count == 2, operands.filter({ types.contains($0) }).count <= 1 else {
            throw Failure.usage("defaults GROUP set KEY VALUE [--int|--real|--bool|--date|--data]")
        }
        let value = try typedValue(plain[1], type)
        _ = try await call("Set", [.string(plain[0]), .variant(ValueMapping.dbus(value, typedArrays: false))])
        if json { Out.json(.dictionary(["key": .string(plain[0]), "value": value])) }
    default:
        throw Failure.usage("defaults takes get, set, remove or list, not '\(verb)'")
    }
}

/// A value typed on the command line.
func typedValue(_ text: String, _ type: String) throws -> PlistValue {
    switch type {
    case "--int":
        guard let value = Int64(text) else { throw Failure.usage("'\(text)' is not an integer") }
        return .integer(value)
    case "--real":
        guard let value = Double(text), value.isFinite else { throw Failure.usage("'\(text)' is not a real number") }
        return .real(value)
    case "--bool":
        guard let value = ["true": true, "false": false, "yes": true, "no": false, "1": true, "0": false][text.lowercased()] else {
            throw Failure.usage("'\(text)' is not true or false")
        }
        return .boolean(value)
    case "--date":
        if let seconds = Double(text) { return .date(Date(timeIntervalSince1970: seconds)) }
        guard let date = try? Date(text, strategy: .iso8601) else {
            throw Failure.usage("'\(text)' is not a date: give ISO 8601 (2026-11-29T12:00:00Z) or seconds since the epoch")
        }
        return .date(date)
    case "--data":
        if text.hasPrefix("@") {
            guard let data = FileManager.default.contents(atPath: String(text.dropFirst())) else {
                throw Failure.refused("cannot read \(text.dropFirst())")
            }
            return .data(data)
        }
        guard let data = Data(base64Encoded: text) else { throw Failure.usage("'\(text)' is not base64; give @FILE to read a file") }
        return .data(data)
    default:
        return .string(text)
    }
}

func describe(_ value: PlistValue) -> String {
    switch value {
    case .string(let s): s
    case .data(let d): "<\(d.count) bytes: \(d.prefix(16).map(hex).joined())\(d.count > 16 ? "…" : "")>"
    case .date(let d): d.formatted(.iso8601)
    case .array, .dictionary: JSONOutput.text(value, compact: true)
    default: JSONOutput.text(value, compact: true)
    }
}

// MARK: Watching

func watch(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.isEmpty else { throw Failure.usage("watch takes no arguments") }
    let events = AsyncStream<Message>.makeStream()
    let connection = client.connection
    try await client.subscribeToTodayd([
        MatchRule(interface: .properties, member: MemberName("PropertiesChanged")),
        MatchRule(interface: Today.widget.name, member: MemberName("Updated")),
        MatchRule(interface: .objectManager),
    ]) { events.continuation.yield($0) }
    // Watching starts only with todayd running: without it, GetNameOwner
    // fails and the user is told to start it.
    _ = try await Client.attempt { try await connection.callBus(MemberName("GetNameOwner"), [.string(Today.busName.rawValue)]) }
    _ = try await Client.attempt {
        try await connection.subscribe(
            MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: MemberName("NameOwnerChanged"), arg0: Today.busName.rawValue)
        ) { events.continuation.yield($0) }
    }
    connection.onDisconnect { events.continuation.finish() }
    if !json { Out.line("watching todayd (Ctrl-C to stop)") }
    var seen = Set<String>()
    for await message in events.stream {
        guard seen.insert("\(message.sender ?? "") \(message.serial)").inserted else { continue }
        let path = message.path?.rawValue ?? ""
        let object = path.split(separator: "/").last.flatMap { ObjectPath.unescape(String($0)) } ?? path
        switch message.member {
        case "PropertiesChanged":
            let changed = message.body.count > 1 ? message.body[1].stringDictionary ?? [:] : [:]
            let values = (try? ValueMapping.plist(.vardict(changed.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))) ?? .dictionary([:])
            if json {
                Out.json(.dictionary(["event": .string("changed"), "object": .string(object), "properties": values]), compact: true)
            } else {
                let text = (values.dictionary ?? [:]).map { key, value in
                    switch (key, value) {
                    case ("Snapshot", _): "Snapshot=\(snapshotSummary(value))"
                    // A widget's `t` of 0: never updated, nothing scheduled, no next entry.
                    case (_, .date(let date)) where date.timeIntervalSince1970 == 0: "\(key)=none"
                    default: "\(key)=\(describe(value))"
                    }
                }
                Out.line("\(timestamp()) \(object): " + text.joined(separator: " "))
            }
        case "Updated":
            let result = message.body.first?.string ?? ""
            if json {
                Out.json(.dictionary(["event": .string("updated"), "object": .string(object), "result": .string(result)]), compact: true)
            } else {
                Out.line("\(timestamp()) \(object): updated: \(result)")
            }
        case "NameOwnerChanged":
            let owner = message.body.count > 2 ? message.body[2].string ?? "" : ""
            let event = owner.isEmpty ? "todayd-stopped" : "todayd-started"
            if json {
                Out.json(.dictionary(["event": .string(event)]), compact: true)
            } else {
                Out.line("\(timestamp()) todayd \(owner.isEmpty ? "stopped" : "started")")
            }
        case "InterfacesAdded", "InterfacesRemoved":
            let target = message.body.first?.string ?? ""
            let id = target.split(separator: "/").last.flatMap { ObjectPath.unescape(String($0)) } ?? target
            let event = message.member == "InterfacesAdded" ? "added" : "removed"
            if json {
                Out.json(.dictionary(["event": .string(event), "object": .string(id)]), compact: true)
            } else {
                Out.line("\(timestamp()) \(id): \(event)")
            }
        default: continue
        }
    }
    throw Failure.refused("the connection to the bus was lost")
}

/// A byte as two lowercase hexadecimal digits.
func hex(_ byte: UInt8) -> String { (byte < 16 ? "0" : "") + String(byte, radix: 16) }

/// The local time of day, HH:mm:ss (the C library's local time, which
/// follows TZ and /etc/localtime).
func timestamp() -> String {
    var now = time(nil)
    var parts = tm()
    guard localtime_r(&now, &parts) != nil else { return "--:--:--" }
    return [parts.tm_hour, parts.tm_min, parts.tm_sec].map { ($0 < 10 ? "0" : "") + String($0) }.joined(separator: ":")
}

/// A date in µs since the epoch in local time: `HH:MM:SS` today,
/// `YYYY-MM-DD HH:MM` on another day.
func localTime(_ microseconds: UInt64) -> String {
    var seconds = time_t(clamping: microseconds / 1_000_000)
    var now = time(nil)
    var parts = tm()
    var today = tm()
    guard localtime_r(&seconds, &parts) != nil, localtime_r(&now, &today) != nil else { return "?" }
    func two(_ n: Int32) -> String { (n < 10 ? "0" : "") + String(n) }
    let clock = "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    if parts.tm_year == today.tm_year && parts.tm_yday == today.tm_yday { return clock }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(clock)"
}

// MARK: Timelines

func timeline(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 1 else { throw Failure.usage("timeline needs one widget id") }
    let id = arguments[0]
    let card = try await client.card(id)
    let values = try await client.properties(Today.widgetPath(id))
    let reply = try await Client.attempt {
        try await client.connection.call(Today.busName, path: Today.widgetPath(id), interface: Today.widget.name, member: MemberName("GetTimeline"))
    }
    var entries: [(date: UInt64, snapshot: PlistDictionary, relevance: Double)] = []
    for case .structure(let fields) in reply.body.first?.elements ?? [] where fields.count == 3 {
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
        let title = entry.snapshot["title"]?.string.map { "\"\($0)\"" } ?? "(\(entry.snapshot.count) keys)"
        let relevance = entry.relevance == 0 ? "" : "  relevance \(entry.relevance)"
        Out.line("\(index == 0 ? "▶" : " ") \(localTime(entry.date))  \(title)\(relevance)")
    }
    if entries.isEmpty { Out.line("  (no entries: never updated)") }
    Out.line("policy: \(policy); next reload: \(reload == 0 ? "none" : localTime(reload))")
}

/// A snapshot in a few words, for `watch`.
func snapshotSummary(_ value: PlistValue) -> String {
    guard let d = value.dictionary, !d.isEmpty else { return "{}" }
    if let title = d["title"]?.string { return "\"\(title)\" (\(d.count) keys)" }
    return "(\(d.count) keys)"
}

// MARK: Files

func lint(_ paths: [String], json: Bool) throws {
    guard !paths.isEmpty, !paths.contains(where: { $0.hasPrefix("-") }) else {
        throw Failure.usage("lint needs .app bundles or folders of them")
    }
    let (checked, problems) = BundleCatalog.lint(paths)
    if json {
        Out.json(.dictionary([
            "checked": .integer(Int64(checked)),
            "problems": .array(problems.map { .dictionary(["file": .string($0.file), "key": .string($0.key), "message": .string($0.message)]) }),
        ]))
    } else {
        for problem in problems { Out.line(problem.description) }
        if problems.isEmpty { Out.line("\(checked) bundle\(checked == 1 ? "" : "s") checked: no problems") }
    }
    if !problems.isEmpty { throw Failure(message: "\(problems.count) problem\(problems.count == 1 ? "" : "s") found", status: 1) }
}

func plist(_ arguments: [String], json: Bool) throws {
    guard arguments.count == 1 || (arguments.count == 3 && arguments[1] == "--to") else {
        throw Failure.usage("plist FILE|- [--to xml|binary|json]")
    }
    let format = json ? .json : arguments.count == 3 ? PlistFormat(rawValue: arguments[2]) : .xml
    guard let format else { throw Failure.usage("--to takes xml, binary or json, not '\(arguments[2])'") }
    let name = arguments[0] == "-" ? "standard input" : arguments[0]
    do {
        let value = arguments[0] == "-" ? try Plist.read(try Plist.readStandardInput()) : try Plist.read(contentsOf: arguments[0])
        // JSON as --json prints it (docs/todayctl.md): data as base64 and
        // dates as ISO 8601 strings, non-finite reals as null.
        if format == .json {
            Out.line(Plist.displayJSON(value))
        } else {
            Out.bytes(try Plist.write(value, format: format))
        }
    } catch {
        throw Failure.refused("\(name): \(error)")
    }
}

// MARK: New projects

/// The value after `flag`, taken out of the arguments.
func take(_ flag: String, from arguments: inout [String]) throws -> String? {
    guard let index = arguments.firstIndex(of: flag) else { return nil }
    guard index + 1 < arguments.count else { throw Failure.usage("\(flag) needs a value") }
    let value = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
    return value
}

/// The checkout this todayctl was built in (`<checkout>/.build/<config>/todayctl`), if any.
func checkoutOfThisTodayctl() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let exe = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    var folder = exe
    for _ in 0..<4 {
        folder = URL(fileURLWithPath: folder).deletingLastPathComponent().path
        if FileManager.default.fileExists(atPath: folder + "/Sources/TodayKit") && FileManager.default.fileExists(atPath: folder + "/Package.swift") {
            return folder
        }
    }
    return nil
}

func newProject(_ arguments: [String], json: Bool) throws {
    var arguments = arguments
    let usage = "new app NAME --id ID [--group GROUP] [--scheme SCHEME] [--widget NAME] [--todaykit PATH|URL] [DIR] | new widget NAME --app DIR"
    guard let kind = arguments.first, ["app", "widget"].contains(kind), arguments.count >= 2 else { throw Failure.usage(usage) }
    arguments.removeFirst()
    let name = arguments.removeFirst()
    do {
        if kind == "app" {
            guard let id = try take("--id", from: &arguments) else { throw Failure.usage("new app needs --id, the app's bundle id (org.example.\(name))") }
            let group = try take("--group", from: &arguments)
            let scheme = try take("--scheme", from: &arguments)
            let widget = try take("--widget", from: &arguments) ?? "Today"
            guard let todayKit = try take("--todaykit", from: &arguments) ?? checkoutOfThisTodayctl() else {
                throw Failure.usage("where is TodayKit? pass --todaykit with the path of a todayd checkout, or its git URL")
            }
            guard arguments.count <= 1, !(arguments.first?.hasPrefix("-") ?? false) else { throw Failure.usage(usage) }
            let folder = URL(fileURLWithPath: arguments.first ?? name).standardizedFileURL.path
            guard !FileManager.default.fileExists(atPath: folder) || (FileSystem.entries(folder).isEmpty) else {
                throw Failure.refused("\(folder) exists and is not empty; give a new folder")
            }
            let template = try ProjectTemplate(name: name, id: id, group: group, scheme: scheme, todayKit: todayKit)
            try write(try template.appFiles(widget: widget), into: folder)
            if json {
                Out.json(.dictionary(["created": .string(folder), "app": .string(id), "widget": .string(id + "." + widget)]))
            } else {
                Out.line("created \(folder): the app \(id) and its widget \(id).\(widget)")
                Out.line("next: cd \(folder) && ./build-bundle && todayctl lint \(name).app && todayctl install \(name).app")
            }
        } else {
            guard let folder = try take("--app", from: &arguments).map({ URL(fileURLWithPath: $0).standardizedFileURL.path }), arguments.isEmpty else {
                throw Failure.usage(usage)
            }
            // What the app is, from its package and manifests.
            let bundles = FileSystem.entries(folder + "/Bundle").filter { $0.hasSuffix(".app") }
            guard bundles.count == 1 else { throw Failure.refused("\(folder)/Bundle holds no one .app: is \(folder) a project `todayctl new app` made?") }
            let app = folder + "/Bundle/" + bundles[0]
            let info = try Plist.read(contentsOf: app + "/Info.plist")
            let package = try String(contentsOfFile: folder + "/Package.swift", encoding: .utf8)
            guard let id = info["CFBundleIdentifier"]?.string, let appName = info["CFBundleName"]?.string,
                let dependency = package.split(separator: "\n").first(where: { $0.contains(".package(") })
            else { throw Failure.refused("\(folder) is not a project `todayctl new app` made (no CFBundleName or TodayKit dependency)") }
            let todayKit = dependency.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
            let groups = try Plist.read(contentsOf: app + "/Entitlements.plist")["com.apple.security.application-groups"]?.array?.compactMap(\.string) ?? []
            let scheme = info["CFBundleURLTypes"]?.array?.first?["CFBundleURLSchemes"]?.array?.first?.string
            let template = try ProjectTemplate(name: appName, id: id, group: groups.first, scheme: scheme, todayKit: todayKit)
            guard !FileManager.default.fileExists(atPath: app + "/PlugIns/\(name).appex") else { throw Failure.refused("the app already has a widget \(name)") }
            let updated = try template.addingTarget(name, to: package)
            try write(try template.widgetFiles(name), into: folder)
            try Data(updated.utf8).write(to: URL(fileURLWithPath: folder + "/Package.swift"))
            if json { Out.json(.dictionary(["widget": .string(id + "." + name)])) } else { Out.line("added the widget \(id).\(name) to \(folder)") }
        }
    } catch let failure as ProjectTemplate.Failure {
        throw Failure.usage(failure.description)
    }
}

func write(_ files: [(path: String, content: String, executable: Bool)], into folder: String) throws {
    for file in files {
        let path = folder + "/" + file.path
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try Data(file.content.utf8).write(to: URL(fileURLWithPath: path))
        if file.executable { chmod(path, 0o755) }
    }
}

// MARK: Installing

func installOrUninstall(_ name: String, _ arguments: [String], json: Bool) throws {
    var arguments = arguments
    var folder: String?
    if let index = arguments.firstIndex(of: "--dir") {
        guard index + 1 < arguments.count else { throw Failure.usage("--dir needs a bundle folder") }
        folder = URL(fileURLWithPath: arguments[index + 1]).standardizedFileURL.path
        arguments.removeSubrange(index...index + 1)
    }
    guard arguments.count == 1, !arguments[0].hasPrefix("-") else {
        throw Failure.usage(name == "install" ? "install PATH.app [--dir DIR]" : "uninstall BUNDLE_ID [--dir DIR]")
    }
    let directories = Directories(environment: ProcessInfo.processInfo.environment, extraBundleFolders: folder.map { [$0] } ?? [])
    let installer = BundleInstaller(directories: directories, folder: folder)
    do {
        if name == "install" {
            let path = try installer.install(URL(fileURLWithPath: arguments[0]).standardizedFileURL.path)
            if json { Out.json(.dictionary(["installed": .string(path)])) } else { Out.line("installed \(path)") }
        } else {
            let path = try installer.uninstall(arguments[0])
            if json { Out.json(.dictionary(["removed": .string(path)])) } else { Out.line("removed \(path)") }
        }
    } catch let failure as BundleInstaller.Failure {
        throw Failure.refused(failure.description)
    }
}

// MARK: Providers

func runProvider(_ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    var folders: [String] = []
    let verbose = arguments.contains("--verbose")
    arguments.removeAll { $0 == "--verbose" }
    while let index = arguments.firstIndex(of: "--bundles") {
        guard index + 1 < arguments.count else { throw Failure.usage("--bundles needs a folder") }
        folders.append(URL(fileURLWithPath: arguments[index + 1]).standardizedFileURL.path)
        arguments.removeSubrange(index...index + 1)
    }
    guard arguments.count == 1 else { throw Failure.usage("run-provider needs one widget id") }
    let id = arguments[0]
    let environment = ProcessInfo.processInfo.environment
    let directories = Directories(environment: environment, extraBundleFolders: folders)
    let catalog = BundleCatalog.scan(directories.bundleFolders)
    guard let manifest = catalog.widgets.first(where: { $0.bundleIdentifier == id }) else {
        let problems = catalog.problems.filter { $0.file.contains(id) || $0.message.contains(id) }
        let hint = problems.isEmpty ? "" : "; \(problems.map(\.description).joined(separator: "; "))"
        throw Failure.refused("no widget '\(id)' in \(directories.bundleFolders.joined(separator: ", "))\(hint)")
    }
    let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    let confinement = ProviderRun.Confinement(support: SandboxSupport.probe(path: path))
    if verbose, case .unavailable(let reason) = confinement.support { Out.error("\(id): runs unconfined: \(reason)\n") }
    let outcome = await ProviderRun.once(manifest, directories: directories, environment: environment, confinement: confinement, verbose: verbose) { line in
        Out.error("\(id): \(line)\n")
    }
    var answer: PlistDictionary = ["result": .string(outcome.result.rawValue)]
    if case .failed(let reason) = outcome { answer["failure"] = .string(reason.description) }
    if case .newData(let timeline) = outcome {
        for (key, value) in timeline.plist { answer[key] = value }
    }
    if json {
        Out.json(.dictionary(answer))
    } else {
        Out.line("result: \(outcome.result.rawValue)\(outcome.failure.isEmpty ? "" : " (\(outcome.failure))")")
        if case .newData(let timeline) = outcome {
            // A snapshot alone prints as itself; a timeline with its policy.
            let plist = timeline.plist
            Out.line(JSONOutput.text(plist["timeline"] == nil ? plist["snapshot"] ?? .dictionary([:]) : .dictionary(plist)))
        }
    }
    if outcome.result == .failed { throw Failure(message: "the provider failed: \(outcome.failure)", status: 1) }
}
