import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The examples' buttons and toggles, written as TodayKit intents, end to
/// end on a real bus: LatestPost's "Mark as read" marks the post read in the
/// app group, where the app sees it; Traffic's "Traffic layer" toggle
/// flips at once and changes the map.
@Suite(.showsDaemonLogs) struct ExampleActionTests {
    static let latestPost = "tech.agostini.app.LatestPost"
    static let traffic = "com.e-legion.Traffic.Widget"

    func actions(_ client: Connection, _ widget: String) async throws -> [PlistDictionary] {
        let snapshot = try await client.property(widget, "Snapshot")
        return ((try ValueMapping.plist(snapshot)).dictionary?["actions"]?.array ?? []).compactMap(\.dictionary)
    }

    /// todayd serving the examples, both apps run once (AgostiniTech's
    /// post, Traffic's region) and both widgets updated; `env` starts a
    /// program in the daemon's session. The caller stops the daemon and
    /// closes the client.
    static func examplesUpdated() async throws -> (daemon: TodayDaemon, client: Connection, env: [String]) {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        do {
            let client = try await daemon.ready()
            var environment = TodayDaemon.environment(home: daemon.home)
            environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
            let env = ["env", "-i"] + environment.map { "\($0.key)=\($0.value)" }
            _ = try await run(env + [Paths.examples + "/AgostiniTech.app/agostini-tech"])
            _ = try await run(env + [Paths.examples + "/Traffic.app/traffic", "--lat", "55.7558", "--lon", "37.6173", "--span", "0.05"])
            for widget in [latestPost, traffic] {
                #expect(try await client.widget(widget, "PerformUpdate").body == [.string("new-data")])
            }
            return (daemon, client, env)
        } catch {
            daemon.stop()
            throw error
        }
    }

    @Test func theExamplesButtonAndToggle() async throws {
        let (daemon, client, env) = try await Self.examplesUpdated()
        defer { daemon.stop() }
        defer { client.close() }

        // LatestPost: the button, pressed, marks the post read; the widget
        // then says so and offers no button, and the app sees it.
        #expect(try await actions(client, Self.latestPost).map { $0["id"]?.string } == ["mark-as-read"])
        let pressed = try await client.widget(Self.latestPost, "PerformAction", [.string("mark-as-read"), .vardict([])])
        let pressFailure = try await client.property(Self.latestPost, "LastFailure")
        #expect(pressed.body == [.string("new-data")], "\(pressFailure)")
        let snapshot = try await client.property(Self.latestPost, "Snapshot").stringDictionary ?? [:]
        #expect(snapshot["subtitle"]?.unwrapped.string == "Read")
        #expect(try await actions(client, Self.latestPost).isEmpty)
        let app = try await run(env + [Paths.examples + "/AgostiniTech.app/agostini-tech"])
        #expect(app.output.contains("you have read post 42"), "\(app.output)")
        let opened = try await run(env + [Paths.examples + "/AgostiniTech.app/agostini-tech", "agostiniTech://openPost?postID=42"])
        #expect(opened.output.contains("showing post 42: Creating Today Widgets (read)"), "\(opened.output)")

        // Traffic: the toggle is on with the traffic layer; off, the map
        // has no traffic, and the state shown is the widget's own.
        let toggle = try await actions(client, Self.traffic)
        #expect(toggle.map { $0["id"]?.string } == ["traffic-layer"] && toggle.first?["state"]?.bool == true)
        #expect(try await client.property(Self.traffic, "Snapshot").stringDictionary?["body"]?.unwrapped.string?.hasSuffix("&l=map,trf") == true)
        let flipped = try await client.widget(Self.traffic, "PerformAction", [.string("traffic-layer"), .vardict([])])
        let flipFailure = try await client.property(Self.traffic, "LastFailure")
        #expect(flipped.body == [.string("new-data")], "\(flipFailure)")
        #expect(try await actions(client, Self.traffic).first?["state"]?.bool == false)
        #expect(try await client.property(Self.traffic, "Snapshot").stringDictionary?["body"]?.unwrapped.string?.hasSuffix("&l=map") == true)
        // Setting another region keeps the widget's layer setting.
        _ = try await run(env + [Paths.examples + "/Traffic.app/traffic", "--lat", "59.9", "--lon", "30.3", "--span", "0.05"])
        #expect(try await client.widget(Self.traffic, "PerformUpdate").body == [.string("new-data")])
        #expect(try await actions(client, Self.traffic).first?["state"]?.bool == false)
        // And on again.
        _ = try await client.widget(Self.traffic, "PerformAction", [.string("traffic-layer"), .vardict([])])
        #expect(try await client.property(Self.traffic, "Snapshot").stringDictionary?["body"]?.unwrapped.string?.hasSuffix("&l=map,trf") == true)
    }
}
