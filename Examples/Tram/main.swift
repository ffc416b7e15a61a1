// The Tram app: keeps the stop's departures in the group.tram container
// for its widget, and asks for a new timeline after every edit, as a
// WidgetKit app calls WidgetCenter.shared.reloadAllTimelines().
//
//   tram add SECONDS LINE DESTINATION   a departure SECONDS from now
//   tram clear                          no more departures
//   tram list                           the departures, in order
//   tram placed                         the Departures widgets the user
//                                       placed, and the line each follows
//                                       (WidgetCenter's current configurations)
//   tram [tram://…]                     open the app (as a tap on the widget
//                                       does): it runs a while, and the
//                                       answers to its reminders reach it
import Foundation
import PropertyList
import TramShared
import TodayKit

let groupID = "group.tram"

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tram: \(message)\n".utf8))
    exit(2)
}

func departuresFile() -> URL {
    guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: groupID) else {
        fail("cannot reach the \(groupID) container; is todayd running?")
    }
    return container.appendingPathComponent("departures.plist")
}

func save(_ departures: [Departure]) {
    do {
        try Plist.write(.array(departures.map(\.plist)), format: .xml).write(to: departuresFile(), options: .atomic)
    } catch {
        fail("cannot write departures.plist: \(error)")
    }
    WidgetCenter.shared.reloadAllTimelines()
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "add":
    guard arguments.count == 4, let seconds = TimeInterval(arguments[1]), seconds >= 0 else {
        fail("usage: tram add SECONDS LINE DESTINATION")
    }
    var departures = Departure.read(from: departuresFile())
    departures.append(Departure(date: Date().addingTimeInterval(seconds), line: arguments[2], destination: arguments[3]))
    departures.sort { $0.date < $1.date }
    save(departures)
    say("Tram: line \(arguments[2]) to \(arguments[3]) in \(Int(seconds)) s")
case "clear":
    save([])
    say("Tram: no more departures")
case "list":
    for departure in Departure.read(from: departuresFile()) {
        say("\(departure.date.formatted(date: .omitted, time: .standard))  \(departure.line)  \(departure.destination)")
    }
case "placed":
    do {
        for placed in try await WidgetCenter.shared.currentConfigurations(ofKind: "org.example.Tram.Departures") {
            let line = placed.configuration["line"]?.string ?? ""
            say("Tram: a \(placed.family.rawValue) widget follows \(line.isEmpty ? "every line" : "line " + line)")
        }
    } catch {
        fail("cannot read the placed widgets: \(error)")
    }
case let other? where !other.hasPrefix("tram:"):
    fail("unknown command '\(other)'; see the comment at the top of Examples/Tram/main.swift")
default:
    try await runApp()
}

/// Hears the answers to the widget's reminders
/// (userNotificationCenter(_:didReceive:)).
final class ReminderAnswers: UNUserNotificationCenterDelegate {
    let app: TodayApplication

    init(app: TodayApplication) {
        self.app = app
    }

    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        let info = response.notification.request.content.userInfo
        let tram = "line \(info["line"] as? String ?? "?") to \(info["destination"] as? String ?? "?")"
        switch response.actionIdentifier {
        case Reminder.onMyWay: say("Tram: on my way to \(tram)")
        case Reminder.message: say("Tram: message for \(tram): \((response as? UNTextInputNotificationResponse)?.userText ?? "")")
        case UNNotificationDefaultActionIdentifier: say("Tram: reminder for \(tram) opened")
        default: say("Tram: \(response.actionIdentifier) for \(tram)")
        }
        app.stop()
    }
}

/// Runs the app: taps on the widget and answers to its reminders arrive
/// while it runs; it ends after an answer, or after half a minute.
func runApp() async throws {
    let app = try TodayApplication()
    let answers = ReminderAnswers(app: app)
    UNUserNotificationCenter.current().delegate = answers
    app.onOpen { url in say("Tram: opened by \(url.absoluteString)") }
    Task {
        try? await Task.sleep(for: .seconds(30))
        app.stop()
    }
    try await app.run()
    withExtendedLifetime(answers) {}
}
