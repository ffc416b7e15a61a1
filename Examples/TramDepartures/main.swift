// The Tram widget, written as a WidgetKit widget is: an
// AppIntentTimelineProvider whose timeline has one entry per change known
// in advance, for the line the user chose when placing it (a dynamic
// choice: the lines the app knows; none: every line). Each entry
// shows the next departure from the moment the one before it leaves, so
// the widget changes as trams leave without its provider running; the
// policy .atEnd asks for a new timeline once the last one has left, and
// the app asks for one after every edit.
//
// Its "Remind me" button schedules a notification (UserNotifications, as
// an iOS app does) one minute before the next tram leaves; the user's
// answer to it reaches the Tram app, started for it where it is not running.
import Foundation
import TodayKit
import TramShared

/// The widget's settings: which line it follows.
struct DepartureSettings: WidgetConfigurationIntent {
    /// A line's name, or empty for every line.
    @Parameter(title: "Line") var line: String = ""
}

struct DepartureEntry: TimelineEntry {
    let date: Date
    /// The departure shown; nil when none is left.
    let next: Departure?
    /// How many leave after it.
    let later: Int
    /// The line followed; empty: every line.
    var line = ""

    var relevance: TimelineEntryRelevance? {
        // The sooner the tram, the more a panel should show this widget.
        next.map { TimelineEntryRelevance(score: Float(max(0, 1 - $0.date.timeIntervalSince(date) / 3600))) }
    }

    var snapshot: Snapshot {
        guard let next else {
            return Snapshot(
                title: line.isEmpty ? "No more trams" : "No more trams on line \(line)", subtitle: "Add a departure in the Tram app",
                url: URL(string: "tram://"))
        }
        let time = next.date.formatted(date: .omitted, time: .shortened)
        return Snapshot(
            title: "Line \(next.line) to \(next.destination)", subtitle: "leaves at \(time)",
            body: later == 0 ? "the last one" : "\(later) more after it", url: URL(string: "tram://departure?line=\(next.line)"),
            actions: [.button(intent: RemindMe(), iconName: "alarm-symbolic")],
            accessibilityLabel: "Next tram: line \(next.line) to \(next.destination), leaving at \(time)")
    }
}

/// "Remind me": a notification a minute before the next tram leaves, with
/// an "On my way" button and a reply field.
struct RemindMe: WidgetIntent {
    static let id = "remind-me"
    static let title = "Remind me"

    struct NoTram: Error, CustomStringConvertible {
        var description: String { "no tram left to be reminded of" }
    }

    func perform() async throws {
        // The next tram of the line this instance follows.
        guard let next = upcomingDepartures(from: Date(), line: DepartureSettings.current().line).first else { throw NoTram() }
        let center = UNUserNotificationCenter.current()
        center.setNotificationCategories([
            UNNotificationCategory(
                identifier: Reminder.category,
                actions: [
                    UNNotificationAction(identifier: Reminder.onMyWay, title: "On my way", options: [.foreground]),
                    UNTextInputNotificationAction(
                        identifier: Reminder.message, title: "Message", textInputButtonTitle: "Send", textInputPlaceholder: "Running late…"),
                ],
                intentIdentifiers: [])
        ])
        let content = UNMutableNotificationContent()
        content.title = "Line \(next.line) to \(next.destination)"
        content.body = "Leaves at \(next.date.formatted(date: .omitted, time: .shortened)): time to go"
        content.categoryIdentifier = Reminder.category
        content.threadIdentifier = "line-\(next.line)"
        content.interruptionLevel = .timeSensitive
        content.sound = .default
        content.userInfo = ["line": next.line, "destination": next.destination, "departure": next.date.timeIntervalSince1970]
        let lead = next.date.timeIntervalSinceNow - Reminder.lead
        let trigger = UNTimeIntervalNotificationTrigger(timeInterval: max(1, lead), repeats: false)
        try await center.add(UNNotificationRequest(identifier: Reminder.requestID, content: content, trigger: trigger))
    }
}

/// Every departure the app keeps, from its group container.
func allDepartures() -> [Departure] {
    guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.tram") else { return [] }
    return Departure.read(from: container.appendingPathComponent("departures.plist"))
}

/// The departures of `line` (empty: every line) after `now`.
func upcomingDepartures(from now: Date, line: String = "") -> [Departure] {
    allDepartures().filter { $0.date > now && (line.isEmpty || $0.line == line) }
}

@main
struct TramDepartures: AppIntentTimelineProvider {
    static let intents: [any WidgetIntent.Type] = [RemindMe.self]

    func placeholder(in context: Context) -> DepartureEntry {
        DepartureEntry(date: Date(), next: Departure(date: Date(), line: "4", destination: "Central"), later: 2)
    }

    func snapshot(for configuration: DepartureSettings, in context: Context) async -> DepartureEntry {
        // The gallery shows a sample; a placed widget, its next tram.
        if context.isPreview { return placeholder(in: context) }
        return entries(from: Date(), line: configuration.line).first ?? placeholder(in: context)
    }

    func timeline(for configuration: DepartureSettings, in context: Context) async -> Timeline<DepartureEntry> {
        let entries = entries(from: Date(), line: configuration.line)
        // A new timeline once the last tram has left (which then says so);
        // with none left, nothing changes until the app adds one.
        return Timeline(entries: entries, policy: entries.count > 1 ? .atEnd : .never)
    }

    /// The lines the app knows, for the form's choice of line.
    func choices(for parameter: String) async -> [ParameterChoice] {
        guard parameter == "line" else { return [] }
        var lines: [String] = []
        for departure in allDepartures() where !lines.contains(departure.line) { lines.append(departure.line) }
        return [ParameterChoice("", title: "Every line")] + lines.sorted().map { ParameterChoice($0, title: "Line \($0)") }
    }

    /// From `now`: an entry for the next departure, then one at each
    /// departure for the one after it, and one when the last has left.
    func entries(from now: Date, line: String) -> [DepartureEntry] {
        let upcoming = upcomingDepartures(from: now, line: line).prefix(99)
        var entries = [DepartureEntry(date: now, next: upcoming.first, later: max(0, upcoming.count - 1), line: line)]
        for (index, departure) in upcoming.enumerated() {
            let rest = upcoming.dropFirst(index + 1)
            entries.append(DepartureEntry(date: departure.date, next: rest.first, later: max(0, rest.count - 1), line: line))
        }
        return entries
    }
}
