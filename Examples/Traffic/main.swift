// The Traffic app: takes a map region and leaves it in the group.traffic
// container as settings.dict for its widget, as the tutorial's
// updateWidgetButtonTapped does.
//
//   traffic --lat 55.7558 --lon 37.6173 --span 0.05   show this region in the widget
//   traffic [--serve] [traffic://…]                   open the app (as a tap on the widget does)
import Foundation
import PropertyList
import TodayKit

let groupID = "group.traffic"
let widgetID = "com.e-legion.Traffic.Widget"

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("traffic: \(message)\n".utf8))
    exit(2)
}

var region: [String: Double] = [:]
var serve = false
var iterator = CommandLine.arguments.dropFirst().makeIterator()
while let argument = iterator.next() {
    switch argument {
    case "--lat", "--lon", "--span":
        guard let text = iterator.next(), let value = Double(text) else { fail("\(argument) needs a number") }
        region[argument == "--span" ? "spn" : String(argument.dropFirst(2))] = value
    case "--serve": serve = true
    case "--help":
        say("usage: traffic --lat LAT --lon LON --span DEGREES | traffic [--serve] [traffic://]")
        exit(0)
    default:
        if argument.hasPrefix("traffic:") { continue }
        fail("unknown argument '\(argument)'")
    }
}

for url in TodayApplication.launchURLs { say("Traffic: opened by \(url.absoluteString)") }

if !region.isEmpty {
    guard let lat = region["lat"], let lon = region["lon"], let spn = region["spn"] else {
        fail("give --lat, --lon and --span together")
    }
    guard (-90...90).contains(lat), (-180...180).contains(lon), spn > 0, spn <= 90 else { fail("that is not a region on the map") }
    guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupID) else {
        fail("cannot reach the \(groupID) container; is todayd running?")
    }
    let file = container.appendingPathComponent("settings.dict")
    // The widget's own setting (its traffic-layer toggle) stays as it is.
    var settings = (try? Plist.read(contentsOf: file.path))?.dictionary ?? [:]
    settings["spn"] = .real(spn)
    settings["lat"] = .real(lat)
    settings["lon"] = .real(lon)
    do {
        try Plist.write(.dictionary(settings), format: .xml).write(to: file, options: .atomic)
    } catch {
        fail("cannot write settings.dict: \(error)")
    }
    WidgetController.widgetController().setHasContent(true, forWidgetWithBundleIdentifier: widgetID)
    say("Traffic: the widget shows \(lat), \(lon) (span \(spn))")
}

if serve {
    let app = try TodayApplication()
    app.onOpen { url in say("Traffic: opened by \(url.absoluteString)") }
    app.onActivate { say("Traffic: activated") }
    try await app.run()
}
