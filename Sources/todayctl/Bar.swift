import DBus
import FoundationEssentials
import Glibc
import Posix
import PropertyList
import TodayCore
import TodayProtocol

/// `todayctl bar [WIDGET…] --format FORMAT [--once]`: a line per change,
/// driven by todayd's signals, never polling; it waits through a restart
/// of todayd. genmon prints once (the panel runs it on its own period).
func bar(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    var format = BarFormat.waybar
    if let index = arguments.firstIndex(of: "--format") {
        guard index + 1 < arguments.count, let chosen = BarFormat(rawValue: arguments[index + 1]) else {
            throw Failure.usage("--format takes \(BarFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        format = chosen
        arguments.removeSubrange(index...index + 1)
    }
    var once = format == .genmon
    if let index = arguments.firstIndex(of: "--once") {
        once = true
        arguments.remove(at: index)
    }
    if let index = arguments.firstIndex(of: "--notifications") {
        arguments.remove(at: index)
        if let widget = arguments.first {
            throw Failure.usage("bar --notifications shows the notification center, not a widget: run a second bar for '\(widget)'")
        }
        try await notificationsBar(client, format: format, once: once)
        return
    }
    if let bad = arguments.first(where: { $0.hasPrefix("-") || WidgetInstanceID($0) == nil }) {
        throw Failure.usage("'\(bad)' is not a widget id (or id/number of a placed instance); `todayctl layout` shows them")
    }
    let chosen = arguments

    /// The widgets to show now; nil while todayd is away.
    func current() async -> [TodayCard]? {
        do {
            // Without widget ids: the layout, as the view shows it.
            let ids = chosen.isEmpty ? try await client.layoutIDs() : chosen
            var widgets: [TodayCard] = []
            for id in ids {
                do {
                    let card = TodayCard(id: id, properties: [:])
                    widgets.append(TodayCard(id: id, properties: try await client.properties(card.path)))
                } catch let failure as Failure where failure.message.contains("no object") {
                    continue  // not installed (now): nothing to show for it
                }
            }
            return widgets
        } catch {
            return nil
        }
    }

    if once {
        if let header = format.header { Out.line(header) }
        Out.line(format.line(await current() ?? []))
        return
    }

    // Signals, and the moment a widget turns stale, wake the one loop below.
    let events = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    try await client.follow(
        [MatchRule(interface: .properties, member: .propertiesChanged), MatchRule(interface: .objectManager)], waking: events.continuation)
    if format == .i3bar { try readClicks(client.connection) }
    if let header = format.header { Out.line(header) }

    var last: String?
    var staleTimer: Task<Void, Never>?
    for await _ in events.stream {
        // While todayd is away (restarting), the last line stays.
        guard let widgets = await current() else { continue }
        let line = format.line(widgets)
        if line != last {
            Out.line(line)
            last = line
        }
        staleTimer?.cancel()
        let now = Date()
        if let staleAt = widgets.compactMap(\.staleAt).filter({ $0 > now }).min() {
            staleTimer = Task {
                try? await Task.sleep(for: .milliseconds(Int(min(staleAt.timeIntervalSince(now), 86_400) * 1000) + 10))
                if !Task.isCancelled { events.continuation.yield() }
            }
        }
    }
    throw Failure.refused("the connection to the bus was lost")
}

/// `todayctl bar --notifications`: the notification center's count and Do
/// Not Disturb as a module (SPEC section 15), a line for each change of
/// the list or its properties, pushed by todayd's signals; it waits through
/// a restart of todayd. Clicks, where the bar reports them (i3bar,
/// swaybar): the left button opens the Today view, the right one switches
/// Do Not Disturb.
private func notificationsBar(_ client: Client, format: BarFormat, once: Bool) async throws {
    let center = NotificationCenterClient(client)
    if once {
        if let header = format.header { Out.line(header) }
        Out.line(format.line(try await center.count()))
        return
    }
    let events = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    try await client.follow(
        [
            MatchRule(path: Today.managerPath, interface: .properties, member: .propertiesChanged),
            MatchRule(interface: Notifications.today.name, member: Notifications.Center.notificationsChanged.name),
        ], waking: events.continuation)
    if format == .i3bar { try readNotificationClicks(center, busAddress: client.address) }
    if let header = format.header { Out.line(header) }
    var last: String?
    for await _ in events.stream {
        // While todayd is away (restarting), the last line stays.
        guard let count = try? await center.count() else { continue }
        let line = format.line(count)
        if line != last {
            Out.line(line)
            last = line
        }
    }
    throw Failure.refused("the connection to the bus was lost")
}

/// The notification module's clicks from i3bar or swaybar: button 1 runs
/// the Today view's toggle, button 3 switches Do Not Disturb.
private func readNotificationClicks(_ center: NotificationCenterClient, busAddress: String) throws {
    try readClickLines { click in
        guard click["name"]?.string == BarFormat.notificationsBlock else { return }
        let button = click["button"]?.int64 ?? 1
        Task {
            if button == 3 {
                let on = (try? await center.property(Notifications.Center.doNotDisturb))??.bool ?? false
                try? await center.set(Notifications.Center.doNotDisturb, .boolean(!on))
            } else {
                openTodayView(busAddress: busAddress)
            }
        }
    }
}

/// Starts `today-view --toggle` (the one installed beside todayctl, else
/// the first on PATH) on todayctl's bus, not waiting for it.
private func openTodayView(busAddress: String) {
    var environment = ProcessInfo.processInfo.environment
    environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
    let own = (try? Files.linkTarget("/proc/self/exe")).map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
    let folders = (own.map { [$0] } ?? []) + (environment["PATH"] ?? "/usr/bin").split(separator: ":").map(String.init)
    guard let program = folders.map({ $0 + "/today-view" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        Out.error("todayctl: no today-view to open: install it beside todayctl or on PATH\n")
        return
    }
    try? URLDispatch.launch([program, "--toggle"], environment: environment)
}

/// Reads click events from standard input, as i3bar and swaybar write
/// them, on a thread of its own: `[`, then one JSON object a line, each
/// after the first led by a comma.
private func readClickLines(_ handle: @escaping @Sendable (PlistValue) -> Void) throws {
    try Threads.detach {
        var pending = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = (try? buffer.withUnsafeMutableBytes { try FileDescriptor.standardInput.read(into: $0) }) ?? 0
            guard count > 0 else { return }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(pending[..<newline].drop { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "[") || $0 == 0x20 })
                pending.removeSubrange(...newline)
                if let click = try? Plist.read(line, allowJSON: true) { handle(click) }
            }
        }
    }
}

/// i3bar and swaybar write click events to standard input: `[`, then one
/// JSON object a line, each after the first led by a comma. A click on a
/// block calls Activate on its widget; a right click (button 3) presses the
/// first button or toggle its snapshot offers, when it offers one.
private func readClicks(_ connection: Connection) throws {
    try readClickLines { click in
        guard let id = click["instance"]?.string, click["name"]?.string == "todayd", let instance = WidgetInstanceID(id) else { return }
        let button = click["button"]?.int64 ?? 1
        Task {
            let path = instance.path
            if button == 3, let snapshot = try? await connection.call(
                Today.busName, path: path, interface: .properties, member: .get,
                [.string(Today.widget.name.rawValue), .string(Today.Widget.snapshot.name)]).value(Variant.self, answering: "Get").value,
                let first = ((try? ValueMapping.plist(snapshot))?.dictionary).flatMap({ Snapshot($0).actions.first?.id })
            {
                _ = try? await connection.call(
                    Today.busName, path: path, interface: Today.widget.name, Today.Widget.performAction, first, VariantDictionary([]),
                    timeout: .seconds(120))
                return
            }
            _ = try? await connection.call(
                Today.busName, path: path, interface: Today.widget.name, Today.Widget.activate,
                VariantDictionary([("button", .int32(Int32(clamping: button)))]))
        }
    }
}
