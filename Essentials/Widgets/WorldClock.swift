// World Clock: the time, the day and whether it is day or night in the
// zone the user chose, as a timeline of one entry a minute, so that the
// clock moves without its provider running. Several instances show
// several cities.
import Foundation
import PropertyList
import TodayKit

/// The World Clock's settings: which zone it shows.
public struct WorldClockSettings: WidgetConfigurationIntent {
    /// A tz database name (`Asia/Tokyo`); empty: this computer's zone.
    @Parameter(title: "Time zone") public var zone: String = ""
    public init() {}
}

/// One minute of a city's clock.
public struct ClockEntry: TimelineEntry {
    public let date: Date
    public let place: ZonePlace
    /// The zone of the computer showing it, for the day and hour offset.
    public let home: TimeZone

    public var snapshot: Snapshot {
        let time = date.formatted(Date.FormatStyle(date: .omitted, time: .shortened, timeZone: place.zone))
        let daylight = place.isDaylight(at: date)
        let offset = ClockEntry.offsetText(of: place.zone, from: home, at: date)
        let day = ClockEntry.dayText(of: place.zone, from: home, at: date)
        let phase = daylight.map { $0 ? "☀ day" : "☾ night" }
        return Snapshot(
            title: place.city, subtitle: time, body: ([day + ", " + offset] + (phase.map { [$0] } ?? [])).joined(separator: " · "),
            accessibilityLabel: "\(place.city): \(time), \(day.lowercased()), \(offset)",
            extra: ["zone": .string(place.zone.identifier), "daylight": daylight.map(PlistValue.boolean) ?? .string("unknown")])
    }

    /// "+9 h", "−5 h 30 min", "same time": the zone against `home` at `date`.
    public static func offsetText(of zone: TimeZone, from home: TimeZone, at date: Date) -> String {
        let seconds = zone.secondsFromGMT(for: date) - home.secondsFromGMT(for: date)
        guard seconds != 0 else { return "same time" }
        let minutes = abs(seconds) / 60
        let sign = seconds > 0 ? "+" : "−"
        return minutes % 60 == 0 ? "\(sign)\(minutes / 60) h" : "\(sign)\(minutes / 60) h \(minutes % 60) min"
    }

    /// "Today", "Tomorrow" or "Yesterday": the zone's calendar day against `home`'s.
    public static func dayText(of zone: TimeZone, from home: TimeZone, at date: Date) -> String {
        switch dayOffset(of: zone, from: home, at: date) {
        case 0: "Today"
        case 1: "Tomorrow"
        case -1: "Yesterday"
        case let days: days > 0 ? "+\(days) days" : "\(days) days"
        }
    }

    /// The zone's calendar day minus `home`'s, at `date`.
    public static func dayOffset(of zone: TimeZone, from home: TimeZone, at date: Date) -> Int {
        func day(in zone: TimeZone) -> Date? {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(identifier: "UTC") ?? .gmt
            return utc.date(from: parts)
        }
        guard let there = day(in: zone), let here = day(in: home) else { return 0 }
        return Int((there.timeIntervalSince(here) / 86_400).rounded())
    }
}

/// A zone of the tz database, with its main city and where that city is
/// (zone1970.tab's coordinates), for day and night.
public struct ZonePlace: Sendable {
    public let zone: TimeZone
    public let city: String
    /// Degrees north and east; nil for zones that are no place (UTC, Etc/…).
    public let latitude: Double?
    public let longitude: Double?

    /// The zone named `identifier` with its place from `table`; nil when
    /// the tz database has no such zone.
    public init?(identifier: String, table: ZoneTable = .system) {
        guard let zone = identifier.isEmpty ? TimeZone.current : TimeZone(identifier: identifier) else { return nil }
        self.init(zone: zone, name: identifier.isEmpty ? zone.identifier : identifier, table: table)
    }

    public init(zone: TimeZone, name: String, table: ZoneTable = .system) {
        self.zone = zone
        city = ZonePlace.cityName(of: name)
        let coordinates = table.coordinates[name] ?? table.coordinates[zone.identifier]
        latitude = coordinates?.latitude
        longitude = coordinates?.longitude
    }

    /// "New York" for America/New_York, "Indiana, Knox" for
    /// America/Indiana/Knox, "UTC" for UTC.
    public static func cityName(of identifier: String) -> String {
        let parts = identifier.split(separator: "/").dropFirst().map { $0.replacingOccurrences(of: "_", with: " ") }
        return parts.isEmpty ? identifier : parts.reversed().joined(separator: ", ")
    }

    /// Whether the sun is up at the place at `date` (its centre above
    /// −0.833°, the sunrise of almanacs); nil where the zone is no place.
    public func isDaylight(at date: Date) -> Bool? {
        guard let latitude, let longitude else { return nil }
        return Sun.elevation(at: date, latitude: latitude, longitude: longitude) > -0.833
    }
}

/// The zones the tz database lists with a place (zone1970.tab, zone.tab).
public struct ZoneTable: Sendable {
    public var coordinates: [String: (latitude: Double, longitude: Double)] = [:]

    public static let system = ZoneTable(folder: "/usr/share/zoneinfo")

    public init(folder: String) {
        for file in ["zone.tab", "zone1970.tab"] {
            guard let text = try? String(contentsOfFile: folder + "/" + file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                guard fields.count >= 3, let place = ZoneTable.coordinates(String(fields[1])) else { continue }
                coordinates[String(fields[2])] = place
            }
        }
    }

    /// The names, sorted, for the zone choice.
    public var names: [String] { coordinates.keys.sorted() }

    /// ISO 6709 as the tables write it: `+4230+00131` or `+404251-0740023`.
    static func coordinates(_ text: String) -> (latitude: Double, longitude: Double)? {
        let scalars = Array(text.unicodeScalars)
        guard let split = scalars.dropFirst().firstIndex(where: { $0 == "+" || $0 == "-" }) else { return nil }
        func degrees(_ part: ArraySlice<Unicode.Scalar>, degreeDigits: Int) -> Double? {
            guard let sign = part.first, sign == "+" || sign == "-" else { return nil }
            let digits = String(String.UnicodeScalarView(part.dropFirst()))
            guard digits.count == degreeDigits + 2 || digits.count == degreeDigits + 4, digits.allSatisfy(\.isASCII),
                let whole = Int(digits)
            else { return nil }
            let hasSeconds = digits.count == degreeDigits + 4
            let value = hasSeconds
                ? Double(whole / 10_000) + Double(whole / 100 % 100) / 60 + Double(whole % 100) / 3600
                : Double(whole / 100) + Double(whole % 100) / 60
            return sign == "-" ? -value : value
        }
        guard let latitude = degrees(scalars[..<split], degreeDigits: 2), let longitude = degrees(scalars[split...], degreeDigits: 3) else {
            return nil
        }
        return (latitude, longitude)
    }
}

/// Where the sun stands: NOAA's solar position equations (the "General
/// Solar Position Calculations" of its Global Monitoring Laboratory),
/// good to a fraction of a degree.
public enum Sun {
    /// The sun's elevation above the horizon in degrees.
    public static func elevation(at date: Date, latitude: Double, longitude: Double) -> Double {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        let parts = utc.dateComponents([.year, .hour, .minute, .second], from: date)
        let dayOfYear = Double(utc.ordinality(of: .day, in: .year, for: date) ?? 1)
        let hour = Double(parts.hour ?? 0)
        let minutes = hour * 60 + Double(parts.minute ?? 0) + Double(parts.second ?? 0) / 60
        let gamma = 2 * Double.pi / 365 * (dayOfYear - 1 + (hour - 12) / 24)
        let equationOfTime =
            229.18 * (0.000075 + 0.001868 * cos(gamma) - 0.032077 * sin(gamma) - 0.014615 * cos(2 * gamma) - 0.040849 * sin(2 * gamma))
        let declination =
            0.006918 - 0.399912 * cos(gamma) + 0.070257 * sin(gamma) - 0.006758 * cos(2 * gamma) + 0.000907 * sin(2 * gamma)
            - 0.002697 * cos(3 * gamma) + 0.00148 * sin(3 * gamma)
        let trueSolarMinutes = minutes + equationOfTime + 4 * longitude
        let hourAngle = (trueSolarMinutes / 4 - 180) * Double.pi / 180
        let phi = latitude * Double.pi / 180
        let cosZenith = sin(phi) * sin(declination) + cos(phi) * cos(declination) * cos(hourAngle)
        return 90 - acos(min(1, max(-1, cosZenith))) * 180 / Double.pi
    }
}

/// The World Clock's provider.
public struct WorldClock: AppIntentTimelineProvider {
    public static let kind = "io.github.todayd.Essentials.WorldClock"

    public init() {}

    public func placeholder(in context: Context) -> ClockEntry {
        ClockEntry(date: Date(), place: ZonePlace(identifier: "Asia/Tokyo") ?? WorldClock.here, home: .current)
    }

    public func snapshot(for configuration: WorldClockSettings, in context: Context) async -> ClockEntry {
        context.isPreview ? placeholder(in: context) : ClockEntry(date: Date(), place: place(configuration), home: .current)
    }

    /// An entry for every minute of the next hour, from the current one.
    public func timeline(for configuration: WorldClockSettings, in context: Context) async -> Timeline<ClockEntry> {
        Timeline(entries: WorldClock.minutes(from: Date(), place: place(configuration), home: .current), policy: .atEnd)
    }

    public func choices(for parameter: String) async -> [ParameterChoice] {
        guard parameter == "zone" else { return [] }
        return [ParameterChoice("", title: "This computer (\(TimeZone.current.identifier))")]
            + ZoneTable.system.names.map { ParameterChoice($0, title: "\(ZonePlace.cityName(of: $0)) (\($0))") }
    }

    /// The entries of the hour from the start of `now`'s minute.
    public static func minutes(from now: Date, place: ZonePlace, home: TimeZone, count: Int = 60) -> [ClockEntry] {
        let start = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60)
        return (0..<count).map { ClockEntry(date: start.addingTimeInterval(Double($0) * 60), place: place, home: home) }
    }

    private func place(_ configuration: WorldClockSettings) -> ZonePlace {
        ZonePlace(identifier: configuration.zone) ?? WorldClock.here
    }

    /// This computer's zone, where the one asked for is unknown.
    static var here: ZonePlace { ZonePlace(zone: .current, name: TimeZone.current.identifier) }
}
