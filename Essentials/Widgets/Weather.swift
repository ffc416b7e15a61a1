// Weather: current conditions and the next hours from Open-Meteo
// (open-meteo.com, no key) for a place the user names, geocoded once
// through Open-Meteo's geocoding, or given as `lat,lon`. The last forecast
// is kept in the widget's container and shown, with its age, when the
// network or the service fails.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import TodayKit

/// The Weather widget's settings.
public struct WeatherSettings: WidgetConfigurationIntent {
    /// A place name (`Lisbon`) or `latitude,longitude`; empty: the city of
    /// this computer's time zone.
    @Parameter(title: "Place") public var place: String = ""
    /// The service's address; empty: Open-Meteo's own servers.
    @Parameter(title: "Service address") public var endpoint: String = ""
    public init() {}
}

/// Where a forecast is for.
public struct WeatherPlace: Codable, Sendable, Equatable {
    public var name: String
    public var latitude: Double
    public var longitude: Double

    public init(name: String, latitude: Double, longitude: Double) {
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
    }

    /// `lat,lon` as two numbers in range, else nil.
    public static func coordinates(_ text: String) -> WeatherPlace? {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let latitude = Double(parts[0]), let longitude = Double(parts[1]), abs(latitude) <= 90, abs(longitude) <= 180
        else { return nil }
        return WeatherPlace(name: text, latitude: latitude, longitude: longitude)
    }
}

/// A forecast as the widget keeps it.
public struct Forecast: Codable, Sendable, Equatable {
    public struct Hour: Codable, Sendable, Equatable {
        /// The place's local time as Open-Meteo writes it (`2026-12-03T14:00`).
        public var time: String
        public var temperature: Double
        public var code: Int
    }

    public var place: WeatherPlace
    /// When it was fetched.
    public var fetched: Date
    public var temperature: Double
    public var unit: String
    public var code: Int
    public var isDay: Bool
    public var wind: Double?
    public var hours: [Hour]

    /// Reads Open-Meteo's `/v1/forecast` answer; throws saying what is missing.
    public static func decode(_ data: Data, place: WeatherPlace, fetched: Date) throws -> Forecast {
        struct Answer: Decodable {
            struct Current: Decodable {
                var time: String
                var temperature_2m: Double
                var weather_code: Int
                var is_day: Int?
                var wind_speed_10m: Double?
            }
            struct Units: Decodable { var temperature_2m: String? }
            struct Hourly: Decodable {
                var time: [String]
                var temperature_2m: [Double?]
                var weather_code: [Int?]
            }
            var current: Current
            var current_units: Units?
            var hourly: Hourly?
        }
        let answer: Answer
        do {
            answer = try JSONDecoder().decode(Answer.self, from: data)
        } catch {
            throw WeatherError.badAnswer("the forecast is not the JSON Open-Meteo sends (\(WeatherError.describe(error)))")
        }
        var hours: [Hour] = []
        if let hourly = answer.hourly {
            // The hours after the current one.
            for (index, time) in hourly.time.enumerated() where time > answer.current.time {
                guard index < hourly.temperature_2m.count, index < hourly.weather_code.count,
                    let temperature = hourly.temperature_2m[index], let code = hourly.weather_code[index]
                else { continue }
                hours.append(Hour(time: time, temperature: temperature, code: code))
                if hours.count == 5 { break }
            }
        }
        return Forecast(
            place: place, fetched: fetched, temperature: answer.current.temperature_2m, unit: answer.current_units?.temperature_2m ?? "°C",
            code: answer.current.weather_code, isDay: (answer.current.is_day ?? 1) != 0, wind: answer.current.wind_speed_10m, hours: hours)
    }

    /// The card; `now` for the age of a forecast kept from before.
    public func snapshot(at now: Date, stale: String? = nil) -> Snapshot {
        let condition = WeatherCode.describe(code)
        let degrees = "\(Int(temperature.rounded()))\(unit)"
        var body = condition.text
        if let wind { body += ", wind \(Int(wind.rounded())) km/h" }
        if let stale {
            body += " · \(Forecast.age(from: fetched, to: now)) (\(stale))"
        }
        let items = hours.map { hour in
            Snapshot.Item(title: "\(hour.time.suffix(5))  \(Int(hour.temperature.rounded()))\(unit)", subtitle: WeatherCode.describe(hour.code).text)
        }
        return Snapshot(
            title: "\(degrees) in \(place.name)", subtitle: condition.text, body: body,
            imagePath: Icons.path(isDay ? condition.icon : condition.nightIcon),
            url: URL(string: "https://open-meteo.com/en/docs"), items: items,
            accessibilityLabel: "\(place.name): \(degrees), \(condition.text.lowercased())",
            extra: ["fetched": .date(fetched), "stale": .boolean(stale != nil)])
    }

    /// "updated 2 h ago".
    public static func age(from fetched: Date, to now: Date) -> String {
        let minutes = Int(max(0, now.timeIntervalSince(fetched)) / 60)
        if minutes < 1 { return "updated just now" }
        if minutes < 60 { return "updated \(minutes) min ago" }
        if minutes < 48 * 60 { return "updated \(minutes / 60) h ago" }
        return "updated \(minutes / 1440) days ago"
    }
}

/// WMO weather interpretation codes, as Open-Meteo gives them.
public enum WeatherCode {
    public static func describe(_ code: Int) -> (text: String, icon: String, nightIcon: String) {
        switch code {
        case 0: ("Clear sky", "weather-clear", "weather-clear-night")
        case 1, 2: ("Partly cloudy", "weather-few-clouds", "weather-few-clouds-night")
        case 3: ("Overcast", "weather-overcast", "weather-overcast")
        case 45, 48: ("Fog", "weather-fog", "weather-fog")
        case 51, 53, 55, 56, 57: ("Drizzle", "weather-showers-scattered", "weather-showers-scattered")
        case 61, 63, 65, 66, 67, 80, 81, 82: ("Rain", "weather-showers", "weather-showers")
        case 71, 73, 75, 77, 85, 86: ("Snow", "weather-snow", "weather-snow")
        case 95, 96, 99: ("Thunderstorm", "weather-storm", "weather-storm")
        default: ("Unknown weather (code \(code))", "weather-severe-alert", "weather-severe-alert")
        }
    }
}

public enum WeatherError: Error, CustomStringConvertible {
    case unknownPlace(String)
    case badAnswer(String)
    case network(String)

    public var description: String {
        switch self {
        case .unknownPlace(let name): "Open-Meteo knows no place called '\(name)': give another name or 'latitude,longitude'"
        case .badAnswer(let message), .network(let message): message
        }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "'\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
        case DecodingError.dataCorrupted: "it does not parse"
        default: "\(error)"
        }
    }
}

/// Open-Meteo's two services, or one address that serves both paths.
public struct OpenMeteo: Sendable {
    public var forecastBase: String
    public var geocodingBase: String
    /// How long one request may take.
    public var timeout: TimeInterval = 8

    public init(endpoint: String) {
        let given = endpoint.trimmingCharacters(in: .whitespaces)
        let base = given.hasSuffix("/") ? String(given.dropLast()) : given
        forecastBase = base.isEmpty ? "https://api.open-meteo.com" : base
        geocodingBase = base.isEmpty ? "https://geocoding-api.open-meteo.com" : base
    }

    func get(_ url: URL) async throws -> Data {
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await Self.fetch(url, within: timeout)
        } catch {
            throw WeatherError.network("\(url.host ?? "the service") did not answer: \((error as? WeatherError)?.description ?? error.localizedDescription)")
        }
        guard let http = response as? HTTPURLResponse, http.statusCode == 200 else {
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            throw WeatherError.network("\(url.host ?? "the service") answered HTTP \(status)")
        }
        return data
    }

    /// One request, answered within `limit` seconds or given up. The
    /// session's own timeout does not cover a server that takes the
    /// connection and stays silent, and a cancelled request may take its
    /// time to end: the limit answers the caller by itself, whichever of
    /// the two comes first, and the request is cancelled behind it.
    private static func fetch(_ url: URL, within limit: TimeInterval) async throws -> (Data, URLResponse) {
        var request = URLRequest(url: url, timeoutInterval: limit)
        request.setValue("todayd-essentials", forHTTPHeaderField: "User-Agent")
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = limit
        configuration.timeoutIntervalForResource = limit
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            let once = Once()
            let answer: @Sendable (Result<(Data, URLResponse), any Error>) -> Void = { result in
                if once.claim() { continuation.resume(with: result) }
            }
            let task = session.dataTask(with: request) { data, response, error in
                if let data, let response {
                    answer(.success((data, response)))
                } else {
                    answer(.failure(error ?? WeatherError.network("no answer")))
                }
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit) {
                answer(.failure(WeatherError.network("no answer within \(Int(limit)) s")))
                task.cancel()
            }
            task.resume()
        }
    }

    /// The first place Open-Meteo's geocoding finds for `name`.
    public func geocode(_ name: String) async throws -> WeatherPlace {
        var components = URLComponents(string: geocodingBase + "/v1/search")
        components?.queryItems = [.init(name: "name", value: name), .init(name: "count", value: "1"), .init(name: "format", value: "json")]
        guard let url = components?.url else { throw WeatherError.badAnswer("'\(geocodingBase)' is not a usable address") }
        struct Answer: Decodable {
            struct Result: Decodable {
                var name: String
                var latitude: Double
                var longitude: Double
            }
            var results: [Result]?
        }
        let answer: Answer
        do {
            answer = try JSONDecoder().decode(Answer.self, from: try await get(url))
        } catch let error as WeatherError {
            throw error
        } catch {
            throw WeatherError.badAnswer("the geocoding answer is not the JSON Open-Meteo sends (\(WeatherError.describe(error)))")
        }
        guard let first = answer.results?.first else { throw WeatherError.unknownPlace(name) }
        return WeatherPlace(name: first.name, latitude: first.latitude, longitude: first.longitude)
    }

    /// The forecast for `place`.
    public func forecast(_ place: WeatherPlace, at now: Date) async throws -> Forecast {
        var components = URLComponents(string: forecastBase + "/v1/forecast")
        components?.queryItems = [
            .init(name: "latitude", value: String(place.latitude)), .init(name: "longitude", value: String(place.longitude)),
            .init(name: "current", value: "temperature_2m,weather_code,is_day,wind_speed_10m"),
            .init(name: "hourly", value: "temperature_2m,weather_code"), .init(name: "forecast_hours", value: "7"),
            .init(name: "timezone", value: "auto"),
        ]
        guard let url = components?.url else { throw WeatherError.badAnswer("'\(forecastBase)' is not a usable address") }
        return try Forecast.decode(try await get(url), place: place, fetched: now)
    }
}

/// What the widget keeps between runs in its container: places geocoded,
/// and the last forecast of each.
struct WeatherMemory: Codable {
    var places: [String: WeatherPlace] = [:]
    var forecasts: [String: Forecast] = [:]

    static var file: URL? {
        guard let container = ProcessInfo.processInfo.environment["TODAY_CONTAINER"], !container.isEmpty else { return nil }
        return URL(fileURLWithPath: container).appendingPathComponent("weather.json")
    }

    static func load() -> WeatherMemory {
        guard let file, let data = try? Data(contentsOf: file), let memory = try? JSONDecoder().decode(WeatherMemory.self, from: data) else {
            return WeatherMemory()
        }
        return memory
    }

    func save() {
        guard let file = Self.file, let data = try? JSONEncoder().encode(self) else { return }
        try? data.write(to: file, options: .atomic)
    }
}

public struct WeatherEntry: TimelineEntry {
    public let date: Date
    public let snapshot: Snapshot
}

/// The Weather widget's provider.
public struct WeatherProvider: AppIntentTimelineProvider {
    public static let kind = "io.github.todayd.Essentials.Weather"

    public init() {}

    public func placeholder(in context: Context) -> WeatherEntry {
        let sample = Forecast(
            place: WeatherPlace(name: "Lisbon", latitude: 38.72, longitude: -9.14), fetched: Date(), temperature: 18, unit: "°C", code: 1,
            isDay: true, wind: 12, hours: [.init(time: "T15:00", temperature: 19, code: 1), .init(time: "T16:00", temperature: 18, code: 3)])
        return WeatherEntry(date: Date(), snapshot: sample.snapshot(at: Date()))
    }

    public func snapshot(for configuration: WeatherSettings, in context: Context) async -> WeatherEntry {
        context.isPreview ? placeholder(in: context) : await WeatherProvider.entry(for: configuration, at: Date())
    }

    /// The forecast now; asked again in half an hour.
    public func timeline(for configuration: WeatherSettings, in context: Context) async -> Timeline<WeatherEntry> {
        let now = Date()
        return Timeline(entries: [await WeatherProvider.entry(for: configuration, at: now)], policy: .after(now.addingTimeInterval(1800)))
    }

    /// The place the settings name: coordinates as given, a name as
    /// geocoded before or now; empty: the city of this computer's zone.
    static func place(for configuration: WeatherSettings, service: OpenMeteo, memory: inout WeatherMemory) async throws -> WeatherPlace {
        let given = configuration.place.trimmingCharacters(in: .whitespaces)
        if let place = WeatherPlace.coordinates(given) { return place }
        let name = given.isEmpty ? ZonePlace.cityName(of: TimeZone.current.identifier) : given
        if let known = memory.places[name.lowercased()] { return known }
        let found = try await service.geocode(name)
        memory.places[name.lowercased()] = found
        return found
    }

    static func entry(for configuration: WeatherSettings, at now: Date) async -> WeatherEntry {
        var memory = WeatherMemory.load()
        let service = OpenMeteo(endpoint: configuration.endpoint)
        let key = configuration.place.trimmingCharacters(in: .whitespaces).lowercased()
        do {
            let place = try await place(for: configuration, service: service, memory: &memory)
            let forecast = try await service.forecast(place, at: now)
            memory.forecasts[key] = forecast
            memory.save()
            return WeatherEntry(date: now, snapshot: forecast.snapshot(at: now))
        } catch {
            memory.save()
            FileHandle.standardError.write(Data("Weather: \(error)\n".utf8))
            if let kept = memory.forecasts[key] {
                let reason: String
                switch error {
                case WeatherError.network: reason = "offline"
                default: reason = "the service failed"
                }
                return WeatherEntry(date: now, snapshot: kept.snapshot(at: now, stale: reason))
            }
            let message = "\(error)"
            return WeatherEntry(date: now, snapshot: Snapshot(title: "No forecast", subtitle: message, accessibilityLabel: "No forecast: \(message)"))
        }
    }
}

/// True for the first caller of `claim` only.
private final class Once: Sendable {
    private let claimed = Mutex(false)

    func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
