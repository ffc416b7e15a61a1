import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore

/// todayctl's commands and the example apps (built with TodayKit) against
/// the real daemon serving the assembled examples.
@Suite(.showsDaemonLogs) struct ClientTests {
    static let todayctl = Paths.todayctl
    static let latestPost = "tech.agostini.app.LatestPost"
    static let traffic = "com.e-legion.Traffic.Widget"
    static let tram = "org.example.Tram.Departures"

    /// todayctl with the daemon's bus and XDG tree.
    func todayctl(_ daemon: TodayDaemon, _ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
        try await run(["env", "-i"] + environment(daemon).map { "\($0.key)=\($0.value)" } + [Self.todayctl] + arguments)
    }

    func environment(_ daemon: TodayDaemon) -> [String: String] {
        var environment = TodayDaemon.environment(home: daemon.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
        return environment
    }

    func json(_ text: String) throws -> PlistValue {
        try Plist.read(Data(text.utf8), allowJSON: true)
    }

    /// The tutorial loop: the apps save their content with TodayKit, the
    /// widgets (TodayKit providers) update, a tap reaches the running app.
    @Test func theExamplesEndToEnd() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let env = ["env", "-i"] + environment(daemon).map { "\($0.key)=\($0.value)" }

        // Nothing saved yet: the widgets have nothing new.
        #expect(try await client.widget(Self.latestPost, "PerformUpdate").body == [.string("no-data")])
        #expect(try await client.widget(Self.traffic, "PerformUpdate").body == [.string("no-data")])

        let saved = try await run(env + [Paths.examples + "/AgostiniTech.app/agostini-tech"])
        #expect(saved.output == "AgostiniTech: saved the latest post, 42: Creating Today Widgets\n", "\(saved.error)")
        let region = try await run(env + [Paths.examples + "/Traffic.app/traffic", "--lat", "55.7558", "--lon", "37.6173", "--span", "0.05"])
        #expect(region.status == 0, "\(region.error)")
        let settings = try Plist.read(contentsOf: daemon.home.path + "/data/todayd/groups/group.traffic/settings.dict")
        #expect(settings["lat"]?.double == 55.7558 && settings["spn"]?.double == 0.05)

        let update = try await todayctl(daemon, ["update", "--all"])
        #expect(update.status == 0, "\(update.error)")
        #expect(update.output.split(separator: "\n").map { String($0.dropFirst(6)) }.sorted() == [
            "com.e-legion.Traffic.Widget: new-data", "org.example.Tram.Departures: new-data", "tech.agostini.app.LatestPost: new-data",
        ])
        let post = try await client.property(Self.latestPost, "Snapshot").stringDictionary ?? [:]
        #expect(post["title"]?.unwrapped == .string("Creating Today Widgets"))
        #expect(post["url"]?.unwrapped == .string("agostiniTech://openPost?postID=42"))
        #expect(post["image"]?.unwrapped.data?.starts(with: [0x89, 0x50, 0x4e, 0x47]) == true)
        let map = try await client.property(Self.traffic, "Snapshot").stringDictionary ?? [:]
        #expect(map["image-url"]?.unwrapped == .string("https://static-maps.yandex.ru/1.x/?ll=37.6173,55.7558&spn=0.05,0.05&size=300,250&l=map,trf"))
        #expect(map["url"]?.unwrapped == .string("traffic://"))
        #expect(try await client.property(Self.traffic, "PreferredHeight") == .double(350))

        // The app keeps running; a tap on the widget reaches it, not a new process.
        let log = daemon.home.appendingPathComponent("agostini.log")
        let app = Process()
        app.executableURL = URL(fileURLWithPath: Paths.examples + "/AgostiniTech.app/agostini-tech")
        app.arguments = ["--serve"]
        app.environment = environment(daemon)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        app.standardOutput = handle
        try app.run()
        defer {
            kill(app.processIdentifier, SIGKILL)
            app.waitUntilExit()
        }
        var text = ""
        _ = try await eventually(5) {
            text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            return text.contains("waiting for posts")
        }
        #expect(try await client.widget(Self.latestPost, "Activate", [.vardict([])]).body == [.string("tech.agostini.app")])
        _ = try await eventually(5) {
            text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            return text.contains("showing post")
        }
        #expect(text.contains("AgostiniTech: showing post 42: Creating Today Widgets\n"), "\(text)")
        // Opened with the URL as its argument, the app shows the post and exits.
        let direct = try await run(env + [Paths.examples + "/AgostiniTech.app/agostini-tech", "agostiniTech://openPost?postID=41"])
        #expect(direct.output.hasPrefix("AgostiniTech: showing post 41: Sharing Data With App Groups\n"))
    }

    @Test func everyCommand() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }

        let list = try await todayctl(daemon, ["list"])
        #expect(list.status == 0)
        #expect(
            list.output
                == "\(Self.latestPost)\tLatest Post\tcontent\tnever updated\n\(Self.traffic)\tTraffic\tcontent\tnever updated\n"
                + "\(Self.tram)\tTram Departures\tcontent\tnever updated\n")
        let listed = try json(try await todayctl(daemon, ["list", "--json"]).output)
        #expect(listed.array?.compactMap { $0["id"]?.string } == [Self.latestPost, Self.traffic, Self.tram])

        // has-content as the app, then as a stranger.
        let hide = try await todayctl(daemon, ["has-content", Self.traffic, "false", "--as", "com.e-legion.Traffic"])
        #expect(hide.status == 0 && hide.output == "\(Self.traffic): has no content\n")
        let foreign = try await todayctl(daemon, ["has-content", Self.traffic, "true", "--as", "tech.agostini.app"])
        #expect(foreign.status == 1 && foreign.error.contains("only the widget or its container app"))
        #expect(try await todayctl(daemon, ["has-content", Self.traffic, "true"]).status == 2)

        // defaults, typed.
        let group = ["defaults", "group.agostini.tech.sharedData"]
        let me = ["--as", "tech.agostini.app"]
        for (key, value, type) in [("n", "42", "--int"), ("r", "2.5", "--real"), ("b", "true", "--bool"), ("d", "2026-11-29T12:00:00Z", "--date"), ("bytes", "AAEC", "--data"), ("s", "plain text", "")] {
            let set = try await todayctl(daemon, group + ["set", key, value] + (type.isEmpty ? [] : [type]) + me)
            #expect(set.status == 0, "\(key): \(set.error)")
        }
        #expect(try await todayctl(daemon, group + ["get", "n"] + me).output == "42\n")
        #expect(try await todayctl(daemon, group + ["get", "d"] + me).output == "2026-11-29T12:00:00Z\n")
        #expect(try await todayctl(daemon, group + ["get", "bytes"] + me).output == "<3 bytes: 000102>\n")
        let all = try json(try await todayctl(daemon, group + ["list", "--json"] + me).output)
        #expect(all["r"]?.double == 2.5 && all["b"]?.bool == true && all["s"]?.string == "plain text")
        #expect(try await todayctl(daemon, group + ["remove", "n"] + me).status == 0)
        let missing = try await todayctl(daemon, group + ["get", "n"] + me)
        #expect(missing.status == 1 && missing.error.contains("no key 'n'"))
        #expect(try await todayctl(daemon, group + ["set", "n", "many", "--int"] + me).status == 2)
        #expect(try await todayctl(daemon, group + ["list"]).status == 2)
        #expect(try await todayctl(daemon, group + ["list", "--as", "com.e-legion.Traffic"]).status == 1)

        // URLs.
        let resolved = try await todayctl(daemon, ["resolve", "agostiniTech://openPost?postID=40"])
        #expect(resolved.output == "tech.agostini.app\n")
        let resolvedJSON = try json(try await todayctl(daemon, ["resolve", "traffic://", "--json"]).output)
        #expect(resolvedJSON["handler"]?.string == "com.e-legion.Traffic")
        let unknown = try await todayctl(daemon, ["resolve", "nothing://here"])
        #expect(unknown.status == 1 && unknown.error.contains("no app handles 'nothing:' URLs"))
        let opened = try await todayctl(daemon, ["open", "traffic://"])
        #expect(opened.status == 0 && opened.output == "opened in com.e-legion.Traffic\n")

        // update and show; watch sees it happen.
        let watch = try Background(Self.todayctl, ["watch", "--json"], environment: environment(daemon))
        // Subscribed once it says so.
        #expect(try await read(watch.output) { $0.contains(#"{"event":"watching"}"#) }.contains("watching"))
        try await run(["env", "-i"] + environment(daemon).map { "\($0.key)=\($0.value)" } + [Paths.examples + "/AgostiniTech.app/agostini-tech"])
        let updated = try await todayctl(daemon, ["update", Self.latestPost])
        #expect(updated.output == "\(Self.latestPost): new-data\n")
        let shown = try await todayctl(daemon, ["show"])
        #expect(shown.output.hasPrefix("Latest Post (\(Self.latestPost))\n  Creating Today Widgets\n"), "\(shown.output)")
        #expect(shown.output.contains("updated just now"))
        #expect(shown.output.contains("(1 widget without content hidden"))
        let cards = try json(try await todayctl(daemon, ["show", Self.latestPost, "--json"]).output)
        #expect(cards.array?.first?["snapshot"]?["url"]?.string == "agostiniTech://openPost?postID=42")
        let text = try await read(watch.output) { $0.contains(#""event":"updated""#) && $0.contains(#""Snapshot""#) && $0.hasSuffix("\n") }
        watch.stop()
        let events = text.split(separator: "\n")
        let parsed = try events.map { try json(String($0)) }
        #expect(parsed.contains { $0["event"]?.string == "updated" && $0["object"]?.string == Self.latestPost && $0["result"]?.string == "new-data" }, "\(events)")
        #expect(parsed.contains { $0["event"]?.string == "changed" && $0["properties"]?["Snapshot"] != nil })

        // A provider that fails: exit 1 and the reason.
        let failing = try await todayctl(daemon, ["update", "nope.widget"])
        #expect(failing.status == 1 && failing.error.contains("no widget 'nope.widget'"))

        // Files.
        let lint = try json(try await todayctl(daemon, ["lint", Paths.examples, "--json"]).output)
        #expect(lint["checked"]?.int64 == 3 && lint["problems"]?.array?.isEmpty == true)
        let plist = try await todayctl(daemon, ["plist", Paths.examples + "/Traffic.app/Info.plist", "--to", "json"])
        #expect(try json(plist.output)["CFBundleIdentifier"]?.string == "com.e-legion.Traffic")

        // run-provider: outside todayd, same protocol.
        let provider = try json(try await todayctl(daemon, ["run-provider", Self.latestPost, "--bundles", Paths.examples, "--json"]).output)
        #expect(provider["result"]?.string == "no-data")

        // Usage.
        #expect(try await todayctl(daemon, ["frobnicate"]).status == 2)
        #expect(try await todayctl(daemon, []).status == 2)
        let help = try await todayctl(daemon, ["update", "--help"])
        #expect(help.status == 0 && help.output.hasPrefix("usage: todayctl [--address ADDR] [--json] update WIDGET | update --all"))
        let noBus = try await run(["env", "-i", Self.todayctl, "list"])
        #expect(noBus.status == 2 && noBus.error.contains("DBUS_SESSION_BUS_ADDRESS"))
        let gone = try await run(["env", "-i", "DBUS_SESSION_BUS_ADDRESS=" + daemon.address, Self.todayctl, "--address", "unix:path=/nonexistent", "list"])
        #expect(gone.status == 1)
    }

    /// docs/examples/today-applet.py runs as the applet guide shows.
    @Test func theDocsAppletRuns() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let env = ["env", "-i"] + environment(daemon).map { "\($0.key)=\($0.value)" }
        try await run(env + [Paths.examples + "/AgostiniTech.app/agostini-tech"])
        let applet = try await run(env + ["/usr/bin/python3", Paths.root.appendingPathComponent("docs/examples/today-applet.py").path, "1"])
        // The updates run concurrently: their PropertiesChanged come in any order.
        let lines = applet.output.split(separator: "\n").map(String.init)
        #expect(lines.prefix(6) == [
            "[Latest Post] (no snapshot yet)", "[Traffic] (no snapshot yet)", "[Tram Departures] (no snapshot yet)",
            "update com.e-legion.Traffic.Widget: no-data", "update org.example.Tram.Departures: new-data",
            "update tech.agostini.app.LatestPost: new-data",
        ], "\(applet.output) \(applet.error)")
        #expect(lines.dropFirst(6).sorted() == [
            "changed: org_2eexample_2eTram_2eDepartures -> No more trams",
            "changed: tech_2eagostini_2eapp_2eLatestPost -> Creating Today Widgets",
        ], "\(applet.output) \(applet.error)")
    }
}
