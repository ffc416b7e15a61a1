import DBus
import FoundationEssentials
import PropertyList
import TodayProtocol

/// A widget as a bar module shows it.
extension TodayCard {
    /// The text on the bar: the snapshot's title, else the widget's name.
    public var text: String { snapshot.title ?? name }

    /// The tooltip: name, subtitle, body, items, and why the last update failed.
    public var tooltip: String {
        var lines = [name]
        if let subtitle = snapshot.subtitle { lines.append(subtitle) }
        if let body = snapshot.body { lines.append(body) }
        for item in snapshot.items { lines.append("• " + item.title + (item.subtitle.map { " (\($0))" } ?? "")) }
        if lastResult == .failed { lines.append("last update failed: \(lastFailure)") }
        return lines.joined(separator: "\n")
    }

    /// When the content counts as stale: twice its interval after the last
    /// update; nil for a widget updated only on request, or never.
    public var staleAt: Date? {
        guard updateInterval > 0, lastUpdated > 0 else { return nil }
        return Date(timeIntervalSince1970: Double(lastUpdated / 1_000_000) + 2 * Double(updateInterval))
    }

    /// `has-content`, `failed`, `stale`.
    public func classes(at now: Date) -> [String] {
        var classes = ["has-content"]
        if lastResult == .failed { classes.append("failed") }
        if let staleAt, now >= staleAt { classes.append("stale") }
        return classes
    }

    /// The command a click runs in bars that run commands: Activate, as
    /// gdbus sends it (no ':' in it, which polybar's action tags reserve).
    public var clickCommand: String {
        "gdbus call --session --dest \(Today.busName.rawValue) --object-path \(path.rawValue) --method \(Today.widget.name.rawValue).Activate {}"
    }
}

/// The protocols of the bars people run (SPEC section 13), rendered from
/// the widgets to show; plain value code, tested without a bus.
public enum BarFormat: String, CaseIterable, Sendable {
    case waybar, i3bar, polybar, genmon

    /// What the bar reads first, if anything: i3bar's header and the opening
    /// of its endless array.
    public var header: String? {
        self == .i3bar ? "{\"version\": 1, \"click_events\": true}\n[" : nil
    }

    /// One status line for these widgets (those without content are left
    /// out; with none left, the empty module that hides it).
    public func line(_ widgets: [TodayCard], at now: Date = Date()) -> String {
        let shown = widgets.filter(\.hasContent)
        switch self {
        case .waybar:
            guard !shown.isEmpty else { return #"{"text": "", "tooltip": "", "class": "empty", "alt": ""}"# }
            let classes = Array(Set(shown.flatMap { $0.classes(at: now) })).sorted()
            return Plist.displayJSON(
                .dictionary([
                    "text": .string(shown.map(\.text).joined(separator: "  ·  ")),
                    "tooltip": .string(shown.map(\.tooltip).joined(separator: "\n\n")),
                    "class": .array(classes.map(PlistValue.string)),
                    "alt": .string(shown.map(\.id).joined(separator: ",")),
                ]), compact: true)
        case .i3bar:
            let blocks = shown.map { widget -> PlistValue in
                var block: PlistDictionary = [
                    "name": .string("todayd"), "instance": .string(widget.id), "full_text": .string(widget.text),
                    "short_text": .string(String(widget.text.prefix(24))),
                ]
                let classes = widget.classes(at: now)
                if classes.contains("failed") {
                    block["color"] = .string("#ff6c6b")
                    block["urgent"] = .boolean(true)
                } else if classes.contains("stale") {
                    block["color"] = .string("#8c8c8c")
                }
                return .dictionary(block)
            }
            return Plist.displayJSON(.array(blocks), compact: true) + ","
        case .polybar:
            return shown.map { widget in
                let text = widget.text.replacingScalars("%", with: "%%")
                let mark = widget.classes(at: now).contains("failed") ? "%{F#ff6c6b}" : ""
                return "%{A1:\(widget.clickCommand):}\(mark)\(text)\(mark.isEmpty ? "" : "%{F-}")%{A}"
            }.joined(separator: "  ")
        case .genmon:
            guard let first = shown.first else { return "<txt></txt>" }
            var out = ""
            if let image = first.snapshot.imagePath ?? first.iconPath {
                out += "<img>\(Self.markup(image))</img>"
            }
            out += "<txt>\(Self.markup(shown.map(\.text).joined(separator: "  ·  ")))</txt>"
            out += "<tool>\(Self.markup(shown.map(\.tooltip).joined(separator: "\n\n")))</tool>"
            out += "<txtclick>\(Self.markup(first.clickCommand))</txtclick>"
            return out
        }
    }

    /// The name of the notification module's i3bar block, whose clicks
    /// `todayctl bar --notifications` reads back.
    public static let notificationsBlock = "todayd-notifications"
    /// What a click on the notification module runs where the bar runs
    /// commands: the Today view, shown or hidden.
    public static let openViewCommand = "today-view --toggle"
    /// What a right click runs: Do Not Disturb switched.
    public static let toggleDoNotDisturbCommand = "todayctl notifications dnd toggle"

    /// One status line of the notification module (SPEC section 15): the
    /// count, a tooltip with the latest summaries, the classes `none`,
    /// `unseen` and `dnd`.
    public func line(_ center: NotificationCount) -> String {
        switch self {
        case .waybar:
            return Plist.displayJSON(
                .dictionary([
                    "text": .string(center.text), "tooltip": .string(center.tooltip),
                    "class": .array(center.classes.map(PlistValue.string)), "alt": .string(center.alt),
                ]), compact: true)
        case .i3bar:
            var block: PlistDictionary = [
                "name": .string(Self.notificationsBlock), "full_text": .string("✉ " + center.text), "short_text": .string("\(center.count)"),
            ]
            if center.doNotDisturb {
                block["color"] = .string("#8c8c8c")
            } else if center.unseen > 0 {
                block["urgent"] = .boolean(true)
            }
            return Plist.displayJSON(.array([.dictionary(block)]), compact: true) + ","
        case .polybar:
            let mark = center.doNotDisturb ? "%{F#8c8c8c}" : center.unseen > 0 ? "%{F#ffb86c}" : ""
            let text = mark + center.text.replacingScalars("%", with: "%%") + (mark.isEmpty ? "" : "%{F-}")
            return "%{A1:\(Self.openViewCommand):}%{A3:\(Self.toggleDoNotDisturbCommand):}\(text)%{A}%{A}"
        case .genmon:
            return "<txt>\(Self.markup(center.text))</txt><tool>\(Self.markup(center.tooltip))</tool>"
                + "<txtclick>\(Self.markup(Self.openViewCommand))</txtclick>"
        }
    }

    static func markup(_ text: String) -> String {
        text.replacingScalars("&", with: "&amp;").replacingScalars("<", with: "&lt;").replacingScalars(">", with: "&gt;")
    }
}
