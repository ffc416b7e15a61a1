import Foundation
import PropertyList

/// One departure from the stop, as the Tram app keeps it in departures.plist.
public struct Departure: Sendable {
    public var date: Date
    public var line: String
    public var destination: String

    public init(date: Date, line: String, destination: String) {
        self.date = date
        self.line = line
        self.destination = destination
    }

    public var plist: PlistValue {
        .dictionary(["date": .date(date), "line": .string(line), "destination": .string(destination)])
    }

    /// The departures in `file`, in order; none when it is missing or unreadable.
    public static func read(from file: URL) -> [Departure] {
        guard let value = try? Plist.read(contentsOf: file.path), let list = value.array else { return [] }
        return list.compactMap { item in
            guard let date = item["date"]?.date, let line = item["line"]?.string, let destination = item["destination"]?.string else {
                return nil
            }
            return Departure(date: date, line: line, destination: destination)
        }.sorted { $0.date < $1.date }
    }
}

/// The reminder the widget's "Remind me" button schedules and the app
/// answers: its request id, category and actions, shared by both.
public enum Reminder {
    /// One reminder at a time: a new one replaces it.
    public static let requestID = "tram-reminder"
    public static let category = "departure"
    public static let onMyWay = "on-my-way"
    public static let message = "message"
    /// How long before the departure it comes.
    public static let lead: TimeInterval = 60
}
