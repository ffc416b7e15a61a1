import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The installed files: the interface XML, the layout of `make install`,
/// and bus activation through the installed service file.
@Suite(.showsDaemonLogs) struct PackagingTests {
    static let interfaceFile = Paths.root.appendingPathComponent("data/dbus/io.github.todayd.Today1.xml").path

    /// The `<interface name="NAME">…</interface>` element of `xml`, with the
    /// comment before it.
    static func element(_ name: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<interface name=\"\(name)\">") else { return nil }
        guard let end = xml.range(of: "</interface>", range: start.upperBound..<xml.endIndex) else { return nil }
        var from = start.lowerBound
        let before = xml[..<from]
        if let comment = before.range(of: "<!--", options: .backwards), !before[comment.upperBound...].contains("-->\n <interface") {
            if before[comment.lowerBound...].contains("-->") { from = comment.lowerBound }
        }
        return String(xml[from..<end.upperBound])
    }

    @Test func theInterfaceFileIsWhatTheServiceIntrospects() async throws {
        let installed = try String(contentsOfFile: Self.interfaceFile, encoding: .utf8)
        #expect(installed == Today.interfaceXML, "run `make interfaces` after changing an interface")

        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        func introspect(_ path: ObjectPath) async throws -> String {
            try await client.call(Today.busName, path: path, interface: .introspectable, member: MemberName("Introspect")).body.first?.string ?? ""
        }
        let served = [
            (Today.center.name.rawValue, try await introspect(Today.managerPath)),
            (Today.widget.name.rawValue, try await introspect(Today.widgetPath("tech.agostini.app.LatestPost"))),
            (Today.group.name.rawValue, try await introspect(Today.groupPath("group.traffic"))),
        ]
        for (name, xml) in served {
            let live = Self.element(name, in: xml)
            #expect(live != nil, "\(name) is served")
            #expect(live == Self.element(name, in: installed), "\(name) differs from the installed file")
        }
        #expect(Self.element(Today.provider.name.rawValue, in: installed) != nil)
    }

    /// The banners idle small (design.md, "A program of its own"): their program
    /// links nothing that brings libxml2, whose ICU alone is half a MiB.
    @Test func theBannersNeverLoadLibxml2() async throws {
        let banners = Paths.root.appendingPathComponent(".build/debug/today-banners").path
        let needed = try await run(["readelf", "--dynamic", banners])
        #expect(needed.status == 0, "\(needed.error)")
        #expect(needed.output.contains("libgtk-3.so"), "\(needed.output)")
        #expect(!needed.output.contains("libxml2"), "\(needed.output)")
    }

    @Test func installLaysOutEveryFile() async throws {
        let root = try temporaryDirectory("install")
        defer { try? FileManager.default.removeItem(at: root) }
        let install = try await run([Paths.root.appendingPathComponent("scripts/install").path, Paths.root.appendingPathComponent(".build/debug").path, "/usr", root.path])
        #expect(install.status == 0, "\(install.error)")
        let expected: [(String, Int)] = [
            ("usr/bin/todayd", 0o755), ("usr/bin/todayctl", 0o755), ("usr/bin/today-view", 0o755), ("usr/bin/today-banners", 0o755),
            ("usr/share/applications/io.github.todayd.TodayView.desktop", 0o644),
            ("usr/lib/systemd/user/todayd.service", 0o644),
            ("usr/share/dbus-1/services/io.github.todayd.Today1.service", 0o644),
            ("usr/share/dbus-1/services/org.freedesktop.Notifications.service", 0o644),
            ("usr/share/dbus-1/services/org.gtk.Notifications.service", 0o644),
            ("usr/share/dbus-1/services/io.github.todayd.Today1.Banners.service", 0o644),
            ("usr/share/dbus-1/interfaces/io.github.todayd.Today1.xml", 0o644),
            ("usr/share/man/man8/todayd.8.gz", 0o644), ("usr/share/man/man1/todayctl.1.gz", 0o644),
            ("usr/share/bash-completion/completions/todayctl", 0o644), ("usr/share/zsh/vendor-completions/_todayctl", 0o644),
            ("usr/share/fish/vendor_completions.d/todayctl.fish", 0o644),
            ("usr/share/doc/todayd/README.md", 0o644), ("usr/share/doc/todayd/SPEC.md", 0o644), ("usr/share/doc/todayd/bars.md", 0o644),
        ]
        for (file, mode) in expected {
            var info = stat()
            #expect(stat(root.path + "/" + file, &info) == 0 && Int(info.st_mode & 0o777) == mode, "\(file)")
        }
        let activation = try String(contentsOfFile: root.path + "/usr/share/dbus-1/services/io.github.todayd.Today1.service", encoding: .utf8)
        #expect(activation == "[D-BUS Service]\nName=io.github.todayd.Today1\nExec=/usr/bin/todayd\nSystemdService=todayd.service\n")
        // The first notification starts todayd (SPEC section 14).
        for name in ["org.freedesktop.Notifications", "org.gtk.Notifications"] {
            let file = try String(contentsOfFile: root.path + "/usr/share/dbus-1/services/\(name).service", encoding: .utf8)
            #expect(file == "[D-BUS Service]\nName=\(name)\nExec=/usr/bin/todayd\nSystemdService=todayd.service\n")
        }
        // The first banner starts the banners (SPEC section 15).
        let banners = try String(contentsOfFile: root.path + "/usr/share/dbus-1/services/io.github.todayd.Today1.Banners.service", encoding: .utf8)
        #expect(banners == "[D-BUS Service]\nName=io.github.todayd.Today1.Banners\nExec=/usr/bin/today-banners\n")
        let unit = try String(contentsOfFile: root.path + "/usr/lib/systemd/user/todayd.service", encoding: .utf8)
        #expect(unit.contains("\nType=dbus\n") && unit.contains("\nBusName=io.github.todayd.Today1\n") && unit.contains("\nExecStart=/usr/bin/todayd\n"))
        let entry = try await run(["desktop-file-validate", root.path + "/usr/share/applications/io.github.todayd.TodayView.desktop"])
        #expect(entry.status == 0 && entry.output.isEmpty, "\(entry.output)")
        // The man pages render without warnings.
        for page in ["usr/share/man/man8/todayd.8.gz", "usr/share/man/man1/todayctl.1.gz"] {
            let rendered = try await run(["sh", "-c", "zcat \(root.path)/\(page) | groff -man -Tutf8 -ww -z 2>&1"])
            #expect(rendered.output.isEmpty, "\(page): \(rendered.output)")
        }
        // The completion loads in bash.
        let completion = try await run(["bash", "-c", "_init_completion() { :; }; source \(root.path)/usr/share/bash-completion/completions/todayctl && complete -p todayctl"])
        #expect(completion.output == "complete -F _todayctl todayctl\n")
    }

    @Test func theBusStartsTodaydOnTheFirstCall() async throws {
        try await TodayDaemon.withActivatableBus { bus, prefix, client in
            let widgets = try await client.center("ListWidgets")
            #expect(
                widgets.body == [
                    .objectPaths([
                        Today.widgetPath("tech.agostini.app.LatestPost"), Today.widgetPath("com.e-legion.Traffic.Widget"),
                        Today.widgetPath("org.example.Tram.Departures"),
                    ])
                ])
            let owner = try await client.callBus(MemberName("GetConnectionUnixProcessID"), [.string(Today.busName.rawValue)])
            guard case .uint32(let pid)? = owner.body.first else {
                Issue.record("no owner")
                return
            }
            let command = try String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8).split(separator: "\0").first.map(String.init)
            #expect(command == prefix + "/bin/todayd")
            kill(pid_t(pid), SIGKILL)

            // systemd's own check of the unit, whose ExecStart exists here.
            let verify = try await run(["systemd-analyze", "verify", "--man=no", prefix + "/lib/systemd/user/todayd.service"])
            #expect(!verify.error.contains("todayd.service:"), "\(verify.error)")
        }
    }
}
