// The Traffic widget: a static traffic map of the region the Traffic app
// left in settings.dict, 350 points high with zero margins (Info.plist); a
// tap opens traffic://, and a "Traffic layer" toggle (an intent) shows or
// hides the traffic on the map.
import Foundation
import PropertyList
import TodayKit

/// The region the app leaves in settings.dict.
struct Settings: Decodable {
    var lat: Double
    var lon: Double
    var spn: Double
    /// Whether the map shows traffic; the toggle sets it.
    var traffic: Bool?
}

struct NoSettings: Error, CustomStringConvertible {
    var description: String { "the Traffic app has left no region yet" }
}

/// The "Traffic layer" toggle: the layer on or off, kept in settings.dict.
struct TrafficLayer: SetValueIntent {
    static let id = "traffic-layer"
    static let title = "Traffic layer"
    var value = true

    func perform() async throws {
        guard let file = settingsFile(), var settings = (try? Plist.read(contentsOf: file.path))?.dictionary else { throw NoSettings() }
        settings["traffic"] = .boolean(value)
        try Plist.write(.dictionary(settings), format: .xml).write(to: file, options: .atomic)
    }
}

func settingsFile() -> URL? {
    FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.traffic")?.appendingPathComponent("settings.dict")
}

@main
struct TrafficWidget: WidgetProviding {
    static let intents: [any WidgetIntent.Type] = [TrafficLayer.self]

    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
        guard let file = settingsFile()?.path else { return (.failed, previous) }
        guard FileManager.default.fileExists(atPath: file) else { return (.noData, previous) }
        guard let value = try? Plist.read(contentsOf: file), let settings = try? PlistDecoder().decode(Settings.self, from: value) else {
            return (.failed, previous)
        }
        let (lat, lon, spn) = (settings.lat, settings.lon, settings.spn)
        let traffic = settings.traffic ?? true
        let map = "https://static-maps.yandex.ru/1.x/?ll=\(lon),\(lat)&spn=\(spn),\(spn)&size=300,250&l=\(traffic ? "map,trf" : "map")"
        let snapshot = Snapshot(
            title: "Traffic", subtitle: String(format: "%.4f, %.4f", lat, lon), body: map,
            url: URL(string: "traffic://"), actions: [.toggle(intent: TrafficLayer(), isOn: traffic, iconName: "mark-location")],
            accessibilityLabel: "Traffic map around \(lat), \(lon)",
            extra: ["image-url": .string(map)])
        return (snapshot == previous ? .noData : .newData, snapshot)
    }
}
