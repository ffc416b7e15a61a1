// Up Next: the events of the next 24 hours from the user's calendars
// (iCalendar files: Evolution's local calendar, khal and vdirsyncer
// folders, any .ics named in `sources`), as a timeline with an entry
// wherever what comes next changes, so the card moves on as events start
// and end without the provider running.
import Foundation
import TodayKit

/// The Up Next widget's settings.
public struct UpNextSettings: WidgetConfigurationIntent {
    /// Files and folders, separated by `:`; todayd gives them with `~/`
    /// made the user's home (SPEC section 17).
    @Parameter(title: "Calendars") public var sources: String = ""
    public init() {}
}

/// What the card shows at one moment.
public struct UpNextEntry: TimelineEntry {
    public let date: Date
    /// The events not yet over at `date`, by start.
    public let events: [CalendarEvent]
    public var zone: TimeZone = .current
    /// Why nothing could be read, when nothing could.
    public var problem: String?

    public var snapshot: Snapshot {
        guard let first = events.first else {
            return Snapshot(
                title: "Nothing in the next 24 hours", subtitle: problem, url: UpNextEntry.calendarURL,
                accessibilityLabel: "No events in the next 24 hours")
        }
        let when = UpNextEntry.when(first, at: date, zone: zone)
        let subtitle = ([when] + (first.location.isEmpty ? [] : [first.location])).joined(separator: " · ")
        let more = events.count - 1
        let items = events.dropFirst().prefix(4).map { event in
            Snapshot.Item(title: "\(UpNextEntry.time(event, zone: zone)) \(event.summary)", subtitle: event.location.isEmpty ? nil : event.location)
        }
        return Snapshot(
            title: first.summary.isEmpty ? "(no title)" : first.summary, subtitle: subtitle,
            body: more == 0 ? "nothing after it today" : more == 1 ? "1 more in the next 24 hours" : "\(more) more in the next 24 hours",
            imagePath: Icons.path("x-office-calendar"), url: UpNextEntry.calendarURL, items: Array(items),
            accessibilityLabel: "Next: \(first.summary), \(when)")
    }

    /// What a tap opens: the calendar app, through todayd's OpenURL (the
    /// `webcal` handler).
    static let calendarURL = URL(string: "webcal://")

    /// "now until 11:00", "10:00 – 11:00", "all day".
    static func when(_ event: CalendarEvent, at date: Date, zone: TimeZone) -> String {
        if event.allDay { return "all day" }
        let end = event.end.formatted(Date.FormatStyle(date: .omitted, time: .shortened, timeZone: zone))
        if event.start <= date { return "now, until \(end)" }
        return "\(time(event, zone: zone)) – \(end)"
    }

    static func time(_ event: CalendarEvent, zone: TimeZone) -> String {
        event.allDay ? "all day" : event.start.formatted(Date.FormatStyle(date: .omitted, time: .shortened, timeZone: zone))
    }

    /// One entry now, and one at each start and end in the next 24 hours:
    /// every moment at which what is shown changes.
    public static func timeline(_ events: [CalendarEvent], from now: Date, zone: TimeZone = .current, problem: String? = nil) -> [UpNextEntry] {
        let horizon = now.addingTimeInterval(86_400)
        let changes = Set(events.flatMap { [$0.start, $0.end] }.filter { $0 > now && $0 < horizon })
        return ([now] + changes.sorted()).map { moment in
            UpNextEntry(date: moment, events: events.filter { $0.end > moment || ($0.end == $0.start && $0.start >= moment) }, zone: zone, problem: problem)
        }
    }
}

/// The Up Next widget's provider.
public struct UpNextProvider: AppIntentTimelineProvider {
    public static let kind = "io.github.todayd.Essentials.UpNext"

    public init() {}

    public func placeholder(in context: Context) -> UpNextEntry {
        let now = Date()
        let sample = [
            CalendarEvent(uid: "1", summary: "Team meeting", location: "Room 4", start: now.addingTimeInterval(1800), end: now.addingTimeInterval(5400), allDay: false, file: ""),
            CalendarEvent(uid: "2", summary: "Lunch with Ana", location: "", start: now.addingTimeInterval(9000), end: now.addingTimeInterval(12600), allDay: false, file: ""),
        ]
        return UpNextEntry(date: now, events: sample)
    }

    public func snapshot(for configuration: UpNextSettings, in context: Context) async -> UpNextEntry {
        if context.isPreview { return placeholder(in: context) }
        return UpNextProvider.entries(for: configuration, from: Date()).first ?? placeholder(in: context)
    }

    /// The day ahead; read again once it has half passed (and whenever
    /// todayd is asked to), so edits to the calendars show.
    public func timeline(for configuration: UpNextSettings, in context: Context) async -> Timeline<UpNextEntry> {
        let now = Date()
        return Timeline(entries: UpNextProvider.entries(for: configuration, from: now), policy: .after(now.addingTimeInterval(3600)))
    }

    static func entries(for configuration: UpNextSettings, from now: Date) -> [UpNextEntry] {
        let sources = configuration.sources.split(separator: ":").map(String.init).filter { !$0.isEmpty }
        let files = CalendarReader.files(in: sources)
        var problems: [String] = []
        let events = CalendarReader.occurrences(inFiles: files, from: now, to: now.addingTimeInterval(86_400)) { problems.append($0) }
        for problem in problems { FileHandle.standardError.write(Data("Up Next: \(problem)\n".utf8)) }
        let problem = files.isEmpty ? "No calendar found: name .ics files or folders in the widget's settings" : problems.first
        return UpNextEntry.timeline(events, from: now, problem: problem)
    }
}
