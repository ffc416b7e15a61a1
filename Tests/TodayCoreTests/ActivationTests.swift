import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// A D-Bus provider that is not running is started by the bus, and a panel
/// applet written with python3-dbus sees the result.
@Suite(.showsDaemonLogs) struct ActivationTests {
    static let provider = """
        #!/usr/bin/python3
        import os, dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(os.environ["DBUS_STARTER_ADDRESS"])
        name = dbus.service.BusName("org.example.Act.Provider", bus)
        class Provider(dbus.service.Object):
            @dbus.service.method("io.github.todayd.Today1.Provider", in_signature="a{sv}", out_signature="sa{sv}")
            def PerformUpdate(self, previous):
                return ("new-data", {"title": "activated", "pid": dbus.Int64(os.getpid())})
        Provider(bus, "/io/github/todayd/Today1/Provider")
        GLib.MainLoop().run()
        """

    /// A panel applet: lists the widgets, asks one for an update, waits
    /// for its PropertiesChanged, prints the snapshot's title.
    static let applet = """
        import sys, dbus, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(sys.argv[1])
        center = dbus.Interface(bus.get_object("io.github.todayd.Today1", "/io/github/todayd/Today1"), "io.github.todayd.Today1.Center")
        widgets = center.ListWidgets()
        path = widgets[0]
        widget = bus.get_object("io.github.todayd.Today1", path)
        props = dbus.Interface(widget, "org.freedesktop.DBus.Properties")
        print("name", props.Get("io.github.todayd.Today1.Widget", "DisplayName"))
        loop = GLib.MainLoop()
        seen = []
        def note(line):
            seen.append(line)
            if len(seen) == 2: loop.quit()
        def changed(interface, values, invalidated):
            if "Snapshot" in values: note("changed " + values["Snapshot"]["title"])
        props.connect_to_signal("PropertiesChanged", changed)
        dbus.Interface(widget, "io.github.todayd.Today1.Widget").PerformUpdate(reply_handler=lambda r: note("result " + r), error_handler=lambda e: loop.quit())
        GLib.timeout_add(10000, loop.quit)
        loop.run()
        print(*sorted(seen), sep=chr(10))
        snapshot = props.Get("io.github.todayd.Today1.Widget", "Snapshot")
        print("snapshot", snapshot["title"], int(props.Get("io.github.todayd.Today1.Widget", "LastUpdated")) > 0)
        """

    @Test func theBusStartsAnAbsentProvider() async throws {
        let services = try temporaryDirectory("services")
        defer { try? FileManager.default.removeItem(at: services) }
        let script = services.appendingPathComponent("provider.py")
        try writeExecutable(Self.provider, to: script.path)
        try Data("[D-BUS Service]\nName=org.example.Act.Provider\nExec=\(script.path)\n".utf8)
            .write(to: services.appendingPathComponent("org.example.Act.Provider.service"))
        let bus = try await BusDaemon.start(serviceFolders: [services.path])
        defer { bus.stop() }

        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Act", widgets: [.init(name: "W", busName: "org.example.Act.Provider")])
        let daemon = try TodayDaemon(bundles: [bundles.path], address: bus.address)
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        #expect(try await connection.callBus(MemberName("NameHasOwner"), [.string("org.example.Act.Provider")]).body == [.boolean(false)])

        let applet = try await run(["/usr/bin/python3", "-c", Self.applet, bus.address])
        #expect(applet.output == "name W\nchanged activated\nresult new-data\nsnapshot activated True\n", "\(applet.error)")
        let owner = try await connection.callBus(MemberName("GetConnectionUnixProcessID"), [.string("org.example.Act.Provider")])
        if case .uint32(let pid)? = owner.body.first { kill(pid_t(pid), SIGKILL) }
    }
}

/// Bundles installed, changed and removed while todayd runs.
@Suite(.showsDaemonLogs) struct LiveReloadTests {
    @Test func changesAreSeenWithinASecond() async throws {
        let parent = try temporaryDirectory("live")
        defer { try? FileManager.default.removeItem(at: parent) }
        // The folder does not exist when todayd starts.
        let folder = parent.appendingPathComponent("later/bundles")
        let daemon = try TodayDaemon(bundles: [folder.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        let signals = Locked<[String]>([])
        try await connection.subscribe(MatchRule(path: Today.managerPath, interface: .objectManager)) { message in
            signals.withLock { $0.append("\(message.member ?? "") \(message.body.first?.string ?? "")") }
        }
        func widgets() async throws -> [Value] { try await connection.center("ListWidgets").body }
        let path = Today.widgetPath("org.example.Live.W")

        let staging = try BundleFolder()
        defer { staging.remove() }
        try staging.addApp("org.example.Live", name: "Live", widgets: [.init(name: "W", script: WidgetUpdateTests.newData)])
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: staging.url.appendingPathComponent("Live.app"), to: folder.appendingPathComponent("Live.app"))
        guard try await eventually(1.5, { try await widgets() == [.objectPaths([path])] }) else {
            daemon.stop(keepHome: true)
            Issue.record("the installed bundle was not seen: \(daemon.logText)")
            return
        }

        // A change to a manifest shows in the properties.
        let info = folder.appendingPathComponent("Live.app/PlugIns/W.appex/Info.plist")
        let text = try String(contentsOf: info, encoding: .utf8).replacingOccurrences(of: "<string>W</string>", with: "<string>Renamed</string>")
        try Data(text.utf8).write(to: info)
        #expect(try await eventually(1.5) { try await connection.property("org.example.Live.W", "DisplayName") == .string("Renamed") })

        try FileManager.default.removeItem(at: folder.appendingPathComponent("Live.app"))
        #expect(try await eventually(1.5) { try await widgets() == [.objectPaths([])] })

        // The whole folder goes, then comes back.
        try FileManager.default.removeItem(at: folder)
        #expect(try await eventually(1.5) { try await widgets() == [.objectPaths([])] }, "the widget goes with its folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: staging.url.appendingPathComponent("Live.app"), to: folder.appendingPathComponent("Live.app"))
        #expect(try await eventually(1.5) { try await widgets() == [.objectPaths([path])] })
        #expect(signals.value == ["InterfacesAdded \(path.rawValue)", "InterfacesRemoved \(path.rawValue)", "InterfacesAdded \(path.rawValue)"])
    }
}
