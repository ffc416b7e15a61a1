import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore

/// OpenURL, ResolveURL and Widget.Activate through the real daemon.
@Suite(.showsDaemonLogs) struct URLTests {
    /// A folder where launched apps write what they were given.
    static func recorder(_ folder: URL, _ name: String) -> String {
        "printf '%s|' \"$#\" \"$@\" >> \"\(folder.path)/\(name)\"; echo >> \"\(folder.path)/\(name)\""
    }

    /// Waits for `file` and returns its lines.
    static func lines(_ file: URL) async throws -> [String] {
        var lines: [String] = []
        _ = try await eventually(5) {
            guard let text = try? String(contentsOf: file, encoding: .utf8), text.hasSuffix("\n") else { return false }
            lines = text.split(separator: "\n").map(String.init)
            return true
        }
        return lines
    }

    /// An app bundle with an executable and URL schemes.
    static func addApp(_ bundles: BundleFolder, _ id: String, name: String, schemes: [String], script: String, widgets: [BundleFolder.Widget] = []) throws {
        try bundles.addApp(id, name: name, widgets: widgets)
        let app = bundles.url.appendingPathComponent("\(name).app")
        try BundleRuleTests.writePlist(app.appendingPathComponent("Info.plist")) {
            $0["CFBundleExecutable"] = .string("app")
            $0["CFBundleDisplayName"] = .string(name)
            $0["CFBundleURLTypes"] = .array([.dictionary(["CFBundleURLSchemes": .array(schemes.map(PlistValue.string))])])
        }
        try writeExecutable("#!/bin/sh\n\(script)\n", to: app.appendingPathComponent("app").path)
    }

    func errorName(_ body: () async throws -> Void) async -> String { await IdentityTests.errorName(body) }

    @Test func validationAndNoHandler() async throws {
        let daemon = try TodayDaemon(bundles: [])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let invalid = "io.github.todayd.Today1.Error.InvalidURL"
        for bad in ["no scheme here", "1abc://x", "://x", "my app://x", "demo://a\u{7}b", "demo://a\nb", "file:///etc/passwd", "FILE:/tmp", "demo://" + String(repeating: "a", count: 8200)] {
            #expect(await errorName { try await client.center("OpenURL", [.string(bad), .vardict([])]) } == invalid, "\(bad.prefix(40))")
            #expect(await errorName { try await client.center("ResolveURL", [.string(bad)]) } == invalid, "\(bad.prefix(40))")
        }
        #expect(await errorName { try await client.center("ResolveURL", [.string("nobody://x")]) } == "io.github.todayd.Today1.Error.NoHandler")
    }

    @Test func eachStepInOrder() async throws {
        let out = try temporaryDirectory("opened")
        defer { try? FileManager.default.removeItem(at: out) }
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let listFDs = "ls /proc/self/fd | tr '\\n' ' ' > \"\(out.path)/fds\"\n"
        try Self.addApp(bundles, "org.example.Opener", name: "Opener", schemes: ["demo"], script: listFDs + Self.recorder(out, "bundle"))
        // A second bundle claims the same scheme: "Opener.app" sorts first and wins, every time.
        try Self.addApp(bundles, "org.example.Zebra", name: "Zebra", schemes: ["Demo"], script: Self.recorder(out, "zebra"))
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let url = "demo://openPost?postID=3&x=a;b c"

        // 2. The bundle's executable, the URL its one argument, no shell.
        for _ in 0..<3 { #expect(try await client.center("ResolveURL", [.string(url)]).body == [.string("org.example.Opener")]) }
        #expect(try await client.center("OpenURL", [.string(url), .vardict([])]).body == [.string("org.example.Opener")])
        #expect(try await Self.lines(out.appendingPathComponent("bundle")) == ["1|\(url)|"])
        // Standard input, output and error only (and ls's listing of the folder).
        #expect(try String(contentsOf: out.appendingPathComponent("fds"), encoding: .utf8) == "0 1 2 3 ")

        // 1. A running app that registered and exports org.freedesktop.Application.
        let app = try Connection(address: daemon.address)
        defer { app.close() }
        let received = Locked<[Value]>([])
        let application = Interface(
            InterfaceName("org.freedesktop.Application"),
            methods: [
                Method(MemberName("Open"), in: [Argument("uris", "as"), Argument("platform_data", "a{sv}")]),
                Method(MemberName("Activate"), in: [Argument("platform_data", "a{sv}")]),
                Method(MemberName("ActivateAction"), in: [Argument("action_name", "s"), Argument("parameter", "av"), Argument("platform_data", "a{sv}")]),
            ])
        app.objects.export(
            ObjectPath("/org/example/Opener"),
            [
                ExportedInterface(
                    application,
                    methods: [
                        "Open": { call in
                            received.withLock { $0.append(call.arguments[0]) }
                            return []
                        },
                        "Activate": { _ in [] }, "ActivateAction": { _ in [] },
                    ])
            ])
        // Not yet registered: still the bundle.
        #expect(try await client.center("ResolveURL", [.string(url)]).body == [.string("org.example.Opener")])
        try await app.center("RegisterApp", [.string("org.example.Opener")])
        #expect(try await client.center("OpenURL", [.string(url), .vardict([("activation-token", .string("t"))])]).body == [.string("org.example.Opener")])
        #expect(received.value == [.strings([url])])
        #expect(try await Self.lines(out.appendingPathComponent("bundle")).count == 1, "no second process")
        app.close()
        #expect(try await eventually(2) { try await client.center("ResolveURL", [.string(url)]).body == [.string("org.example.Opener")] })
    }

    @Test func desktopEntries() async throws {
        let out = try temporaryDirectory("opened")
        defer { try? FileManager.default.removeItem(at: out) }
        let daemon = try TodayDaemon(bundles: [])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let applications = daemon.home.appendingPathComponent("data/applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        let viewer = out.appendingPathComponent("viewer tool")
        try writeExecutable("#!/bin/sh\n\(Self.recorder(out, "viewer"))\n", to: viewer.path)
        try Data(
            """
            [Desktop Entry]
            Type=Application
            Name=Viewer
            Exec="\(viewer.path)" --from %c %u
            MimeType=x-scheme-handler/viewer;

            """.utf8
        ).write(to: applications.appendingPathComponent("org.example.Viewer.desktop"))
        // 3. The desktop entry, Exec expanded into an argv without a shell.
        let url = "viewer://item/42?q=$HOME;`id`"
        #expect(try await client.center("OpenURL", [.string(url), .vardict([])]).body == [.string("org.example.Viewer")])
        #expect(try await Self.lines(out.appendingPathComponent("viewer")) == ["3|--from|Viewer|\(url)|"])

        // DBusActivatable entries get Open on the name their id gives.
        let service = try Connection(address: daemon.address)
        defer { service.close() }
        let received = Locked<[Value]>([])
        service.objects.export(
            ObjectPath("/org/example/Activatable"),
            [
                ExportedInterface(
                    Interface(
                        InterfaceName("org.freedesktop.Application"),
                        methods: [Method(MemberName("Open"), in: [Argument("uris", "as"), Argument("platform_data", "a{sv}")])]),
                    methods: [
                        "Open": { call in
                            received.withLock { $0.append(call.arguments[0]) }
                            return []
                        }
                    ])
            ])
        _ = try await service.requestName(BusName("org.example.Activatable"), flags: [.doNotQueue])
        try Data("[Desktop Entry]\nType=Application\nName=A\nDBusActivatable=true\nExec=/bin/false %u\nMimeType=x-scheme-handler/act;\n".utf8)
            .write(to: applications.appendingPathComponent("org.example.Activatable.desktop"))
        #expect(try await client.center("OpenURL", [.string("act://now"), .vardict([])]).body == [.string("org.example.Activatable")])
        #expect(received.value == [.strings(["act://now"])])

        // An entry that would hand the URL back to todayd is refused.
        try Data("[Desktop Entry]\nType=Application\nName=Loop\nExec=todayctl open %u\nMimeType=x-scheme-handler/loop;\n".utf8)
            .write(to: applications.appendingPathComponent("loop.desktop"))
        #expect(await errorName { try await client.center("ResolveURL", [.string("loop://x")]) } == "io.github.todayd.Today1.Error.NoHandler")
    }

    @Test func bundlesGetDesktopEntriesForXdgOpen() async throws {
        let out = try temporaryDirectory("opened")
        defer { try? FileManager.default.removeItem(at: out) }
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try Self.addApp(bundles, "org.example.Xdg", name: "Xdg", schemes: ["xdgdemo"], script: Self.recorder(out, "xdg"))
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let entry = daemon.home.path + "/data/applications/todayd-org.example.Xdg.desktop"
        #expect(FileSystem.exists(entry))
        let validate = try await run(["desktop-file-validate", entry])
        #expect(validate.status == 0, "\(validate.output)\(validate.error)")
        var environment = TodayDaemon.environment(home: daemon.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
        environment["WAYLAND_DISPLAY"] = "wayland-test"
        let settings = environment.map { "\($0.key)=\($0.value)" }
        // mimeinfo.cache is refreshed in the background.
        _ = try await eventually { FileSystem.exists(daemon.home.path + "/data/applications/mimeinfo.cache") }
        let xdg = try await run(["env", "-i"] + settings + ["xdg-open", "xdgdemo://from-xdg-open"])
        #expect(xdg.status == 0, "\(xdg.error)")
        let gio = try await run(["env", "-i"] + settings + ["gio", "open", "xdgdemo://from-gio"])
        #expect(gio.status == 0, "\(gio.error)")
        #expect(try await Self.lines(out.appendingPathComponent("xdg")).sorted() == ["1|xdgdemo://from-gio|", "1|xdgdemo://from-xdg-open|"])

        // The entry goes with its bundle.
        try FileManager.default.removeItem(at: bundles.url.appendingPathComponent("Xdg.app"))
        try await client.center("Reload")
        #expect(!FileSystem.exists(entry))
    }

    @Test func activatingAWidget() async throws {
        let out = try temporaryDirectory("opened")
        defer { try? FileManager.default.removeItem(at: out) }
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try Self.addApp(
            bundles, "org.example.Tap", name: "Tap", schemes: ["tap"], script: Self.recorder(out, "tap"),
            widgets: [
                .init(name: "WithURL", script: #"echo '{"result": "new-data", "snapshot": {"title": "t", "url": "tap://openPost?postID=42"}}'"#),
                .init(name: "NoURL", script: #"echo '{"result": "new-data", "snapshot": {"title": "t"}}'"#),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        try await client.widget("org.example.Tap.WithURL", "PerformUpdate")
        try await client.widget("org.example.Tap.NoURL", "PerformUpdate")
        #expect(try await client.widget("org.example.Tap.WithURL", "Activate", [.vardict([])]).body == [.string("org.example.Tap")])
        #expect(try await Self.lines(out.appendingPathComponent("tap")) == ["1|tap://openPost?postID=42|"])
        try FileManager.default.removeItem(at: out.appendingPathComponent("tap"))
        #expect(try await client.widget("org.example.Tap.NoURL", "Activate", [.vardict([])]).body == [.string("org.example.Tap")])
        #expect(try await Self.lines(out.appendingPathComponent("tap")) == ["0|"])
    }
}

/// A handler that hands the URL back to todayd, whatever it is called, is
/// started once: the URL that comes back from it is refused.
@Suite(.showsDaemonLogs) struct URLLoopTests {
    @Test func aURLThatComesBackIsRefused() async throws {
        let home = try temporaryDirectory("loop")
        let todayctl = Paths.todayctl
        let applications = home.appendingPathComponent("data/applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        try Data(
            "[Desktop Entry]\nType=Application\nName=Loop\nExec=env \(todayctl) open %u\nMimeType=x-scheme-handler/loopy;\n".utf8
        ).write(to: applications.appendingPathComponent("loop.desktop"))
        let daemon = try TodayDaemon(bundles: [], home: home)
        let client = try await daemon.ready()
        #expect(try await client.center("OpenURL", [.string("loopy://again"), .vardict([])]).body.first == .string("loop"))
        // The started todayctl asks for the same URL.
        _ = try await eventually(5) { daemon.logText.contains("refused loopy://again") }
        client.close()
        daemon.stop()
        let log = daemon.logText
        let opened = log.components(separatedBy: "opened loopy://again").count - 1
        #expect(opened == 1, "\(log)")
        #expect(log.contains("refused loopy://again: it came back from the process todayd started to open it"), "\(log)")
    }
}
