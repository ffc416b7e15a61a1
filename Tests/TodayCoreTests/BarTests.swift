import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// `todayctl bar` (SPEC section 13): each bar's protocol, and the real
/// command following todayd live, its clicks reaching Activate.
@Suite(.showsDaemonLogs) struct BarTests {
    static let todayctl = Paths.todayctl

    /// A running `todayctl bar`, its lines read as they come.
    final class Running: @unchecked Sendable {
        // @unchecked: `lines` is behind its lock; the rest is set in init.
        let process = Process()
        let input = Pipe()
        let lines = Locked<[String]>([])

        init(_ arguments: [String], address: String) throws {
            process.executableURL = URL(fileURLWithPath: BarTests.todayctl)
            process.arguments = ["--address", address, "bar"] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = input
            process.standardError = FileHandle.nullDevice
            output.fileHandleForReading.readabilityHandler = { [lines] handle in
                let text = String(decoding: handle.availableData, as: UTF8.self)
                lines.withLock { $0 += text.split(separator: "\n").map(String.init) }
            }
            try process.run()
        }

        /// Waits up to 5 s for a line for which `matching` holds.
        func line(_ matching: (String) -> Bool) async throws -> String? {
            _ = try await eventually(5) { lines.value.contains(where: matching) }
            return lines.value.last(where: matching)
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }

    static func widget(_ snapshot: PlistDictionary, result: String = "new-data", updated: UInt64 = 1_796_119_200_000_000, interval: UInt32 = 0, hasContent: Bool = true) -> TodayCard {
        TodayCard(
            id: "org.example.Bar.W",
            properties: [
                "DisplayName": .string("Weather"), "HasContent": .boolean(hasContent), "Snapshot": ValueMapping.dbus(snapshot),
                "LastResult": .string(result), "LastFailure": .string(result == "failed" ? "exit 3" : ""), "LastUpdated": .uint64(updated),
                "UpdateInterval": .uint32(interval), "IconPath": .string(""),
            ])
    }

    @Test func eachBarsProtocol() throws {
        let now = Date(timeIntervalSince1970: 1_796_119_500)
        let sunny = Self.widget(["title": .string("Sunny & 20°"), "body": .string("Light wind"), "items": .array([.dictionary(["title": .string("Tomorrow"), "subtitle": .string("rain")])])])
        let waybar = try Plist.read(Data(BarFormat.waybar.line([sunny], at: now).utf8), allowJSON: true)
        #expect(waybar["text"] == .string("Sunny & 20°"))
        #expect(waybar["tooltip"] == .string("Weather\nLight wind\n• Tomorrow (rain)"))
        #expect(waybar["class"] == .array([.string("has-content")]))
        #expect(waybar["alt"] == .string("org.example.Bar.W"))
        // Failed, and stale: older than twice its interval.
        let failedStale = Self.widget(["title": .string("Old")], result: "failed", interval: 60)
        let classes = try Plist.read(Data(BarFormat.waybar.line([failedStale], at: now).utf8), allowJSON: true)["class"]
        #expect(classes == .array([.string("failed"), .string("has-content"), .string("stale")]))
        #expect(failedStale.staleAt == Date(timeIntervalSince1970: 1_796_119_320))
        // Without content: the empty module that hides it, in each protocol.
        let hidden = Self.widget(["title": .string("x")], hasContent: false)
        #expect(try Plist.read(Data(BarFormat.waybar.line([hidden]).utf8), allowJSON: true)["text"] == .string(""))
        #expect(BarFormat.i3bar.line([hidden]) == "[],")
        #expect(BarFormat.polybar.line([hidden]) == "")
        #expect(BarFormat.genmon.line([hidden]) == "<txt></txt>")
        // i3bar: a header with click_events, then arrays of blocks.
        #expect(BarFormat.i3bar.header == "{\"version\": 1, \"click_events\": true}\n[")
        let blocks = try Plist.read(Data(String(BarFormat.i3bar.line([sunny, failedStale], at: now).dropLast()).utf8), allowJSON: true)
        #expect(blocks.array?.map { $0["instance"] } == [.string("org.example.Bar.W"), .string("org.example.Bar.W")])
        #expect(blocks.array?.last?["color"] == .string("#ff6c6b"))
        // polybar: an action tag that calls Activate; % doubled.
        let percent = Self.widget(["title": .string("50% cloud")])
        #expect(BarFormat.polybar.line([percent]) == "%{A1:\(percent.clickCommand):}50%% cloud%{A}")
        #expect(!percent.clickCommand.contains(":"))
        // genmon: markup escaped.
        #expect(BarFormat.genmon.line([sunny]).hasPrefix("<txt>Sunny &amp; 20°</txt><tool>Weather\nLight wind"))
    }

    @Test func followsTodaydAndClicksActivate() async throws {
        let out = try temporaryDirectory("bar")
        defer { try? FileManager.default.removeItem(at: out) }
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try URLTests.addApp(
            bundles, "org.example.Bar", name: "Bar", schemes: ["barclick"], script: URLTests.recorder(out, "clicked"),
            widgets: [.init(name: "W", script: #"echo '{"result": "new-data", "snapshot": {"title": "Hello", "url": "barclick://tapped", "actions": [{"id": "pin", "title": "Pin", "kind": "button"}]}}'"#)])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let id = "org.example.Bar.W"

        let i3bar = try Running(["--format", "i3bar"], address: daemon.address)
        defer { i3bar.stop() }
        let waybar = try Running(["--format", "waybar", id], address: daemon.address)
        defer { waybar.stop() }
        #expect(try await i3bar.line { $0.contains("click_events") } != nil)
        #expect(try await waybar.line { $0.contains("\"text\":\"W\"") } != nil, "\(waybar.lines.value)")

        try await client.widget(id, "PerformUpdate")
        #expect(try await i3bar.line { $0.contains("\"full_text\":\"Hello\"") } != nil, "\(i3bar.lines.value)")
        #expect(try await waybar.line { $0.contains("\"text\":\"Hello\"") } != nil, "\(waybar.lines.value)")

        // A click on the block calls Activate, which opens the snapshot's URL.
        i3bar.input.fileHandleForWriting.write(Data("[\n{\"name\":\"todayd\",\"instance\":\"\(id)\",\"button\":1}\n".utf8))
        #expect(try await URLTests.lines(out.appendingPathComponent("clicked")) == ["1|barclick://tapped|"])
        // A right click presses the snapshot's first action.
        let performed = Locked<[String]>([])
        try await client.subscribe(MatchRule(path: Today.widgetPath(id), interface: Today.widget.name, member: MemberName("ActionPerformed"))) { message in
            performed.withLock { $0 += message.body.compactMap(\.string) }
        }
        i3bar.input.fileHandleForWriting.write(Data(",{\"name\":\"todayd\",\"instance\":\"\(id)\",\"button\":3}\n".utf8))
        _ = try await eventually(5) { !performed.value.isEmpty }
        #expect(performed.value == ["pin", "new-data"])

        // No content: the empty module.
        try await client.center("RegisterApp", [.string("org.example.Bar")])
        try await client.center("SetHasContent", [.boolean(false), .string(id)])
        #expect(try await i3bar.line { $0 == "[]," } != nil, "\(i3bar.lines.value)")
        #expect(try await waybar.line { $0.contains("\"class\": \"empty\"") } != nil, "\(waybar.lines.value)")
        #expect(i3bar.process.isRunning && waybar.process.isRunning)

        // --once prints one line and ends.
        let once = try await run([Self.todayctl, "--address", daemon.address, "bar", "--format", "waybar", "--once"])
        #expect(once.status == 0 && once.output.split(separator: "\n").count == 1, "\(once)")
    }

    @Test func keepsItsLineWhileTodaydRestarts() async throws {
        // The bus outlives todayd, as a session bus does; the bar keeps
        // running, keeps its last line while todayd is away, and follows
        // the new todayd (its new unique name) once it is back.
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // The title, in the app's bundle, which a sandboxed provider sees.
        let title = bundles.url.appendingPathComponent("org.example.Again.app/title")
        try bundles.addApp("org.example.Again", widgets: [
            .init(name: "W", script: "cat > /dev/null; printf '{\"result\": \"new-data\", \"snapshot\": {\"title\": \"%s\"}}' \"$(cat \(title.path))\"")
        ])
        try Data("Before".utf8).write(to: title)
        let home = try temporaryDirectory("restart")
        defer { try? FileManager.default.removeItem(at: home) }
        let id = "org.example.Again.W"
        let first = try TodayDaemon(bundles: [bundles.path], home: home, address: bus.address)
        let client = try await first.ready()
        defer { client.close() }
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("new-data")])

        let waybar = try Running(["--format", "waybar", id], address: bus.address)
        defer { waybar.stop() }
        #expect(try await waybar.line { $0.contains("\"text\":\"Before\"") } != nil, "\(waybar.lines.value)")
        first.stop(keepHome: true)
        // An absence: the bar does not exit, nor print, in the half second after todayd has gone.
        try await Task.sleep(for: .milliseconds(500))
        #expect(waybar.process.isRunning, "the bar waits through a restart")
        #expect(waybar.lines.value.last?.contains("\"text\":\"Before\"") == true, "the last line stays: \(waybar.lines.value)")

        try Data("After".utf8).write(to: title)
        let second = try TodayDaemon(bundles: [bundles.path], home: home, address: bus.address)
        defer { second.stop() }
        _ = try await second.ready()
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("new-data")])
        #expect(try await waybar.line { $0.contains("\"text\":\"After\"") } != nil, "\(waybar.lines.value)")
    }
}
