import CSystem
import DBus
import Foundation
import Posix
import PropertyList
import Synchronization
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Every rule of SPEC section 3, each with a bundle that breaks it and the
/// exact diagnostic `todayctl lint` prints for it.
@Suite struct BundleRuleTests {
    /// A good app with one widget, then `change` applied to its files.
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var file: String
        var key: String
        var message: String
        var change: @Sendable (URL) throws -> Void
    }

    static func writePlist(_ url: URL, _ edit: (inout PlistDictionary) -> Void) throws {
        var dictionary = (try? Plist.read(Data(contentsOf: url)).dictionary) ?? [:]
        edit(&dictionary)
        try Plist.write(.dictionary(dictionary), format: .xml).write(to: url)
    }

    static let app = "Good.app/Info.plist"
    static let widget = "Good.app/PlugIns/W.appex/Info.plist"
    static let attributes = "NSExtension.NSExtensionAttributes."

    static func setAttribute(_ key: String, _ value: PlistValue) -> @Sendable (URL) throws -> Void {
        { root in
            try writePlist(root.appendingPathComponent(widget)) { info in
                var ext = info["NSExtension"]?.dictionary ?? [:]
                var attributes = ext["NSExtensionAttributes"]?.dictionary ?? [:]
                attributes[key] = value
                ext["NSExtensionAttributes"] = .dictionary(attributes)
                info["NSExtension"] = .dictionary(ext)
            }
        }
    }

    static let cases: [Case] = [
        Case(description: "unreadable Info.plist", file: app, key: "-", message: "not a readable property list (the document is empty); fix or remove it") { root in
            try Data().write(to: root.appendingPathComponent(app))
        },
        Case(description: "root not a dict", file: app, key: "-", message: "the root must be a <dict>, not <array>") { root in
            try Plist.write(.array([]), format: .xml).write(to: root.appendingPathComponent(app))
        },
        Case(description: "missing id", file: app, key: "CFBundleIdentifier", message: "missing; add it as a <string> such as org.example.App") { root in
            try writePlist(root.appendingPathComponent(app)) { $0["CFBundleIdentifier"] = nil }
        },
        Case(description: "bad id", file: app, key: "CFBundleIdentifier", message: "'org.example..App' is not reverse-DNS: [A-Za-z0-9.-], at most 255 bytes, no empty part") { root in
            try writePlist(root.appendingPathComponent(app)) { $0["CFBundleIdentifier"] = .string("org.example..App") }
        },
        Case(description: "id too long", file: app, key: "CFBundleIdentifier", message: "'\(String(repeating: "a", count: 256))' is not reverse-DNS: [A-Za-z0-9.-], at most 255 bytes, no empty part") { root in
            try writePlist(root.appendingPathComponent(app)) { $0["CFBundleIdentifier"] = .string(String(repeating: "a", count: 256)) }
        },
        Case(description: "id of another type", file: app, key: "CFBundleIdentifier", message: "must be a <string>, not <integer>") { root in
            try writePlist(root.appendingPathComponent(app)) { $0["CFBundleIdentifier"] = .integer(3) }
        },
        Case(description: "extension outside the container's id", file: widget, key: "CFBundleIdentifier", message: "'org.other.W' must start with its container's id and a dot ('org.example.Good.')") { root in
            try writePlist(root.appendingPathComponent(widget)) { $0["CFBundleIdentifier"] = .string("org.other.W") }
        },
        Case(description: "version differs", file: widget, key: "CFBundleVersion", message: "must equal the container app's ('1')") { root in
            try writePlist(root.appendingPathComponent(widget)) { $0["CFBundleVersion"] = .string("2") }
        },
        Case(description: "short version differs", file: widget, key: "CFBundleShortVersionString", message: "must equal the container app's ('1.0')") { root in
            try writePlist(root.appendingPathComponent(widget)) { $0["CFBundleShortVersionString"] = .string("1.1") }
        },
        Case(description: "absolute executable", file: widget, key: "CFBundleExecutable", message: "'/bin/sh' must be a path relative to the bundle") { root in
            try writePlist(root.appendingPathComponent(widget)) { $0["CFBundleExecutable"] = .string("/bin/sh") }
        },
        Case(description: "executable escaping by ..", file: widget, key: "CFBundleExecutable", message: "'../../../escape' leads outside the bundle (to /ROOT/escape); keep the executable inside") { root in
            try writeExecutable("#!/bin/sh\n", to: root.appendingPathComponent("escape").path)
            try writePlist(root.appendingPathComponent(widget)) { $0["CFBundleExecutable"] = .string("../../../escape") }
        },
        Case(description: "executable escaping by symlink", file: widget, key: "CFBundleExecutable", message: "'provider' leads outside the bundle (to /ROOT/outside); keep the executable inside") { root in
            let provider = root.appendingPathComponent("Good.app/PlugIns/W.appex/provider")
            try FileManager.default.moveItem(at: provider, to: root.appendingPathComponent("outside"))
            try FileManager.default.createSymbolicLink(atPath: provider.path, withDestinationPath: root.appendingPathComponent("outside").path)
        },
        Case(description: "executable missing", file: widget, key: "CFBundleExecutable", message: "'provider' is not in the bundle (No such file or directory); build and install the executable") { root in
            try FileManager.default.removeItem(at: root.appendingPathComponent("Good.app/PlugIns/W.appex/provider"))
        },
        Case(description: "executable not executable", file: widget, key: "CFBundleExecutable", message: "'provider' is not executable; chmod +x it") { root in
            chmod(root.appendingPathComponent("Good.app/PlugIns/W.appex/provider").path, 0o644)
        },
        Case(description: "executable a folder", file: widget, key: "CFBundleExecutable", message: "'provider' is not a regular file") { root in
            let provider = root.appendingPathComponent("Good.app/PlugIns/W.appex/provider")
            try FileManager.default.removeItem(at: provider)
            try FileManager.default.createDirectory(at: provider, withIntermediateDirectories: false)
        },
        Case(description: "bad group id", file: "Good.app/PlugIns/W.appex/Entitlements.plist", key: "com.apple.security.application-groups", message: "'group..evil' is not a group id: 'group.' and reverse-DNS characters, at most 255 bytes, no '..'") { root in
            try writePlist(root.appendingPathComponent("Good.app/PlugIns/W.appex/Entitlements.plist")) {
                $0["com.apple.security.application-groups"] = .array([.string("group..evil")])
            }
        },
        Case(description: "group without prefix", file: "Good.app/Entitlements.plist", key: "com.apple.security.application-groups", message: "'org.example.shared' is not a group id: 'group.' and reverse-DNS characters, at most 255 bytes, no '..'") { root in
            try writePlist(root.appendingPathComponent("Good.app/Entitlements.plist")) {
                $0["com.apple.security.application-groups"] = .array([.string("org.example.shared")])
            }
        },
        Case(description: "two entitlements files", file: "Good.app", key: "-", message: "has 2 *.entitlements files (a.entitlements, b.entitlements); keep one, or name it Entitlements.plist") { root in
            try FileManager.default.removeItem(at: root.appendingPathComponent("Good.app/Entitlements.plist"))
            for name in ["a", "b"] {
                try Plist.write(.dictionary([:]), format: .xml).write(to: root.appendingPathComponent("Good.app/\(name).entitlements"))
            }
        },
        Case(description: "widget without principal class", file: widget, key: "NSExtension", message: "a widget extension needs NSExtensionPrincipalClass or NSExtensionMainStoryboard") { root in
            try writePlist(root.appendingPathComponent(widget)) { info in
                var ext = info["NSExtension"]?.dictionary ?? [:]
                ext["NSExtensionPrincipalClass"] = nil
                info["NSExtension"] = .dictionary(ext)
            }
        },
        Case(description: "height of the wrong type", file: widget, key: attributes + "TodayPreferredHeight", message: "must be a <real>, not <string>", change: setAttribute("TodayPreferredHeight", .string("tall"))),
        Case(description: "negative height", file: widget, key: attributes + "TodayPreferredHeight", message: "must be 0 or more", change: setAttribute("TodayPreferredHeight", .real(-1))),
        Case(description: "insets of the wrong type", file: widget, key: attributes + "TodayMarginInsets", message: "must be a <dict>, not <array>", change: setAttribute("TodayMarginInsets", .array([]))),
        Case(description: "an inset of the wrong type", file: widget, key: attributes + "TodayMarginInsets.top", message: "must be a <real>, not <boolean>", change: setAttribute("TodayMarginInsets", .dictionary(["top": .boolean(true)]))),
        Case(description: "interval too short", file: widget, key: attributes + "TodayUpdateInterval", message: "must be 0 (only on request) or at least 60 seconds, not 30", change: setAttribute("TodayUpdateInterval", .integer(30))),
        Case(description: "interval of the wrong type", file: widget, key: attributes + "TodayUpdateInterval", message: "must be an <integer>, not <real>", change: setAttribute("TodayUpdateInterval", .real(90))),
        Case(description: "timeout out of range", file: widget, key: attributes + "TodayUpdateTimeout", message: "must be between 1 and 3600 seconds, not 0", change: setAttribute("TodayUpdateTimeout", .integer(0))),
        Case(description: "memory limit too small", file: widget, key: attributes + "TodayMemoryLimit", message: "must be at least 1048576 bytes, not 1000", change: setAttribute("TodayMemoryLimit", .integer(1000))),
        Case(description: "bad provider bus name", file: widget, key: attributes + "TodayProviderBusName", message: "'not a name' is not a well-known D-Bus name such as org.example.App.Provider", change: setAttribute("TodayProviderBusName", .string("not a name"))),
        Case(description: "bad URL scheme", file: app, key: "CFBundleURLTypes[0].CFBundleURLSchemes", message: "'1bad' is not a URL scheme: a letter, then letters, digits, '+', '-' or '.'") { root in
            try writePlist(root.appendingPathComponent(app)) {
                $0["CFBundleURLTypes"] = .array([.dictionary(["CFBundleURLSchemes": .array([.string("1bad")])])])
            }
        },
        Case(description: "a system URL scheme", file: app, key: "CFBundleURLTypes[0].CFBundleURLSchemes", message: "'https' belongs to the system; declare a scheme of the app's own") { root in
            try writePlist(root.appendingPathComponent(app)) {
                $0["CFBundleURLTypes"] = .array([.dictionary(["CFBundleURLSchemes": .array([.string("https")])])])
            }
        },
        Case(description: "JSON is not a plist format here", file: app, key: "-", message: "not a readable property list (line 1, column 1: Start tag expected, '<' not found); fix or remove it") { root in
            try Data(#"{"CFBundleIdentifier": "org.example.Good"}"#.utf8).write(to: root.appendingPathComponent(app))
        },
    ]

    /// Writes the good bundle into `root`.
    static func good(_ root: URL) throws {
        let folder = BundleFolder(url: root)
        try folder.addApp(
            "org.example.Good", name: "Good",
            widgets: [.init(name: "W", script: "exit 0", groups: ["group.org.example.good"])])
        try writePlist(root.appendingPathComponent("Good.app/Entitlements.plist")) {
            $0["com.apple.security.application-groups"] = .array([.string("group.org.example.good")])
        }
    }

    @Test func theGoodBundleLintsClean() throws {
        let root = try temporaryDirectory("rules")
        defer { try? FileManager.default.removeItem(at: root) }
        try Self.good(root)
        let result = BundleCatalog.lint([root.path])
        #expect(result.checked == 1)
        #expect(result.problems == [])
        // Binary Info.plists are read too.
        let info = root.appendingPathComponent(Self.widget)
        try Plist.write(try Plist.read(Data(contentsOf: info)), format: .binary).write(to: info)
        #expect(BundleCatalog.lint([root.path]).problems == [])
        let catalog = BundleCatalog.scan([root.path])
        #expect(catalog.widgets.map(\.bundleIdentifier.rawValue) == ["org.example.Good.W"])
        #expect(catalog.apps.first?.groups == [GroupID("group.org.example.good")])
    }

    @Test(arguments: cases) func eachRule(_ rule: Case) throws {
        let root = try temporaryDirectory("rules")
        defer { try? FileManager.default.removeItem(at: root) }
        try Self.good(root)
        try rule.change(root)
        let real = URL(fileURLWithPath: root.path).resolvingSymlinksInPath().path
        let problems = BundleCatalog.lint([root.path]).problems.map { problem in
            BundleProblem(
                file: problem.file.replacingOccurrences(of: root.path + "/", with: ""), key: problem.key,
                message: problem.message.replacingOccurrences(of: real, with: "/ROOT"))
        }
        #expect(problems == [BundleProblem(file: rule.file, key: rule.key, message: rule.message)])
        // A broken bundle never stops the others from loading.
        let other = BundleFolder(url: root)
        try other.addApp("org.example.Fine", name: "Fine", widgets: [.init(name: "W", script: "exit 0")])
        #expect(BundleCatalog.scan([root.path]).widgets.map(\.bundleIdentifier.rawValue) == ["org.example.Fine.W"])
    }

    @Test func lintCommand() async throws {
        let root = try temporaryDirectory("lint")
        defer { try? FileManager.default.removeItem(at: root) }
        try Self.good(root)
        let todayctl = Paths.todayctl
        let clean = try await run([todayctl, "lint", root.path, root.path + "/Good.app", Paths.examples])
        #expect(clean.status == 0)
        #expect(clean.output == "5 bundles checked: no problems\n")
        try Self.setAttribute("TodayUpdateInterval", .integer(5))(root)
        let broken = try await run([todayctl, "lint", root.path])
        #expect(broken.status == 1)
        #expect(broken.output == "\(root.path)/Good.app/PlugIns/W.appex/Info.plist: NSExtension.NSExtensionAttributes.TodayUpdateInterval: must be 0 (only on request) or at least 60 seconds, not 5\n")
        #expect(try await run([todayctl, "lint"]).status == 2)
        #expect(try await run([todayctl, "lint", root.path + "/missing"]).status == 1)
    }

    /// The bundle check of TodayProviderBusName agrees with libdbus.
    @Test func busNamesAsLibdbusSeesThem() {
        let names = [
            "org.example.App", "org.example.App.Provider", "a.b", "a_b.c-d", "org", "", ".a", "a.", "a..b", "1a.b", "a.1b",
            "a.b1", ":1.42", "org.example.App!", "org.exämple.App", String(repeating: "a.", count: 127) + "ab",
            String(repeating: "a.", count: 128),
        ]
        for name in names {
            let libdbus = BusName(rawValue: name) != nil && !name.hasPrefix(":")
            #expect(BundleCatalog.isWellKnownBusName(name) == libdbus, "\(name)")
        }
    }

    /// A scan that meets an install's exchange of folders (`todayctl
    /// install` over an installed version) reads one version whole: it
    /// never skips the bundle for an app and widgets of two versions.
    @Test func aScanDuringAnExchangeReadsOneVersionWhole() throws {
        let folder = try BundleFolder()
        defer { folder.remove() }
        let other = try BundleFolder()
        defer { other.remove() }
        try folder.addApp("org.example.Swap", name: "Swap", version: "1", widgets: [.init(name: "W", script: "exit 0")])
        try other.addApp("org.example.Swap", name: "Swap", version: "2", widgets: [.init(name: "W", script: "exit 0")])
        for (bundles, version) in [(folder, "1"), (other, "2")] {
            try Self.writePlist(bundles.url.appendingPathComponent("Swap.app/Info.plist")) { $0["CFBundleDisplayName"] = .string("Swap \(version)") }
        }
        let waiting = ".Swap.app.next"
        try FileManager.default.moveItem(atPath: other.path + "/Swap.app", toPath: folder.path + "/" + waiting)
        let directory = try FileDescriptor.open(folder.path, O_RDONLY | O_DIRECTORY)
        let stop = Atomic(false)
        let swaps = Atomic(0)
        let swapper = DispatchSemaphore(value: 0)
        // A thread of its own: the test process's shared threads may all be
        // busy with other tests.
        try Threads.detach {
            while !stop.load(ordering: .relaxed) {
                if today_rename_exchange(directory.rawValue, waiting, "Swap.app") == 0 { swaps.add(1, ordering: .relaxed) }
                // As installs come, if quickly: a copy of the bundle between two.
                usleep(20_000)
            }
            swapper.signal()
        }
        var versions: Set<String> = []
        var skipped: [BundleProblem] = []
        var scans = 0
        let giveUp = ContinuousClock.now + .seconds(30)
        while swaps.load(ordering: .relaxed) < 100, ContinuousClock.now < giveUp {
            let catalog = BundleCatalog.scan([folder.path])
            skipped += catalog.problems
            versions.formUnion(catalog.apps.map(\.displayName))
            scans += 1
        }
        stop.store(true, ordering: .relaxed)
        swapper.wait()
        #expect(skipped.isEmpty, "\(skipped.count) of \(scans) scans skipped the bundle, first: \(skipped.first.map(String.init(describing:)) ?? "")")
        #expect(swaps.load(ordering: .relaxed) >= 100, "the bundle was swapped \(swaps.load(ordering: .relaxed)) times in \(scans) scans")
        #expect(versions == ["Swap 1", "Swap 2"])
    }
}
