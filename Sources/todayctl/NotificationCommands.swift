import DBus
import FoundationEssentials
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

// MARK: todayctl notify

/// `todayctl notify SUMMARY [BODY] [options]`: notify-send's job (SPEC
/// section 15), through `org.freedesktop.Notifications`, so it reaches
/// whichever server has the name. Prints the id; with `--wait`, what became
/// of it instead: the chosen action's key, or why it closed.
func notify(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var request = try NotifyRequest(arguments)
    let connection = client.connection
    // Every signal heard is kept in the stream until the id is known: an
    // action chosen at once is not missed.
    let heard = AsyncStream<(UInt32, NotifyOutcome)>.makeStream()
    if request.wait {
        let rules = [
            Notifications.Freedesktop.actionInvoked.name, Notifications.Freedesktop.notificationClosed.name,
            Notifications.Freedesktop.notificationReplied.name,
        ].map { MatchRule(interface: Notifications.freedesktop.name, member: $0) }
        try await client.subscribe(rules, from: Notifications.freedesktopName) { message in
            if let outcome = NotifyOutcome.heard(message) { heard.continuation.yield(outcome) }
        }
        connection.onDisconnect { heard.continuation.finish() }
    }
    request.hints.sort { $0.0 < $1.0 }
    let reply = try await Client.attempt {
        try await connection.call(
            Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name,
            Notifications.Freedesktop.notify, request.appName, request.replaces, request.icon, request.summary, request.body,
            request.actions.flatMap { [$0.key, $0.label] }, VariantDictionary(request.hints), request.timeout)
    }
    guard let given = try? reply.value(UInt32.self) else { throw Failure.refused("the notification server's answer to Notify was not an id") }
    guard request.wait else {
        if json { Out.json(.dictionary(["id": .unsigned(UInt64(given))])) } else { Out.line("\(given)") }
        return
    }
    for await (about, outcome) in heard.stream where about == given {
        if json {
            var result: PlistDictionary = ["id": .unsigned(UInt64(given))]
            switch outcome {
            case .action(let key): result["action"] = .string(key)
            case .replied(let text):
                result["action"] = .string("inline-reply")
                result["reply"] = .string(text)
            case .closed(let reason): result["closed"] = .string(reason)
            }
            Out.json(.dictionary(result))
        } else {
            switch outcome {
            case .action(let key): Out.line(key)
            case .replied(let text): Out.line("inline-reply\t\(text)")
            case .closed(let reason): Out.line(reason)
            }
        }
        return
    }
    throw Failure.refused("the connection to the bus was lost while waiting")
}

/// What `--wait` reports: the first of an action, a reply, or the closing.
enum NotifyOutcome {
    case action(String)
    case replied(String)
    /// `expired`, `dismissed`, `closed` (by its sender) or `other`.
    case closed(String)

    /// The notification a signal is about, and what it says; nil for
    /// another signal.
    static func heard(_ message: Message) -> (UInt32, NotifyOutcome)? {
        typealias F = Notifications.Freedesktop
        switch message.member {
        case F.actionInvoked.name.rawValue:
            guard let (id, key) = try? message.values(UInt32.self, String.self) else { return nil }
            return (id, .action(key))
        case F.notificationReplied.name.rawValue:
            guard let (id, text) = try? message.values(UInt32.self, String.self) else { return nil }
            return (id, .replied(text))
        case F.notificationClosed.name.rawValue:
            guard let (id, code) = try? message.values(UInt32.self, UInt32.self) else { return nil }
            return (id, .closed(reason(code)))
        default: return nil
        }
    }

    static func reason(_ code: UInt32) -> String {
        switch code {
        case 1: "expired"
        case 2: "dismissed"
        case 3: "closed"
        default: "other"
        }
    }
}

/// `todayctl notify`'s command line, read and checked before anything is
/// sent.
struct NotifyRequest {
    var summary = ""
    var body = ""
    var appName = "todayctl"
    var icon = ""
    var actions: [(key: String, label: String)] = []
    var hints: [(String, Value)] = []
    var replaces: UInt32 = 0
    /// −1: the server's default for the urgency.
    var timeout: Int32 = -1
    var wait = false

    init(_ arguments: [String]) throws {
        var operands: [String] = []
        var iterator = arguments.makeIterator()
        func value(_ option: String) throws -> String {
            guard let value = iterator.next() else { throw Failure.usage("\(option) needs a value") }
            return value
        }
        func setHint(_ name: String, _ value: Value) {
            hints.removeAll { $0.0 == name }
            hints.append((name, value))
        }
        while let argument = iterator.next() {
            switch argument {
            case "--app": appName = try value(argument)
            case "--icon": icon = try value(argument)
            case "--urgency":
                let text = try value(argument)
                guard let urgency = TodayNotification.Urgency(name: text) else {
                    throw Failure.usage("--urgency takes low, normal or critical, not '\(text)'")
                }
                setHint("urgency", .byte(urgency.rawValue))
            case "--action":
                let text = try value(argument)
                guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                    throw Failure.usage("--action takes KEY=LABEL (for instance --action reply=Reply), not '\(text)'")
                }
                actions.append((String(text[..<equals]), String(text[text.index(after: equals)...])))
            case "--hint":
                let (name, hint) = try Self.hint(try value(argument))
                setHint(name, hint)
            case "--replace":
                let text = try value(argument)
                guard let id = UInt32(text), id > 0 else { throw Failure.usage("--replace takes a notification id (a number above 0), not '\(text)'") }
                replaces = id
            case "--timeout":
                let text = try value(argument)
                guard let milliseconds = Int32(text), milliseconds >= -1 else {
                    throw Failure.usage("--timeout takes milliseconds (0: never expires; -1: the server's default), not '\(text)'")
                }
                timeout = milliseconds
            case "--image":
                let path = try value(argument)
                let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
                guard FileManager.default.fileExists(atPath: absolute) else { throw Failure.usage("--image: no file at '\(path)'") }
                setHint("image-path", .string(absolute))
            case "--progress":
                let text = try value(argument)
                guard let percent = Int32(text), (0...100).contains(percent) else {
                    throw Failure.usage("--progress takes a percentage from 0 to 100, not '\(text)'")
                }
                setHint("value", .int32(percent))
            case "--wait": wait = true
            case "--": operands += Array(IteratorSequence(iterator))
            default:
                if argument.hasPrefix("--") { throw Failure.usage("unknown option '\(argument)' for notify") }
                operands.append(argument)
            }
        }
        guard let summary = operands.first, !summary.isEmpty else { throw Failure.usage("notify needs a summary") }
        guard operands.count <= 2 else { throw Failure.usage("notify takes a summary and a body; put words with spaces in quotes") }
        self.summary = summary
        body = operands.count > 1 ? operands[1] : ""
    }

    /// The types `--hint NAME=TYPE:VALUE` takes, as D-Bus types.
    static let hintTypes = ["string", "int", "uint", "double", "byte", "boolean"]

    /// A hint from `NAME=TYPE:VALUE`.
    static func hint(_ text: String) throws -> (String, Value) {
        let types = hintTypes.joined(separator: ", ")
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex,
            let colon = text[equals...].firstIndex(of: ":")
        else { throw Failure.usage("--hint takes NAME=TYPE:VALUE (TYPE one of \(types)), as in --hint category=string:email; not '\(text)'") }
        let name = String(text[..<equals])
        let type = String(text[text.index(after: equals)..<colon])
        let raw = String(text[text.index(after: colon)...])
        let value: Value? =
            switch type {
            case "string": .string(raw)
            case "int": Int32(raw).map(Value.int32)
            case "uint": UInt32(raw).map(Value.uint32)
            case "double": Double(raw).flatMap { $0.isFinite ? Value.double($0) : nil }
            case "byte": UInt8(raw).map(Value.byte)
            case "boolean": ["true": true, "false": false, "1": true, "0": false][raw].map(Value.boolean)
            default: nil
            }
        guard hintTypes.contains(type) else { throw Failure.usage("--hint \(name): the type '\(type)' is not one of \(types)") }
        guard let value else { throw Failure.usage("--hint \(name): '\(raw)' is not \(type == "int" ? "an" : "a") \(type)") }
        return (name, value)
    }
}

// MARK: todayctl notifications

/// The id of the newest open notification (the banner most recently
/// shown), for `dismiss` and `invoke` without one.
private func newestOpen(_ center: NotificationCenterClient, for verb: String) async throws -> UInt32 {
    guard let newest = try await center.list().first(where: \.isOpen) else {
        throw Failure.refused("no open notification to \(verb); `todayctl notifications list` shows the list, and `\(verb) ID` acts on one of it")
    }
    return newest.id
}

/// `todayctl notifications [list | dismiss [ID] | clear [APP] | invoke [ID
/// [KEY]] | reply ID TEXT | dnd [on [for DURATION | until HH:MM] | off |
/// toggle | schedule FROM TO | schedule none] | policy [APP [KEY=VALUE… |
/// reset]] | watch]` (SPEC section 15),
/// on todayd's own Notifications interface.
func notifications(_ client: Client, _ arguments: [String], json: Bool) async throws {
    let center = NotificationCenterClient(client)
    let verb = arguments.first ?? "list"
    let operands = Array(arguments.dropFirst())
    func id(_ text: String?) throws -> UInt32 {
        guard let text, let id = UInt32(text), id > 0 else {
            throw Failure.usage("'\(text ?? "")' is not a notification id; `todayctl notifications list` shows them")
        }
        return id
    }
    /// The notification `given` names, else the newest open one.
    func target(_ given: String?) async throws -> UInt32 {
        if let given { return try id(given) }
        return try await newestOpen(center, for: verb)
    }
    func expect(_ count: ClosedRange<Int>) throws {
        guard count.contains(operands.count) else { throw Failure.usage("notifications \(verb): wrong number of arguments") }
    }
    typealias C = Notifications.Center
    switch verb {
    case "list":
        try expect(0...0)
        let entries = try await center.list()
        if json {
            Out.json(.array(entries.map(\.plist)))
        } else if entries.isEmpty {
            Out.line("no notifications")
        } else {
            for entry in entries { Out.line(NotificationLine.text(entry)) }
        }
    case "dismiss":
        // Without an id, the newest open one: a key binding's
        // `makoctl dismiss` or `dunstctl close`.
        try expect(0...1)
        try await center.call(Notifications.Center.dismiss, try await target(operands.first))
    case "clear":
        try expect(0...1)
        try await center.call(Notifications.Center.dismissAll, operands.first ?? "")
    case "invoke":
        // Without a key, `default`; without an id either, on the newest
        // open one: `makoctl invoke`, `dunstctl action`.
        try expect(0...2)
        var platform: [(String, Value)] = []
        if let token = ProcessInfo.processInfo.environment["XDG_ACTIVATION_TOKEN"], !token.isEmpty {
            platform.append(("activation-token", .string(token)))
        }
        try await center.call(
            Notifications.Center.invokeAction, try await target(operands.first), operands.count > 1 ? operands[1] : "default", VariantDictionary(platform))
    case "reply":
        try expect(2...2)
        try await center.call(Notifications.Center.reply, try id(operands[0]), operands[1])
    case "dnd": try await doNotDisturb(center, operands, json: json)
    case "policy": try await policy(center, operands, json: json)
    case "position":
        // Where the banners show.
        try expect(0...1)
        try await center.setting(
            C.bannerPosition, operands.first, json: json, key: "position",
            parse: { BannerPosition(rawValue: $0) != nil ? .string($0) : nil },
            refusal: "is not a place for the banners: write \(BannerPosition.choices)",
            show: { value in let position = value?.string ?? BannerPosition.topRight.rawValue; return (position, .string(position)) })
    case "output":
        // Which output the banners show on.
        try expect(0...1)
        try await center.setting(
            C.bannerOutput, operands.first, json: json, key: "output", parse: { .string($0 == "default" ? "" : $0) }, refusal: "",
            show: { value in let name = value?.string ?? ""; return (name.isEmpty ? "default" : name, .string(name)) })
    case "at-once":
        // How many banners show at once.
        try expect(0...1)
        try await center.setting(
            C.bannerLimit, operands.first, json: json, key: "at-once",
            parse: { text in UInt32(text).flatMap { (1...3).contains($0) ? .uint32($0) : nil } },
            refusal: "is not how many banners show at once: write 1, 2 or 3", show: NotificationCenterClient.number)
    case "limit":
        // How many the list keeps.
        try expect(0...1)
        try await center.setting(
            C.listLimit, operands.first, json: json, key: "limit",
            parse: { text in UInt32(text).flatMap { (1...10_000).contains($0) ? .uint32($0) : nil } },
            refusal: "is not how many the list keeps: write a number from 1 to 10000", show: NotificationCenterClient.number)
    case "idle":
        // After how long without input the banners wait for the user.
        try expect(0...1)
        try await center.setting(
            C.idleThreshold, operands.first, json: json, key: "idle-threshold", parse: { DoNotDisturbText.idleThreshold($0).map(Value.uint32) },
            refusal: "is not a time without input: write seconds (300), minutes (5m) or never",
            show: { value in let seconds = value?.uint64 ?? 0; return (seconds == 0 ? "never" : "\(seconds)", .unsigned(seconds)) })
    case "watch":
        try expect(0...0)
        try await watchNotifications(client, json: json)
    default:
        throw Failure.usage("notifications takes list, dismiss, clear, invoke, reply, dnd, policy, position, output, at-once, idle, limit or watch, not '\(verb)'")
    }
}

/// Do Not Disturb: shown, switched, or its daily schedule set.
private func doNotDisturb(_ center: NotificationCenterClient, _ operands: [String], json: Bool) async throws {
    typealias C = Notifications.Center
    switch operands.first {
    case nil:
        let on = try await center.property(C.doNotDisturb)?.bool ?? false
        let until = on ? try await center.property(C.doNotDisturbUntil)?.uint64 ?? 0 : 0
        let schedule = try await center.property(C.doNotDisturbSchedule)
        let (from, to) = DoNotDisturbText.schedule(schedule)
        if json {
            var state: PlistDictionary = ["on": .boolean(on), "from": .string(from), "to": .string(to)]
            if until != 0 { state["until"] = .date(Date(timeIntervalSince1970: Double(until / 1_000_000))) }
            Out.json(.dictionary(state))
        } else {
            Out.line((on ? "on" : "off") + (until == 0 ? "" : " until \(localMinute(until))") + (from.isEmpty ? "" : " (scheduled daily from \(from) to \(to))"))
        }
    case "on" where operands.count == 3:
        // On for a while, or until a time of day (the next one to come).
        let now = nowMicroseconds() / 1_000_000
        let end: UInt64
        switch operands[1] {
        case "for":
            guard let seconds = DoNotDisturbText.duration(operands[2]) else {
                throw Failure.usage("'\(operands[2])' is not a length of time: write minutes or hours, such as 45m, 2h or 1h30m")
            }
            end = wholeMinute(seconds, after: now)
        case "until":
            guard DoNotDisturbText.isTimeOfDay(operands[2]), let next = DoNotDisturbText.next(operands[2], after: now) else {
                throw Failure.usage("'\(operands[2])' is not a time of day: write HH:MM, from 00:00 to 23:59")
            }
            end = next
        default:
            throw Failure.usage("notifications dnd on takes for DURATION or until HH:MM, not '\(operands[1])'")
        }
        try await center.set(C.doNotDisturbUntil, .uint64(end * 1_000_000))
        if json { Out.json(.dictionary(["on": .boolean(true), "until": .date(Date(timeIntervalSince1970: Double(end)))])) } else { Out.line("on until \(localMinute(end * 1_000_000))") }
    case "on", "off":
        guard operands.count == 1 else { throw Failure.usage("notifications dnd \(operands[0]) takes nothing more\(operands[0] == "on" ? " than for DURATION or until HH:MM" : "")") }
        try await center.set(C.doNotDisturb, .boolean(operands[0] == "on"))
    case "toggle":
        guard operands.count == 1 else { throw Failure.usage("notifications dnd toggle takes nothing more") }
        let on = try await center.property(C.doNotDisturb)?.bool ?? false
        try await center.set(C.doNotDisturb, .boolean(!on))
        if json { Out.json(.dictionary(["on": .boolean(!on)])) } else { Out.line(on ? "off" : "on") }
    case "schedule":
        let times = Array(operands.dropFirst())
        if times == ["none"] {
            try await center.set(C.doNotDisturbSchedule, .structure([.string(""), .string("")]))
            return
        }
        guard times.count == 2 else { throw Failure.usage("notifications dnd schedule takes FROM TO (HH:MM, local time), or none") }
        for time in times where !DoNotDisturbText.isTimeOfDay(time) {
            throw Failure.usage("'\(time)' is not a time of day: write HH:MM, from 00:00 to 23:59")
        }
        try await center.set(C.doNotDisturbSchedule, .structure([.string(times[0]), .string(times[1])]))
    case let other?:
        throw Failure.usage("notifications dnd takes on [for DURATION | until HH:MM], off, toggle or schedule FROM TO, not '\(other)'")
    }
}

enum DoNotDisturbText {
    /// The seconds `text` says: `45m`, `2h`, `1h30m`; nil for anything else
    /// (no length, or more than a year).
    static func duration(_ text: String) -> UInt64? {
        var seconds: UInt64 = 0
        var number = ""
        var units: [Character] = []
        for character in text {
            if character.isASCII, character.isNumber {
                number.append(character)
            } else if let unit = ["h": UInt64(3600), "m": 60][character], let count = UInt64(number), !units.contains(character),
                units.last != "m"
            {
                seconds += count * unit
                units.append(character)
                number = ""
            } else {
                return nil
            }
        }
        guard number.isEmpty, (1...366 * 86_400).contains(seconds) else { return nil }
        return seconds
    }

    /// IdleThreshold's seconds as `text` gives them: `300`, `5m`, `1h`, or
    /// `never` (0); nil for anything else.
    static func idleThreshold(_ text: String) -> UInt32? {
        if text == "never" { return 0 }
        if let seconds = UInt32(text) { return seconds }
        return duration(text).flatMap { UInt32(exactly: $0) }
    }

    /// The next `text` (HH:MM, local time) after `now` (seconds since
    /// 1970): today's where it is still to come, else tomorrow's.
    static func next(_ text: String, after now: UInt64) -> UInt64? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let hour = Int32(parts[0]), let minute = Int32(parts[1]) else { return nil }
        return nextLocalTime(hour: hour, minute: minute, after: now)
    }

    static func schedule(_ value: Value?) -> (String, String) {
        guard case .structure(let fields)? = value?.unwrapped, fields.count == 2 else { return ("", "") }
        return (fields[0].string ?? "", fields[1].string ?? "")
    }

    static func isTimeOfDay(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]) else {
            return false
        }
        return (0...23).contains(hour) && (0...59).contains(minute)
    }
}

/// An app's policy: shown, listed, set key by key, or removed.
private func policy(_ center: NotificationCenterClient, _ operands: [String], json: Bool) async throws {
    let policies = (try await center.property(Notifications.Center.appPolicies))?.stringDictionary ?? [:]
    func describe(_ app: String, _ policy: Value) -> String {
        let entries = (policy.stringDictionary ?? [:]).sorted { $0.key < $1.key }.map { key, value in
            switch key {
            case "urgency": "urgency=\(value.int64.flatMap { UInt8(exactly: $0) }.flatMap(TodayNotification.Urgency.init(rawValue:))?.name ?? "?")"
            case "timeout": "timeout=\(value.int64.map { $0 == 0 ? "never" : "\($0)" } ?? "?")"
            default: "\(key)=\(value.bool.map { $0 ? "true" : "false" } ?? "?")"
            }
        }
        return "\(app.isEmpty ? "(default)" : app): \(entries.joined(separator: " "))"
    }
    func plist(_ value: Value) -> PlistValue { (try? ValueMapping.plist(value)) ?? .dictionary([:]) }
    guard let app = operands.first else {
        if json {
            Out.json(.dictionary(PlistDictionary(policies.sorted { $0.key < $1.key }.map { ($0.key, plist($0.value)) })))
        } else if policies.isEmpty {
            Out.line("no policies: every app shows banners and is kept in the list")
        } else {
            for (app, policy) in policies.sorted(by: { $0.key < $1.key }) { Out.line(describe(app, policy)) }
        }
        return
    }
    let settings = Array(operands.dropFirst())
    if settings.isEmpty {
        if json {
            Out.json(policies[app].map(plist) ?? .dictionary([:]))
        } else {
            Out.line(policies[app].map { describe(app, $0) } ?? "\(app.isEmpty ? "(default)" : app): no policy of its own")
        }
        return
    }
    if settings == ["reset"] {
        try await center.call(Notifications.Center.setAppPolicy, app, VariantDictionary([]))
        return
    }
    // The app's current policy, with the keys given changed.
    var entries = (policies[app]?.stringDictionary ?? [:])
    for setting in settings {
        guard let equals = setting.firstIndex(of: "=") else {
            throw Failure.usage("policy settings are KEY=VALUE (banners, list, sounds: true|false; urgency: low|normal|critical; timeout: MS|never|app), not '\(setting)'")
        }
        let key = String(setting[..<equals])
        let text = String(setting[setting.index(after: equals)...])
        switch key {
        case "banners", "list", "sounds":
            guard let flag = ["true": true, "false": false, "on": true, "off": false][text] else {
                throw Failure.usage("\(key) is true or false, not '\(text)'")
            }
            entries[key] = .boolean(flag)
        case "urgency":
            guard let urgency = TodayNotification.Urgency(name: text) else { throw Failure.usage("urgency is low, normal or critical, not '\(text)'") }
            entries[key] = .byte(urgency.rawValue)
        case "timeout":
            // Milliseconds, `never`, or `app` for the time the app asks.
            if text == "app" {
                entries[key] = nil
            } else if let milliseconds = text == "never" ? 0 : Int32(text), milliseconds >= 0 {
                entries[key] = .int32(milliseconds)
            } else {
                throw Failure.usage("timeout is milliseconds, never, or app (the time the app asks), not '\(text)'")
            }
        default:
            throw Failure.usage("'\(key)' is not a policy key: banners, list, sounds, urgency or timeout")
        }
    }
    try await center.call(Notifications.Center.setAppPolicy, app, VariantDictionary(entries.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
}

/// One notification as a line of `notifications list`.
enum NotificationLine {
    static func text(_ entry: NotificationEntry) -> String {
        var line = "\(entry.id)\t\(localTime(entry.time))\t\(entry.isOpen ? "open" : "closed")\t\(entry.appTitle)\t\(entry.countedSummary)"
        let body = entry.plainBody.split(separator: "\n").first.map(String.init) ?? ""
        if !body.isEmpty { line += " — " + body }
        if let value = entry.value { line += " [\(value)%]" }
        if !entry.actions.isEmpty { line += "  " + entry.actions.map { "[\($0.label)](\($0.key))" }.joined(separator: " ") }
        return line
    }
}

/// todayd's Notifications interface, as todayctl calls it.
struct NotificationCenterClient {
    let client: Client

    init(_ client: Client) { self.client = client }

    @discardableResult
    func call<each Input: DBusArgument>(_ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input) async throws -> Message {
        let values = method.values(repeat each inputs)
        return try await Client.attempt {
            try await client.connection.call(
                Today.busName, path: Today.managerPath, interface: Notifications.today.name, member: method.method.name, values)
        }
    }

    func list() async throws -> [NotificationEntry] {
        let reply = try await call(Notifications.Center.listNotifications)
        return NotificationEntry.list(reply.body.first ?? .array(.variant, []))
    }

    func property(_ property: Property) async throws -> Value? {
        try await Client.attempt {
            try await client.connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: .get,
                [.string(Notifications.today.name.rawValue), .string(property.name)]
            ).body.first?.unwrapped
        }
    }

    /// One of todayd's settings, as `todayctl notifications VERB [VALUE]`
    /// takes it: set to what `parse` makes of `given` (nil: a usage error,
    /// the value then `refusal`), or printed as `show` says, the line or,
    /// with --json, `{key: value}`.
    func setting(
        _ property: Property, _ given: String?, json: Bool, key: String, parse: (String) -> Value?, refusal: String,
        show: (Value?) -> (line: String, json: PlistValue)
    ) async throws {
        if let given {
            guard let value = parse(given) else { throw Failure.usage("'\(given)' \(refusal)") }
            try await set(property, value)
        } else {
            let shown = show(try await self.property(property))
            if json { Out.json(.dictionary([key: shown.json])) } else { Out.line(shown.line) }
        }
    }

    /// A count as `setting` shows it.
    static func number(_ value: Value?) -> (line: String, json: PlistValue) {
        let count = value?.uint64 ?? 0
        return ("\(count)", .unsigned(count))
    }

    func set(_ property: Property, _ value: Value) async throws {
        _ = try await Client.attempt {
            try await client.connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Set"),
                [.string(Notifications.today.name.rawValue), .string(property.name), .variant(value)])
        }
    }

    /// The bar's figures: count, unseen, Do Not Disturb and the latest.
    func count() async throws -> NotificationCount {
        let reply = try await Client.attempt {
            try await client.connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: .getAll, [.string(Notifications.today.name.rawValue)])
        }
        let values = reply.body.first?.stringDictionary ?? [:]
        typealias C = Notifications.Center
        return NotificationCount(
            count: values[C.count.name]?.int64.flatMap(UInt32.init(exactly:)) ?? 0,
            unseen: values[C.unseen.name]?.int64.flatMap(UInt32.init(exactly:)) ?? 0,
            doNotDisturb: values[C.doNotDisturb.name]?.bool ?? false,
            doNotDisturbUntil: values[C.doNotDisturbUntil.name]?.uint64.map { $0 == 0 ? "" : localMinute($0) } ?? "",
            latest: try await list())
    }
}

/// `todayctl notifications watch`: a line for each change of the list and
/// each signal of the notification server, until interrupted.
private func watchNotifications(_ client: Client, json: Bool) async throws {
    let events = AsyncStream<Message>.makeStream()
    let connection = client.connection
    typealias F = Notifications.Freedesktop
    try await client.subscribeToTodayd([
        MatchRule(interface: Notifications.today.name, member: Notifications.Center.notificationsChanged.name),
        MatchRule(path: Today.managerPath, interface: .properties, member: .propertiesChanged),
        MatchRule(interface: Notifications.freedesktop.name, member: F.actionInvoked.name),
        MatchRule(interface: Notifications.freedesktop.name, member: F.notificationClosed.name),
        MatchRule(interface: Notifications.freedesktop.name, member: F.notificationReplied.name),
    ]) { events.continuation.yield($0) }
    _ = try await Client.attempt { try await connection.callBus(.getNameOwner, [.string(Today.busName.rawValue)]) }
    connection.onDisconnect { events.continuation.finish() }
    if json {
        Out.json(.dictionary(["event": .string("watching")]), compact: true)
    } else {
        Out.line("watching notifications (Ctrl-C to stop)")
    }
    let center = NotificationCenterClient(client)
    var seen = Set<String>()
    func emit(_ event: String, _ fields: PlistDictionary, _ text: String) {
        if json {
            var all = fields
            all["event"] = .string(event)
            Out.json(.dictionary(all), compact: true)
        } else {
            Out.line("\(timestamp()) \(text)")
        }
    }
    for await message in events.stream {
        guard seen.insert("\(message.sender ?? "") \(message.serial)").inserted else { continue }
        switch message.member {
        case Notifications.Center.notificationsChanged.name.rawValue:
            func ids(_ index: Int) -> [UInt32] {
                index < message.body.count ? (message.body[index].elements ?? []).compactMap { $0.int64.flatMap(UInt32.init(exactly:)) } : []
            }
            let (changed, removed) = (ids(0), ids(1))
            for id in changed {
                let reply = try? await center.call(Notifications.Center.getNotification, id)
                guard let entry = reply?.body.first?.stringDictionary.flatMap(NotificationEntry.init) else { continue }
                emit("changed", ["id": .unsigned(UInt64(id)), "notification": entry.plist], "changed \(NotificationLine.text(entry))")
            }
            for id in removed { emit("removed", ["id": .unsigned(UInt64(id))], "removed \(id)") }
        case MemberName.propertiesChanged.rawValue:
            let changed = message.body.count > 1 ? message.body[1].stringDictionary ?? [:] : [:]
            for (name, value) in changed.sorted(by: { $0.key < $1.key }) {
                let plist = (try? ValueMapping.plist(value)) ?? .string("")
                emit("property", ["name": .string(name), "value": plist], "\(name)=\(describe(plist))")
            }
        default:
            guard let (id, outcome) = NotifyOutcome.heard(message) else { continue }
            switch outcome {
            case .action(let key): emit("action", ["id": .unsigned(UInt64(id)), "key": .string(key)], "action \(id) \(key)")
            case .replied(let text): emit("reply", ["id": .unsigned(UInt64(id)), "text": .string(text)], "reply \(id) \(text)")
            case .closed(let reason): emit("closed", ["id": .unsigned(UInt64(id)), "reason": .string(reason)], "closed \(id) \(reason)")
            }
        }
    }
    throw Failure.refused("the connection to the bus was lost")
}
