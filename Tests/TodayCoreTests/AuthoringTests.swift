import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// What widget authors use (SPEC section 12): `.strings` files and
/// localized names, and `todayctl install` and `uninstall`.
@Suite(.showsDaemonLogs) struct AuthoringTests {
    static let todayctl = Paths.todayctl

    @Test func stringsFiles() throws {
        let text = """
            /* A comment,
               over lines */
            "CFBundleDisplayName" = "Caf\\u00E9 \\"Noir\\"";   // after an entry
            CFBundleName = Bare.Word-1;
            "tabs" = "a\\tb\\nc\\\\";
            "CFBundleName" = "again";
            "alone";
            """
        let entries = try StringsFile.read(Data(text.utf8))
        #expect(entries.map(\.key) == ["CFBundleDisplayName", "CFBundleName", "tabs", "alone"])
        #expect(entries.map(\.value) == ["Café \"Noir\"", "again", "a\tb\nc\\", "alone"])
        // UTF-16 with a byte-order mark, either order; UTF-8 with or without one.
        for encoding in [String.Encoding.utf16LittleEndian, .utf16BigEndian] {
            var data = Data(encoding == .utf16LittleEndian ? [0xFF, 0xFE] : [0xFE, 0xFF])
            data.append(try #require("\"k\" = \"नमस्ते\";".data(using: encoding)))
            #expect(try StringsFile.read(data).first?.value == "नमस्ते")
        }
        #expect(try StringsFile.read(Data([0xEF, 0xBB, 0xBF] + Array("k = v;".utf8))).first?.value == "v")
        // Errors name the line.
        let bad: [(String, String)] = [
            ("\"a\" = \"b\";\n\"c\" = \"d\"\n", "line 3: expected ';' after the entry for \"c\""),
            ("\"a\" = \"b;\n", "line 1: a string opened here is never closed"),
            ("/* open\n\n", "line 1: a comment opened here is never closed"),
            ("\n\n\"a\" = = \"b\";", "line 3: unexpected '='"),
            ("\"a\" = \"\\U12\";", "line 1: \\U needs four hexadecimal digits"),
        ]
        for (text, message) in bad {
            #expect { try StringsFile.read(Data(text.utf8)) } throws: { "\($0)".hasPrefix(message) }
        }
        #expect(throws: PlistError.self) { try StringsFile.read(Data([0xC3, 0x28])) }
    }

    @Test func languagesAsGettextChooses() {
        #expect(Localization.preferredLanguages(["LANG": "pt_BR.UTF-8"]) == ["pt_BR", "pt"])
        #expect(Localization.preferredLanguages(["LANGUAGE": "de:fr_CA", "LANG": "en_US.UTF-8"]) == ["de", "fr_CA", "fr", "en_US", "en"])
        #expect(Localization.preferredLanguages(["LC_ALL": "sr_RS@latin", "LC_MESSAGES": "de_DE", "LANG": "fr"]) == ["sr_RS", "sr"])
        #expect(Localization.preferredLanguages(["LC_MESSAGES": "hi_IN.UTF-8", "LANG": "fr"]) == ["hi_IN", "hi"])
        // LANGUAGE counts with any locale but exactly C or POSIX (or none):
        // `LANG=C.UTF-8 LANGUAGE=de ls --badopt` answers in German.
        #expect(Localization.preferredLanguages(["LANGUAGE": "de", "LANG": "C.UTF-8"]) == ["de"])
        #expect(Localization.preferredLanguages(["LANGUAGE": "de:pt_BR", "LC_ALL": "C.UTF-8", "LANG": "fr_FR"]) == ["de", "pt_BR", "pt"])
        #expect(Localization.preferredLanguages(["LANG": "C.UTF-8"]) == [])
        #expect(Localization.preferredLanguages(["LANGUAGE": "de", "LANG": "C"]) == [])
        #expect(Localization.preferredLanguages(["LANGUAGE": "de", "LC_ALL": "POSIX", "LANG": "fr"]) == [])
        #expect(Localization.preferredLanguages(["LANGUAGE": "de"]) == [])
        #expect(Localization.preferredLanguages([:]) == [])
        #expect(Localization.choose(["pt": "Tráfego", "de": "Verkehr"], for: ["pt_BR", "pt"]) == "Tráfego")
    }

    @Test func theTrafficExampleIsLocalized() async throws {
        for (environment, expected) in [
            (["LANG": "hi_IN.UTF-8"], "यातायात"), (["LANGUAGE": "de", "LANG": "en_US.UTF-8"], "Verkehr"),
            // pt_BR falls back to pt, as gettext does.
            (["LANG": "pt_BR.UTF-8"], "Trânsito"), (["LANGUAGE": "pt_BR:de", "LANG": "en_US.UTF-8"], "Trânsito"),
            // LANGUAGE counts only where a locale is set, not in C.
            (["LANGUAGE": "de"], "Traffic"), ([:], "Traffic"),
        ] {
            let daemon = try TodayDaemon(bundles: [Paths.examples], environment: environment)
            let client = try await daemon.ready()
            #expect(try await client.property("com.e-legion.Traffic.Widget", "DisplayName") == .string(expected), "\(environment)")
            let names = try await client.property("com.e-legion.Traffic.Widget", "LocalizedDisplayNames")
            #expect(
                names
                    == .dictionary(
                        key: .string, value: .string,
                        [
                            DictionaryEntry(.string("de"), .string("Verkehr")), DictionaryEntry(.string("hi"), .string("यातायात")),
                            DictionaryEntry(.string("pt"), .string("Trânsito")),
                        ]))
            client.close()
            daemon.stop()
        }
        // lint names the line of a broken .strings file, and such a bundle is not loaded.
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Words", widgets: [.init(name: "W", script: "exit 0")])
        let lproj = bundles.url.appendingPathComponent("org.example.Words.app/PlugIns/W.appex/fr.lproj")
        try FileManager.default.createDirectory(at: lproj, withIntermediateDirectories: true)
        try Data("\"CFBundleDisplayName\" = \"Mots\";\n\"CFBundleName\" = \"x\"\n".utf8).write(to: lproj.appendingPathComponent("InfoPlist.strings"))
        let lint = try await run([Self.todayctl, "lint", bundles.path])
        #expect(lint.status == 1)
        #expect(lint.output.contains("fr.lproj/InfoPlist.strings: -: not a readable .strings file (line 3: expected ';' after the entry for \"CFBundleName\")"), "\(lint.output)")
    }

    @Test func installAndUninstall() async throws {
        let staging = try BundleFolder()
        defer { staging.remove() }
        try staging.addApp("org.example.Inst", name: "Inst", version: "1", widgets: [.init(name: "W", script: #"cat >/dev/null; echo '{"result": "new-data", "snapshot": {"title": "v1"}}'"#)])
        let home = try temporaryDirectory("install")
        defer { try? FileManager.default.removeItem(at: home) }
        let environment = TodayDaemon.environment(home: home)
        func todayctl(_ arguments: [String]) async throws -> (status: Int32, output: String, error: String) {
            try await run(["env"] + environment.map { "\($0.key)=\($0.value)" } + [Self.todayctl] + arguments)
        }
        let daemon = try TodayDaemon(bundles: [], home: home)
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        func widgets() async throws -> [Value] { try await client.center("ListWidgets").body }
        let path = Today.widgetPath("org.example.Inst.W")

        let installed = try await todayctl(["install", staging.path + "/Inst.app"])
        #expect(installed.status == 0, "\(installed.error)")
        let target = home.path + "/data/todayd/bundles/Inst.app"
        #expect(installed.output == "installed \(target)\n")
        #expect(FileManager.default.isExecutableFile(atPath: target + "/PlugIns/W.appex/provider"))
        #expect(try await eventually { try await widgets() == [.objectPaths([path])] })

        // A new version replaces the old in one step: todayd never sees a
        // half-copied bundle (every rescan meanwhile finds v1 or v2, whole).
        try BundleRuleTests.writePlist(staging.url.appendingPathComponent("Inst.app/PlugIns/W.appex/Info.plist")) {
            $0["CFBundleDisplayName"] = .string("Second")
        }
        let replaced = try await todayctl(["install", staging.path + "/Inst.app"])
        #expect(replaced.status == 0, "\(replaced.error)")
        #expect(try await eventually { try await client.property("org.example.Inst.W", "DisplayName") == .string("Second") })
        #expect(FileSystem.entries(home.path + "/data/todayd/bundles") == ["Inst.app"], "no staging copy is left")

        // Replaced 100 times while todayd watches, the app's and the
        // widget's versions changing together: a scan of a bundle half
        // swapped would see them differ and skip it (the widget removed),
        // one between two steps would find no bundle at all.
        let removals = Locked(0)
        try await client.subscribe(
            MatchRule(path: Today.managerPath, interface: .objectManager, member: MemberName("InterfacesRemoved"))
        ) { message in
            if message.body.first == .objectPath(path) { removals.withLock { $0 += 1 } }
        }
        for round in 1...100 {
            for plist in ["Inst.app/Info.plist", "Inst.app/PlugIns/W.appex/Info.plist"] {
                try BundleRuleTests.writePlist(staging.url.appendingPathComponent(plist)) {
                    $0["CFBundleVersion"] = .string("\(round)")
                    // The last round shows: once todayd has it, every rescan is done.
                    if round == 100, plist.hasSuffix("W.appex/Info.plist") { $0["CFBundleDisplayName"] = .string("Last") }
                }
            }
            let swapped = try await todayctl(["install", staging.path + "/Inst.app"])
            #expect(swapped.status == 0, "round \(round): \(swapped.error)")
        }
        #expect(try await eventually(5) { try await client.property("org.example.Inst.W", "DisplayName") == .string("Last") })
        #expect(removals.value == 0, "the widget went away \(removals.value) times")
        #expect(try await widgets() == [.objectPaths([path])])
        #expect(FileSystem.entries(home.path + "/data/todayd/bundles") == ["Inst.app"], "no staging copy is left")
        for plist in ["Inst.app/Info.plist", "Inst.app/PlugIns/W.appex/Info.plist"] {
            try BundleRuleTests.writePlist(staging.url.appendingPathComponent(plist)) { $0["CFBundleVersion"] = .string("1") }
        }

        // A bundle that breaks a rule is refused, and nothing changes.
        try BundleRuleTests.writePlist(staging.url.appendingPathComponent("Inst.app/PlugIns/W.appex/Info.plist")) {
            $0["CFBundleVersion"] = .string("2")
        }
        let refused = try await todayctl(["install", staging.path + "/Inst.app"])
        #expect(refused.status == 1)
        #expect(refused.error.contains("not installed: 1 problem") && refused.error.contains("CFBundleVersion: must equal the container app's"), "\(refused.error)")
        // One in a folder that comes first would win anyway: refused, saying so.
        let lower = try temporaryDirectory("lower")
        defer { try? FileManager.default.removeItem(at: lower) }
        try BundleRuleTests.writePlist(staging.url.appendingPathComponent("Inst.app/PlugIns/W.appex/Info.plist")) {
            $0["CFBundleVersion"] = .string("1")
        }
        let shadowed = try await todayctl(["install", staging.path + "/Inst.app", "--dir", lower.path])
        #expect(shadowed.status == 1 && shadowed.error.contains("has the same id (org.example.Inst) in a folder that comes first"), "\(shadowed.error)")

        let removed = try await todayctl(["uninstall", "org.example.Inst"])
        #expect(removed.status == 0 && removed.output == "removed \(target)\n", "\(removed)")
        #expect(try await eventually { try await widgets() == [.objectPaths([])] })
        let again = try await todayctl(["uninstall", "org.example.Inst"])
        #expect(again.status == 1 && again.error.contains("no bundle org.example.Inst in"), "\(again.error)")
    }
}

/// `todayctl new`: the package it writes, checked as files, then built,
/// installed and run as a widget author would.
@Suite(.showsDaemonLogs) struct NewProjectTests {
    /// Building a package takes both cores for a while, which would starve
    /// the timing of the tests beside it: `make test` runs this one alone,
    /// after the others, with TODAY_TEST_BUILDS=1.
    static let builds = ProcessInfo.processInfo.environment["TODAY_TEST_BUILDS"] == "1"

    @Test(.enabled(if: builds, "builds a package; make test runs it alone with TODAY_TEST_BUILDS=1"))
    func theNewPackageBuildsInstallsAndRuns() async throws {
        // The steps of docs/widget-authors.md: new, build, lint, install;
        // then todayd lists the widget, updates it and a tap opens the app.
        let root = try temporaryDirectory("author")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("Weather")
        let daemon = try TodayDaemon(bundles: [], home: root.appendingPathComponent("home"))
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        var environment = TodayDaemon.environment(home: daemon.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = daemon.address
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        environment["CONFIG"] = "debug"
        let env = ["env", "-i"] + environment.map { "\($0.key)=\($0.value)" }
        let made = try await run(env + [AuthoringTests.todayctl, "new", "app", "Weather", "--id", "org.example.Weather", "--scheme", "wx", folder.path])
        #expect(made.status == 0, "\(made.error)")
        let built = try await run(env + [folder.appendingPathComponent("build-bundle").path], timeout: 900)
        #expect(built.status == 0 && built.output.hasSuffix("built Weather.app\n"), "\(built.output.suffix(2000)) \(built.error.suffix(2000))")
        let app = folder.appendingPathComponent("Weather.app").path
        let lint = try await run(env + [AuthoringTests.todayctl, "lint", app])
        #expect(lint.status == 0, "\(lint.output)")
        let installed = try await run(env + [AuthoringTests.todayctl, "install", app])
        #expect(installed.status == 0, "\(installed.error)")
        let widget = "org.example.Weather.Today"
        _ = try await eventually(5) { try await client.center("ListWidgets").body == [.objectPaths([Today.widgetPath(widget)])] }
        #expect(try await client.center("ListWidgets").body == [.objectPaths([Today.widgetPath(widget)])])
        // The app saves the widget's content; the widget shows it.
        let saved = try await run(env + [daemon.home.path + "/data/todayd/bundles/Weather.app/Weather"])
        #expect(saved.output == "Weather: saved the message for the widgets\n", "\(saved.output) \(saved.error)")
        #expect(try await client.widget(widget, "PerformUpdate").body == [.string("new-data")])
        #expect(try await client.property(widget, "Snapshot").stringDictionary?["title"]?.unwrapped == .string("Hello from Weather"))
        // A tap opens the app with the widget's URL.
        #expect(try await client.widget(widget, "Activate", [.vardict([])]).body == [.string("org.example.Weather")])
        var opened = ""
        _ = try await eventually(5) {
            opened += daemon.outputText
            return opened.contains("Weather: opening wx://today")
        }
        #expect(opened.contains("Weather: opening wx://today"), "\(opened)")
    }

    @Test func newAppAndWidget() async throws {
        let folder = try temporaryDirectory("new").appendingPathComponent("Weather")
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        let made = try await run([AuthoringTests.todayctl, "new", "app", "Weather", "--id", "org.example.Weather", "--scheme", "wx", folder.path])
        #expect(made.status == 0, "\(made.error)")
        let added = try await run([AuthoringTests.todayctl, "new", "widget", "Forecast", "--app", folder.path])
        #expect(added.status == 0, "\(added.error)")
        let package = try String(contentsOf: folder.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(package.contains(".package(path: \"\(Paths.root.path)\")"))
        for target in ["Weather", "WeatherToday", "WeatherForecast"] { #expect(package.contains(".executableTarget(name: \"\(target)\"")) }
        // The manifest is valid Swift to the package manager.
        let dump = try await run(["swift", "package", "--package-path", folder.path, "dump-package"], timeout: 120)
        #expect(dump.status == 0, "\(dump.error)")
        // Both manifests agree on versions and the group; the widget opens the app's scheme.
        let app = folder.appendingPathComponent("Bundle/Weather.app")
        let widget = try Plist.read(contentsOf: app.appendingPathComponent("PlugIns/Forecast.appex/Info.plist").path)
        #expect(widget["CFBundleIdentifier"] == .string("org.example.Weather.Forecast"))
        #expect(try Plist.read(contentsOf: app.appendingPathComponent("PlugIns/Today.appex/Entitlements.plist").path)["com.apple.security.application-groups"] == .array([.string("group.org.example.Weather")]))
        let source = try String(contentsOf: folder.appendingPathComponent("Sources/WeatherForecast/main.swift"), encoding: .utf8)
        #expect(source.contains("import TodayKit") && source.contains("wx://forecast") && source.contains("struct Forecast: WidgetProviding"))
        // With executables in place, the bundle passes lint.
        try writeExecutable("#!/bin/sh\n", to: app.appendingPathComponent("Weather").path)
        for widget in ["Today", "Forecast"] { try writeExecutable("#!/bin/sh\n", to: app.appendingPathComponent("PlugIns/\(widget).appex/Weather\(widget)").path) }
        let lint = try await run([AuthoringTests.todayctl, "lint", app.path])
        #expect(lint.status == 0 && lint.output == "1 bundle checked: no problems\n", "\(lint.output)")
        // Bad input says what to do.
        let bad = try await run([AuthoringTests.todayctl, "new", "app", "9lives", "--id", "x"])
        #expect(bad.status == 2 && bad.error.contains("'9lives' is not a name"), "\(bad.error)")
        let again = try await run([AuthoringTests.todayctl, "new", "widget", "Forecast", "--app", folder.path])
        #expect(again.status == 1 && again.error.contains("already has a widget Forecast"), "\(again.error)")
    }
}
