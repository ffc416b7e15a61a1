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
