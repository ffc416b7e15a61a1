import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The Tram example, written the WidgetKit way (a TimelineProvider, and
/// WidgetCenter.reloadAllTimelines from the app), end to end on a real bus:
/// the app adds departures a few seconds apart, the widget's timeline has
/// one entry per departure, and the content changes as trams leave with no
/// provider run in between.
@Suite(.showsDaemonLogs) struct TramExampleTests {
    static let widget = "org.example.Tram.Departures"

    @Test func theContentChangesAsTramsLeave() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let titles = Locked<[String]>([])
        let updates = Locked(0)
        try await client.subscribe(
            MatchRule(path: Today.widgetPath(Self.widget), interface: .properties, member: MemberName("PropertiesChanged"))
        ) { message in
            let changed = message.body.dropFirst().first?.stringDictionary ?? [:]
            if let title = changed["Snapshot"]?.unwrapped.stringDictionary?["title"]?.unwrapped.string { titles.withLock { $0.append(title) } }
        }
        try await client.subscribe(MatchRule(path: Today.widgetPath(Self.widget), interface: Today.widget.name, member: MemberName("Updated"))) {
            _ in updates.withLock { $0 += 1 }
        }
        var environment = TodayDaemon.environment(home: daemon.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
        let env = ["env", "-i"] + environment.map { "\($0.key)=\($0.value)" }
        let tram = Paths.examples + "/Tram.app/tram"
        // An outside client sees the same switches: gdbus monitor, for the test's length.
        async let monitor = run(
            ["timeout", "-s", "KILL", "30", "gdbus", "monitor", "--address", daemon.address, "--dest", Today.busName.rawValue,
             "--object-path", Today.widgetPath(Self.widget).rawValue], timeout: 40)

        // And `todayctl watch`, whose line for a switch must not carry a
        // time before the entry's date.
        let watch = try Background(Paths.todayctl, ["watch"], environment: environment.merging(["TZ": "UTC"]) { $1 })
        defer { watch.stop() }
        // Subscribed once it says so.
        #expect(try await read(watch.output) { $0.contains("watching todayd") }.contains("watching"))

        // Each edit asks for a new timeline (ReloadAllTimelines): one
        // update each, as the edits come one after the other. Departures
        // 13 and 16 s away: on a loaded machine the two edits and their
        // updates can take seconds, and the first tram must still be ahead
        // when the timeline is read.
        for (count, (seconds, line, destination)) in [("13", "4", "Central"), ("16", "11", "Harbour")].enumerated() {
            let added = try await run(env + [tram, "add", seconds, line, destination])
            #expect(added.status == 0 && added.error.isEmpty, "\(added.error)")
            _ = try await eventually(2) { updates.value > count }
        }
        let failure = try await client.property(Self.widget, "LastFailure")
        #expect(updates.value == 2, "one update per edit; \(failure)")

        let entries = try await client.widget(Self.widget, "GetTimeline").body.first?.elements ?? []
        let shown = entries.compactMap { entry -> String? in
            guard case .structure(let fields) = entry, fields.count == 3 else { return nil }
            return fields[1].stringDictionary?["title"]?.unwrapped.string
        }
        let result = try await client.property(Self.widget, "LastResult")
        #expect(shown == ["Line 4 to Central", "Line 11 to Harbour", "No more trams"], "\(shown) \(entries) \(result) \(failure)")
        #expect(try await client.property(Self.widget, "ReloadPolicy") == .string("at-end"))
        let relevance = try await client.property(Self.widget, "Relevance").double ?? 0
        #expect(relevance > 0.99 && relevance <= 1, "the next tram is minutes away: \(relevance)")
        let updated = try await client.property(Self.widget, "LastUpdated")

        // The trams leave: the snapshot follows, with no provider run.
        _ = try await eventually(20) { titles.value.contains("No more trams") }
        #expect(titles.value.suffix(2) == ["Line 11 to Harbour", "No more trams"], "\(titles.value)")
        let updatedAfter = try await client.property(Self.widget, "LastUpdated")
        #expect(updates.value == 2 && updatedAfter == updated, "no provider ran")
        #expect(try await client.property(Self.widget, "NextEntryDate") == .uint64(0))

        // A tap opens the departure in the app.
        let url = try await client.property(Self.widget, "Snapshot").stringDictionary?["url"]?.unwrapped.string
        #expect(url == "tram://")
        let list = try await run(env + [tram, "list"])
        #expect(list.output.split(separator: "\n").count == 2, "\(list.output)")
        // "HH:MM:SS org.example.Tram.Departures: CurrentEntryDate=YYYY-MM-DDTHH:MM:SSZ … Snapshot=…"
        let lines = try await read(watch.output, until: { $0.contains("No more trams") && $0.hasSuffix("\n") })
            .split(separator: "\n").filter { $0.contains("CurrentEntryDate=") && !$0.contains("LastUpdated=") }
        #expect(lines.count >= 2, "the two switches: \(lines)")
        for line in lines {
            let printed = line.prefix(8)
            let entry = line.split(separator: " ").first { $0.hasPrefix("CurrentEntryDate=") }?.split(separator: "T").last?.prefix(8)
            #expect(entry.map { printed >= $0 } == true, "a switch printed before its entry's date: \(line)")
        }
        let monitored = try await monitor.output.split(separator: "\n").filter { $0.contains("PropertiesChanged") }
        #expect(monitored.contains { $0.contains("'Snapshot': <{") && $0.contains("'Line 11 to Harbour'") }, "\(monitored)")
        #expect(monitored.contains { $0.contains("'No more trams'") && !$0.contains("LastUpdated") }, "switched, not updated: \(monitored)")
    }

    /// The Tram widget as a configurable widget (TodayKit's
    /// AppIntentTimelineProvider): a second instance follows one line, its
    /// choices of line come from the app's departures (perform-options),
    /// the gallery's preview is the sample, and the app reads what is
    /// placed (WidgetCenter's current configurations).
    @Test func aSecondWidgetFollowsOneLine() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        var environment = TodayDaemon.environment(home: daemon.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
        let env = ["env", "-i"] + environment.map { "\($0.key)=\($0.value)" }
        let tram = Paths.examples + "/Tram.app/tram"
        for (seconds, line, destination) in [("300", "4", "Central"), ("400", "11", "Harbour"), ("500", "4", "Central")] {
            let added = try await run(env + [tram, "add", seconds, line, destination])
            #expect(added.status == 0, "\(added.error)")
        }
        let kind = WidgetInstanceID(kind: BundleID("org.example.Tram.Departures"))
        let options = try await client.call(Today.busName, path: kind.path, interface: Today.widget.name, member: MemberName("GetOptions"), [.string("line")])
        let lines = (options.body.first?.elements ?? []).compactMap { $0.stringDictionary?["title"]?.string }
        #expect(lines == ["Every line", "Line 11", "Line 4"])

        let added = try await client.center(
            "AddWidget", [.string(Self.widget), VariantDictionary([("line", .string("11"))]).value, .string("small"), .int32(-1)])
        guard case .objectPath(let path)? = added.body.first, let eleven = WidgetInstanceID(path: path) else {
            Issue.record("no instance")
            return
        }
        func title(_ id: WidgetInstanceID) async throws -> String {
            let reply = try await client.call(
                Today.busName, path: id.path, interface: .properties, member: MemberName("Get"), [.string(Today.widget.name.rawValue), .string("Snapshot")])
            return reply.body.first?.unwrapped.stringDictionary?["title"]?.string ?? ""
        }
        #expect(try await eventually(15) { try await title(eleven) == "Line 11 to Harbour" })
        _ = try await client.center("PerformUpdate", [.string(Self.widget)])
        #expect(try await title(kind) == "Line 4 to Central")
        let later = try await client.call(Today.busName, path: eleven.path, interface: Today.widget.name, member: MemberName("GetTimeline"))
        #expect(later.body.first?.elements?.count == 2, "line 11's tram, then none: \(later.body)")

        let preview = try await client.call(
            Today.busName, path: kind.path, interface: Today.widget.name, member: MemberName("GetPreview"),
            [VariantDictionary([]).value, .string("")])
        #expect(preview.body.first?.stringDictionary?["title"]?.string == "Line 4 to Central" && preview.body.first?.stringDictionary?["body"]?.string == "2 more after it")

        let placed = try await run(env + [tram, "placed"])
        #expect(placed.output == "Tram: a medium widget follows every line\nTram: a small widget follows line 11\n", "\(placed)")
    }
}
