import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// App groups through the real daemon: values both ways, identities,
/// storage on disk, limits.
@Suite(.showsDaemonLogs) struct GroupTests {
    static let group = "group.org.example.shared"
    static let groupPath = Today.groupPath(group)

    static func bundles() throws -> BundleFolder {
        let bundles = try BundleFolder()
        try bundles.addApp(
            "org.example.App",
            widgets: [
                .init(
                    name: "W",
                    script: """
                        value=$(dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply=literal --dest=io.github.todayd.Today1 \
                            /io/github/todayd/Today1/groups/group_2eorg_2eexample_2eshared io.github.todayd.Today1.Group.Get string:greeting | tr -d ' \\n')
                        container=${TODAY_GROUP_CONTAINERS#group.org.example.shared=}
                        printf '{"result": "new-data", "snapshot": {"title": "%s", "file": "%s"}}' "$value" "$(cat "$container/note.txt")"
                        """, groups: [group])
            ])
        try BundleRuleTests.writePlist(bundles.url.appendingPathComponent("org.example.App.app/Entitlements.plist")) {
            $0["com.apple.security.application-groups"] = .array([.string(group)])
        }
        try bundles.addApp("org.example.Stranger", widgets: [.init(name: "W", script: "exit 0")])
        return bundles
    }

    /// The daemon serving `bundles()`, and a connection to it.
    func withDaemon(_ body: (TodayDaemon, Connection) async throws -> Void) async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let app = try await daemon.ready()
        defer { app.close() }
        try await body(daemon, app)
    }

    /// The daemon serving `bundles()`, and a connection registered as the app.
    func withRegisteredApp(_ body: (TodayDaemon, Connection) async throws -> Void) async throws {
        try await withDaemon { daemon, app in
            try await app.center("RegisterApp", [.string("org.example.App")])
            try await body(daemon, app)
        }
    }

    static func errorName(_ body: () async throws -> Void) async -> String {
        await IdentityTests.errorName(body)
    }

    @discardableResult
    func call(_ connection: Connection, _ member: String, _ arguments: [Value] = []) async throws -> Message {
        try await connection.call(
            Today.busName, path: Self.groupPath, interface: Today.group.name, member: MemberName(rawValue: member) ?? MemberName("Get"),
            arguments)
    }

    @Test func valuesRoundTripAndLandInAPlainPlist() async throws {
        try await withRegisteredApp { daemon, app in
            let date = Date(timeIntervalSince1970: 1_796_083_200)
            let values: [(String, Value)] = [
                ("string", .string("Grüße ✓")), ("int", .int64(-42)), ("real", .double(2.5)), ("bool", .boolean(true)),
                ("data", .bytes(Data([0, 1, 255]))), ("date", .uint64(ValueMapping.microseconds(date))),
                ("array", .array(.variant, [.variant(.int64(1)), .variant(.string("two"))])),
                ("dict", .vardict([("nested", .vardict([("deep", .boolean(false))]))])),
            ]
            for (key, value) in values { try await call(app, "Set", [.string(key), .variant(value)]) }
            for (key, value) in values {
                #expect(try await call(app, "Get", [.string(key)]).body == [.variant(value)], "\(key)")
            }
            // Narrower types come back as the SPEC's: integers as x, o and g as s, structs as av.
            let narrow: [(Value, Value)] = [
                (.byte(7), .int64(7)), (.int16(-3), .int64(-3)), (.uint16(3), .int64(3)), (.int32(-5), .int64(-5)),
                (.uint32(5), .int64(5)), (.objectPath(ObjectPath("/a/b")), .string("/a/b")), (.signature(Signature(rawValue: "a{sv}") ?? Signature([])), .string("a{sv}")),
                (.structure([.int32(1), .string("x")]), .array(.variant, [.variant(.int64(1)), .variant(.string("x"))])),
            ]
            for (sent, expected) in narrow {
                try await call(app, "Set", [.string("narrow"), .variant(sent)])
                #expect(try await call(app, "Get", [.string("narrow")]).body == [.variant(expected)], "\(sent)")
            }
            try await call(app, "Update", [.vardict([("a", .int32(1)), ("b", .string("B"))]), .strings(["narrow", "absent"])])
            let all = try await call(app, "GetAll").body.first?.stringDictionary ?? [:]
            #expect(all.keys.sorted() == ["a", "array", "b", "bool", "data", "date", "dict", "int", "real", "string"])
            try await call(app, "Remove", [.string("a")])
            try await call(app, "Remove", [.string("a")])
            #expect(await Self.errorName { try await call(app, "Get", [.string("a")]) } == "io.github.todayd.Today1.Error.NoSuchKey")

            // The file is an XML plist that plutil and plistlib read, 0600 in 0700 folders.
            let file = daemon.home.path + "/data/todayd/groups/\(Self.group)/Library/Preferences/\(Self.group).plist"
            #expect(try await run(["plutil", "-lint", file]).status == 0)
            let python = try await run([
                "/usr/bin/python3", "-c",
                "import plistlib, sys; d = plistlib.load(open(sys.argv[1], 'rb')); print(d['string'], d['int'], d['real'], d['bool'], d['data'], d['date'].isoformat(), d['array'], d['dict'])",
                file,
            ])
            #expect(python.output == "Grüße ✓ -42 2.5 True b'\\x00\\x01\\xff' 2026-12-01T00:00:00 [1, 'two'] {'nested': {'deep': False}}\n", "\(python.error)")
            var info = stat()
            #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
            for folder in ["", "/\(Self.group)", "/\(Self.group)/Library", "/\(Self.group)/Library/Preferences"] {
                #expect(stat(daemon.home.path + "/data/todayd/groups" + folder, &info) == 0 && info.st_mode & 0o777 == 0o700, "\(folder)")
            }

            // busctl and gdbus, as a shell user would.
            let busctl = try await run([
                "busctl", "--address=\(daemon.address)", "call", Today.busName.rawValue, Self.groupPath.rawValue, Today.group.name.rawValue, "Get", "s", "int",
            ])
            #expect(busctl.output == "", "an unregistered busctl is refused")
            #expect(busctl.error.contains("RegisterApp"))
        }
    }

    @Test func whoMayUseAGroup() async throws {
        try await withDaemon { daemon, app in
            let anonymous = try Connection(address: daemon.address)
            defer { anonymous.close() }
            let stranger = try Connection(address: daemon.address)
            defer { stranger.close() }
            try await stranger.center("RegisterApp", [.string("org.example.Stranger")])
            let widget = try Connection(address: daemon.address)
            defer { widget.close() }
            try await widget.center("RegisterApp", [.string("org.example.App.W")])

            let ns = "io.github.todayd.Today1.Error."
            #expect(await Self.errorName { try await call(anonymous, "GetAll") } == ns + "NotRegistered")
            #expect(await Self.errorName { try await call(stranger, "GetAll") } == ns + "NotEntitled")
            #expect(await Self.errorName { try await stranger.center("ContainerPathForGroup", [.string(Self.group)]) } == ns + "NotEntitled")
            #expect(await Self.errorName { try await stranger.center("GroupObject", [.string(Self.group)]) } == ns + "NotEntitled")
            #expect(await Self.errorName { try await app.center("GroupObject", [.string(Self.group)]) } == ns + "NotRegistered")
            #expect(await Self.errorName { try await app.center("RegisterApp", [.string("org.example.Nope")]) } == ns + "NoSuchBundle")
            try await app.center("RegisterApp", [.string("org.example.App")])
            #expect(await Self.errorName { try await app.center("RegisterApp", [.string("org.example.App")]) } == ns + "AlreadyRegistered")
            #expect(await Self.errorName { try await app.center("GroupObject", [.string("group.org.example.unknown")]) } == ns + "NoSuchGroup")
            for bad in ["group.a/../b", "../etc", "group.", "group.a\u{0}b", "group." + String(repeating: "a", count: 300)] {
                #expect(await Self.errorName { try await app.center("ContainerPathForGroup", [.string(bad)]) } == "org.freedesktop.DBus.Error.InvalidArgs", "\(bad)")
            }
            #expect(try await app.center("GroupObject", [.string(Self.group)]).body == [.objectPath(Self.groupPath)])
            let container = try await app.center("ContainerPathForGroup", [.string(Self.group)]).body.first?.string ?? ""
            #expect(container == daemon.home.path + "/data/todayd/groups/\(Self.group)")
            #expect(FileSystem.isDirectory(container))
            // ContainerPath is for entitled callers only, and not in GetManagedObjects.
            let read = { (connection: Connection) in
                try await connection.call(
                    Today.busName, path: Self.groupPath, interface: .properties, member: MemberName("Get"),
                    [.string(Today.group.name.rawValue), .string("ContainerPath")])
            }
            #expect(try await read(app).body == [.variant(.string(container))])
            #expect(await Self.errorName { _ = try await read(stranger) } == ns + "NotEntitled")
            let managed = try await anonymous.call(Today.busName, path: Today.managerPath, interface: .objectManager, member: MemberName("GetManagedObjects"))
            #expect(!"\(managed.body)".contains("ContainerPath"))

            // Changed reaches the registered, entitled connections only.
            let heard = Locked<[String]>([])
            for (name, connection) in [("app", app), ("widget", widget), ("stranger", stranger), ("anonymous", anonymous)] {
                try await connection.subscribe(MatchRule(interface: Today.group.name, member: MemberName("Changed"))) { message in
                    heard.withLock { $0.append("\(name) \(message.body.first?.elements?.compactMap(\.string) ?? [])") }
                }
            }
            try await call(widget, "Set", [.string("greeting"), .variant(.string("hello"))])
            _ = try await eventually { heard.value.count >= 2 }
            // A signal todayd sent a connection arrives before todayd's answer
            // to a later call from it: after these, nothing more can come.
            for connection in [app, widget, stranger, anonymous] {
                _ = try await connection.call(Today.busName, path: Today.managerPath, interface: .peer, member: MemberName("Ping"))
            }
            #expect(heard.value.sorted() == ["app [\"greeting\"]", "widget [\"greeting\"]"])
        }
    }

    @Test func aProviderUsesItsGroups() async throws {
        try await withRegisteredApp { daemon, app in
            try await call(app, "Set", [.string("greeting"), .variant(.string("hello"))])
            let container = try await app.center("ContainerPathForGroup", [.string(Self.group)]).body.first?.string ?? ""
            try Data("from the app".utf8).write(to: URL(fileURLWithPath: container + "/note.txt"))
            #expect(try await app.widget("org.example.App.W", "PerformUpdate").body == [.string("new-data")])
            let snapshot = try await app.property("org.example.App.W", "Snapshot").stringDictionary ?? [:]
            #expect(snapshot["title"]?.unwrapped == .string("varianthello"))
            #expect(snapshot["file"]?.unwrapped == .string("from the app"))
        }
    }

    @Test func limitsAndBadValues() async throws {
        try await withRegisteredApp { daemon, app in
            let invalid = "org.freedesktop.DBus.Error.InvalidArgs"
            #expect(await Self.errorName { try await call(app, "Set", [.string(""), .variant(.int32(1))]) } == invalid)
            #expect(await Self.errorName { try await call(app, "Set", [.string(String(repeating: "k", count: 1025)), .variant(.int32(1))]) } == invalid)
            let fd = UnixFileDescriptor(owning: dup(1))
            #expect(await Self.errorName { try await call(app, "Set", [.string("fd"), .variant(.unixFD(fd))]) } == invalid)
            let intKeys = Value.dictionary(key: .int32, value: .string, [DictionaryEntry(.int32(1), .string("x"))])
            #expect(await Self.errorName { try await call(app, "Set", [.string("map"), .variant(intKeys)]) } == invalid)
            let big = Value.bytes(Data(repeating: 7, count: (4 << 20) + 1))
            #expect(await Self.errorName { try await call(app, "Set", [.string("big"), .variant(big)]) } == "io.github.todayd.Today1.Error.TooLarge")
            let chunk = Value.bytes(Data(repeating: 7, count: 3 << 20))
            for index in 0..<5 { try await call(app, "Set", [.string("chunk\(index)"), .variant(chunk)]) }
            #expect(await Self.errorName { try await call(app, "Set", [.string("chunk5"), .variant(chunk)]) } == "io.github.todayd.Today1.Error.TooLarge")
            // What was refused did not touch what is stored.
            let all = try await call(app, "GetAll").body.first?.stringDictionary ?? [:]
            #expect(all.keys.sorted() == ["chunk0", "chunk1", "chunk2", "chunk3", "chunk4"])
        }
    }

    @Test func neverThroughASymlink() async throws {
        try await withRegisteredApp { daemon, app in
            let container = try await app.center("ContainerPathForGroup", [.string(Self.group)]).body.first?.string ?? ""
            let elsewhere = try temporaryDirectory("elsewhere")
            defer { try? FileManager.default.removeItem(at: elsewhere) }
            try FileManager.default.createSymbolicLink(atPath: container + "/Library", withDestinationPath: elsewhere.path)
            #expect(await Self.errorName { try await call(app, "Set", [.string("k"), .variant(.string("v"))]) } == "org.freedesktop.DBus.Error.Failed")
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path) == [])
        }
    }

    @Test func aFlatpakAppUsesTheGroupsOfItsAppID() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("flatpak-group")
        defer { try? FileManager.default.removeItem(at: home) }
        let proc = home.appendingPathComponent("proc")
        let root = proc.appendingPathComponent("\(getpid())/root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let info = root.appendingPathComponent(".flatpak-info")
        try await withService(bundles: bundles.path, home: home, procRoot: proc.path) { _, bus in
            try Data("[Application]\nname=org.example.App\n".utf8).write(to: info)
            let sandboxed = try Connection(address: bus.address)
            defer { sandboxed.close() }
            try await call(sandboxed, "Set", [.string("k"), .variant(.string("v"))])
            #expect(try await call(sandboxed, "Get", [.string("k")]).body == [.variant(.string("v"))])
            try Data("[Application]\nname=org.example.Stranger\n".utf8).write(to: info)
            let other = try Connection(address: bus.address)
            defer { other.close() }
            #expect(await Self.errorName { try await call(other, "Get", [.string("k")]) } == "io.github.todayd.Today1.Error.NotEntitled")
        }
    }

    /// busctl and gdbus make a new connection for every call, so they reach
    /// a group as a provider todayd started (known by its process).
    @Test func busctlAndGdbusRoundTrips() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let group = Today.groupPath(Self.group).rawValue
        try bundles.addApp(
            "org.example.Shell",
            widgets: [
                .init(
                    name: "W",
                    script: """
                        b() { verb=$1; shift; busctl --address="$DBUS_SESSION_BUS_ADDRESS" "$verb" -- io.github.todayd.Today1 \(group) io.github.todayd.Today1.Group "$@"; }
                        b call Set sv s s "two words" >/dev/null
                        b call Set sv x x -42 >/dev/null
                        b call Set sv d d 2.5 >/dev/null
                        b call Set sv b b true >/dev/null
                        b call Set sv t t 1796083200000000 >/dev/null
                        b call Set sv ay ay 3 0 1 255 >/dev/null
                        b call Set sv av av 2 i 1 s two >/dev/null
                        b call Set sv dict a{sv} 1 inner s deep >/dev/null
                        out=""
                        for key in s x d b t ay av dict; do out="$out$(b call Get s $key | tr '\n' ' ');"; done
                        g=$(gdbus call --address "$DBUS_SESSION_BUS_ADDRESS" --dest io.github.todayd.Today1 --object-path \(group)                             --method io.github.todayd.Today1.Group.Get s)
                        printf '{"result": "new-data", "snapshot": {"busctl": "%s", "gdbus": "%s"}}' "$(echo "$out" | sed 's/"/\\\\"/g')" "$(echo "$g" | sed 's/"/\\\\"/g')"
                        """, groups: [Self.group])
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        #expect(try await client.widget("org.example.Shell.W", "PerformUpdate").body == [.string("new-data")])
        let snapshot = try await client.property("org.example.Shell.W", "Snapshot").stringDictionary ?? [:]
        let busctl = snapshot["busctl"]?.unwrapped.string ?? "\(snapshot)"
        #expect(busctl == #"v s "two words" ;v x -42 ;v d 2.5 ;v b true ;v t 1796083200000000 ;v ay 3 0 1 255 ;v av 2 x 1 s "two" ;v a{sv} 1 "inner" s "deep" ;"#)
        #expect(snapshot["gdbus"]?.unwrapped.string == #"(<'two words'>,)"#)
    }
}
