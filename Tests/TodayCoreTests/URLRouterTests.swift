import Foundation
import Testing
@testable import TodayCore
import TodayProtocol

/// SPEC section 6's four steps as the router decides them, with the
/// answers to its questions given by the test.
@Suite struct URLRouterTests {
    static func app(_ id: StaticString, schemes: [String], executable: String? = "/bin/true") -> AppManifest {
        AppManifest(
            bundleIdentifier: BundleID(id), path: "/bundles/\(id).app", displayName: "\(id)", executable: executable, urlSchemes: schemes, groups: [],
            extensionIdentifiers: [])
    }

    static let entry = MimeApps.Application(
        id: "browser.desktop", file: "/usr/share/applications/browser.desktop",
        entry: (try? DesktopEntry(parsing: "[Desktop Entry]\nType=Application\nName=Browser\nExec=browser %u\n"))
            ?? { preconditionFailure("the test's desktop entry does not parse") }())

    @Test func aRunningAppThatExportsTheInterfaceComesFirst() {
        let apps = [Self.app("org.example.A", schemes: ["myapp"]), Self.app("org.example.B", schemes: ["MyApp"])]
        let registrations = [(connection: ":1.5", bundle: "org.example.Other"), (":1.6", "org.example.B"), (":1.7", "org.example.A")]
        var router = URLRouter(scheme: "myapp", apps: apps, registrations: registrations)
        // Only registrations whose bundle declares the scheme are asked about, in registration order.
        #expect(router.step == .ask(connection: ":1.6", bundle: "org.example.B"))
        router.answer(exports: false)
        #expect(router.step == .ask(connection: ":1.7", bundle: "org.example.A"))
        router.answer(exports: true)
        #expect(router.step == .open(.runningApp(bundle: "org.example.A", connection: ":1.7")))
        // Answers that were not asked for change nothing.
        router.answer(desktopEntry: Self.entry)
        #expect(router.step == .open(.runningApp(bundle: "org.example.A", connection: ":1.7")))
    }

    @Test func thenAnInstalledBundleThenADesktopEntryThenNone() {
        let apps = [Self.app("org.example.NoExe", schemes: ["myapp"], executable: nil), Self.app("org.example.A", schemes: ["myapp"])]
        var withBundle = URLRouter(scheme: "myapp", apps: apps, registrations: [(":1.7", "org.example.A")])
        withBundle.answer(exports: false)
        #expect(withBundle.step == .open(.bundle(apps[1])))

        var toEntry = URLRouter(scheme: "https", apps: apps, registrations: [(":1.7", "org.example.A")])
        #expect(toEntry.step == .lookUpDesktopEntry(scheme: "https"))
        toEntry.answer(desktopEntry: Self.entry)
        #expect(toEntry.step == .open(.desktopEntry(Self.entry)))

        var none = URLRouter(scheme: "nothing", apps: apps, registrations: [])
        none.answer(desktopEntry: nil)
        #expect(none.step == .noHandler(scheme: "nothing"))
        // A bundle without an executable cannot be started: the desktop entry is next.
        var noExecutable = URLRouter(scheme: "myapp", apps: [apps[0]], registrations: [])
        #expect(noExecutable.step == .lookUpDesktopEntry(scheme: "myapp"))
        noExecutable.answer(desktopEntry: nil)
        #expect(noExecutable.step == .noHandler(scheme: "myapp"))
    }
}
