import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The notification portal (SPEC section 14's org.gtk.Notifications): an app
/// in a Flatpak-like sandbox sends a GNotification, which GLib hands to
/// xdg-desktop-portal, which hands it to xdg-desktop-portal-gtk, which
/// forwards it to todayd; the action chosen from todayd's list reaches the
/// app through org.freedesktop.Application. The real Debian 12 portals on
/// the test bus; the sandbox is bubblewrap with a `/.flatpak-info` (how
/// the portal and GLib tell a Flatpak app, and its app id).
@Suite(.showsDaemonLogs) struct PortalTests {
    static let portal = "/usr/libexec/xdg-desktop-portal"
    static let portalGtk = "/usr/libexec/xdg-desktop-portal-gtk"
    static var available: Bool {
        [portal, portalGtk, "/usr/bin/bwrap", "/usr/bin/xvfb-run", "/usr/bin/python3"].allSatisfy(FileManager.default.isExecutableFile)
    }

    /// Run alone by make test (an X server, two portals and GTK starting at
    /// once load the machine for the suite's timed tests).
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["TODAY_TEST_ALONE"] != nil, "run alone by make test (TODAY_TEST_ALONE=1)"),
        .enabled(if: available, "needs xdg-desktop-portal, xdg-desktop-portal-gtk, bubblewrap, xvfb and python3-gi"))
    func aSandboxedAppsNotificationReachesTheListThroughThePortal() async throws {
        // A bus that activates nothing of the system's (the document
        // portal would mount itself under the real home).
        let todayd = try await RestartableTodayd("portal", activating: true)
        defer { todayd.remove() }
        let (daemon, client) = try await todayd.start(serving: Notifications.gtkName)
        defer { daemon.stop(keepHome: true) }
        defer { client.close() }
        let home = todayd.home
        var environment = TodayDaemon.environment(home: home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = todayd.bus.address
        // gtk.portal serves GNOME (UseIn=gnome).
        environment["XDG_CURRENT_DESKTOP"] = "GNOME"
        environment["NO_AT_BRIDGE"] = "1"
        environment["PATH"] = "/usr/bin:/bin"
        // The portals' own files and GTK's settings schemas are the system's.
        environment["XDG_DATA_DIRS"] = "/usr/local/share:/usr/share"

        // Each in a process group of its own (Process starts it so), killed
        // whole: the GTK portal under xvfb-run has an X server beside it.
        let gtk = try Background("/usr/bin/xvfb-run", ["-a", "-s", "-screen 0 640x480x24", Self.portalGtk, "-r"], environment: environment)
        defer { kill(-gtk.process.processIdentifier, SIGKILL) }
        _ = try await client.waitForOwner(of: BusName("org.freedesktop.impl.portal.desktop.gtk"), timeout: .seconds(20))
        let portal = try Background(Self.portal, ["-r"], environment: environment)
        defer { kill(-portal.process.processIdentifier, SIGKILL) }
        _ = try await client.waitForOwner(of: BusName("org.freedesktop.portal.Desktop"), timeout: .seconds(20))

        let received = home.appendingPathComponent("received")
        let app = home.appendingPathComponent("notes.py")
        // In a sandbox, GLib sends its GNotification through the portal.
        try NotificationServerTests.writeNotesApp(to: app)
        let info = home.appendingPathComponent("flatpak-info")
        try "[Application]\nname=org.example.Notes\n\n[Instance]\ninstance-id=1\n".write(to: info, atomically: true, encoding: .utf8)
        // A root of bubblewrap's own (a tmpfs, as Flatpak's), with the
        // system's programs, /tmp (the bus, the home) and the app's
        // `/.flatpak-info`; never the host's root, where the file's mount
        // point would be left behind.
        let sandboxed = try Background(
            "/usr/bin/bwrap",
            [
                "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
                "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--bind", "/tmp", "/tmp",
                "--ro-bind", info.path, "/.flatpak-info", "/usr/bin/python3", app.path, received.path, "stay",
            ],
            environment: environment)
        defer { sandboxed.stop() }

        #expect(try await eventually(20) { try await NotificationServerTests.list(client).count == 1 }, "the portal's notification did not arrive")
        let posted = try #require(try await NotificationServerTests.list(client).first)
        #expect(posted["source"] == .string("gtk") && posted["app-id"] == .string("org.example.Notes"), "\(posted)")
        #expect(posted["summary"] == .string("Meeting notes") && posted["body"] == .string("Notes of Monday's meeting are ready"), "\(posted)")
        let id = try #require(posted["id"]?.uint64)
        try await client.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.invokeAction, UInt32(id),
            "app.open-note", VariantDictionary([]))
        #expect(try await eventually(20) { (try? String(contentsOf: received, encoding: .utf8)) == "open-note n42\n" },
                "the app got: \((try? String(contentsOf: received, encoding: .utf8)) ?? "nothing")")
    }
}
