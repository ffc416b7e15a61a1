// The Traffic widget: a static traffic map of the region the Traffic app
// left in settings.dict, 350 points high with zero margins (Info.plist); a
// tap opens traffic://.
import Foundation
import PropertyList
import TodayKit

/// The region the app leaves in settings.dict.
struct Settings: Decodable {
    var lat: Double
    var lon: Double
    var spn: Double
}

@main
struct TrafficWidget: WidgetProviding {
    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.traffic") else {
            return (.failed, previous)
        }
        let file = container.appendingPathComponent("settings.dict").path
        guard FileManager.default.fileExists(atPath: file) else { return (.noData, previous) }
        guard let value = try? Plist.read(contentsOf: file), let settings = try? PlistDecoder().decode(Settings.self, from: value) else {
            return (.failed, previous)
        }
        let (lat, lon, spn) = (settings.lat, settings.lon, settings.spn)
        let map = "https://static-maps.yandex.ru/1.x/?ll=\(lon),\(lat)&spn=\(spn),\(spn)&size=300,250&l=map,trf"
        let snapshot = Snapshot(
            title: "Traffic", subtitle: String(format: "%.4f, %.4f", lat, lon), body: map,
            url: URL(string: "traffic://"), accessibilityLabel: "Traffic map around \(lat), \(lon)",
            extra: ["image-url": .string(map)])
        return (snapshot == previous ? .noData : .newData, snapshot)
    }
}
