import DBus
@testable import Essentials
import Foundation
import PropertyList
import TestSupport
import Testing
import TodayProtocol

/// Up Next's calendar reading (libical) against an independent expansion:
/// Python's icalendar with recurring-ical-events, on calendars made at
/// random (weekly, daily and monthly rules, COUNT and UNTIL, EXDATE,
/// RECURRENCE-ID overrides, four time zones, UTC, floating and all-day
/// events, windows across daylight-saving changes).
@Suite struct CalendarDifferentialTests {
    static let packages = Paths.root.appendingPathComponent(".build/python-packages").path
    static let script = Paths.root.appendingPathComponent("Tests/TodayCoreTests/icalcheck.py").path

    struct Expected: Decodable {
        var file: String
        var from: Int64
        var to: Int64
        var occurrences: [[Occurrence]]

        enum Occurrence: Decodable, Hashable {
            case text(String), number(Int64)
            init(from decoder: any Decoder) throws {
                let value = try decoder.singleValueContainer()
                if let number = try? value.decode(Int64.self) { self = .number(number) } else { self = .text(try value.decode(String.self)) }
            }
        }
    }

    @Test func libicalAgreesWithRecurringIcalEvents() async throws {
        let seed = ProcessInfo.processInfo.environment["TODAY_ICAL_SEED"].flatMap(Int.init) ?? 20_261_203
        let count = ProcessInfo.processInfo.environment["TODAY_ICAL_COUNT"].flatMap(Int.init) ?? 250
        let folder = try temporaryDirectory("ical")
        defer { try? FileManager.default.removeItem(at: folder) }
        let zone = "Europe/Berlin"
        let made = try await run(
            ["env", "PYTHONPATH=\(Self.packages)", "/usr/bin/python3", Self.script, "\(seed)", "\(count)", folder.path, zone], timeout: 300)
        try #require(made.status == 0, "icalcheck.py (seed \(seed)): \(made.error) — `make test-build` installs icalendar and recurring-ical-events")
        let lines = made.output.split(separator: "\n")
        #expect(lines.count == count)
        var compared = 0, occurrences = 0
        for line in lines {
            let expected = try JSONDecoder().decode(Expected.self, from: Data(line.utf8))
            let found = CalendarReader.occurrences(
                inFiles: [expected.file], from: Date(timeIntervalSince1970: TimeInterval(expected.from)),
                to: Date(timeIntervalSince1970: TimeInterval(expected.to)), zone: TimeZone(identifier: zone) ?? .current)
            let ours = Set(found.map { [Expected.Occurrence.text($0.uid), .number(Int64($0.start.timeIntervalSince1970)), .number(Int64($0.end.timeIntervalSince1970))] })
            let theirs = Set(expected.occurrences)
            let text = (try? String(contentsOfFile: expected.file, encoding: .utf8)) ?? ""
            #expect(ours == theirs, "seed \(seed), \(expected.file) window \(expected.from)..<\(expected.to): only libical \(ours.subtracting(theirs)), only Python \(theirs.subtracting(ours))\n\(text)")
            compared += 1
            occurrences += theirs.count
        }
        #expect(compared >= 200 && occurrences >= 100, "only \(compared) calendars with \(occurrences) occurrences were compared")
    }
}

@Suite struct WorldClockTests {
    static func date(_ text: String) -> Date {
        (try? Date(text, strategy: .iso8601)) ?? Date(timeIntervalSince1970: 0)
    }

    @Test func offsetsFollowDaylightSavingChanges() throws {
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        let newYork = try #require(TimeZone(identifier: "America/New_York"))
        // Between the US change (14 March 2027) and the European one (28 March) the gap is 5 hours, else 6.
        #expect(ClockEntry.offsetText(of: berlin, from: newYork, at: Self.date("2027-03-10T12:00:00Z")) == "+6 h")
        #expect(ClockEntry.offsetText(of: berlin, from: newYork, at: Self.date("2027-03-20T12:00:00Z")) == "+5 h")
        #expect(ClockEntry.offsetText(of: berlin, from: newYork, at: Self.date("2027-03-29T12:00:00Z")) == "+6 h")
        let kolkata = try #require(TimeZone(identifier: "Asia/Kolkata"))
        #expect(ClockEntry.offsetText(of: kolkata, from: berlin, at: Self.date("2027-01-10T12:00:00Z")) == "+4 h 30 min")
        #expect(ClockEntry.offsetText(of: newYork, from: berlin, at: Self.date("2027-01-10T12:00:00Z")) == "−6 h")
    }

    @Test func theDayIsTheZonesOwn() throws {
        let tokyo = try #require(TimeZone(identifier: "Asia/Tokyo"))
        let honolulu = try #require(TimeZone(identifier: "Pacific/Honolulu"))
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        // 20:00 in Berlin is 04:00 the next day in Tokyo, 09:00 the same day in Honolulu.
        let evening = Self.date("2027-06-01T18:00:00Z")
        #expect(ClockEntry.dayText(of: tokyo, from: berlin, at: evening) == "Tomorrow")
        #expect(ClockEntry.dayText(of: honolulu, from: berlin, at: evening) == "Today")
        #expect(ClockEntry.dayText(of: honolulu, from: tokyo, at: evening) == "Yesterday")
    }

    @Test func dayAndNightFromTheSun() throws {
        let berlin = try #require(ZonePlace(identifier: "Europe/Berlin"))
        #expect(berlin.city == "Berlin")
        #expect(berlin.isDaylight(at: Self.date("2027-06-21T11:00:00Z")) == true)
        #expect(berlin.isDaylight(at: Self.date("2027-06-21T23:00:00Z")) == false)
        // 21 June: Berlin's sun sets at about 19:33 UTC.
        #expect(berlin.isDaylight(at: Self.date("2027-06-21T19:20:00Z")) == true)
        #expect(berlin.isDaylight(at: Self.date("2027-06-21T19:45:00Z")) == false)
        // Midwinter at noon: day in Sydney, night at the South Pole's opposite.
        let sydney = try #require(ZonePlace(identifier: "Australia/Sydney"))
        #expect(sydney.isDaylight(at: Self.date("2027-12-21T02:00:00Z")) == true)
        let utc = try #require(ZonePlace(identifier: "UTC"))
        #expect(utc.isDaylight(at: Date()) == nil)
        #expect(ZonePlace.cityName(of: "America/Argentina/Buenos_Aires") == "Buenos Aires, Argentina")
    }

    @Test func aTimelineOfOneEntryAMinute() throws {
        let place = try #require(ZonePlace(identifier: "Asia/Tokyo"))
        let home = try #require(TimeZone(identifier: "Europe/Berlin"))
        let entries = WorldClock.minutes(from: Self.date("2027-03-28T00:59:30Z"), place: place, home: home)
        #expect(entries.count == 60)
        #expect(entries.first?.date == Self.date("2027-03-28T00:59:00Z"))
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $1.date.timeIntervalSince($0.date) == 60 })
        // Berlin moves its clocks at 01:00 UTC: Tokyo is 8 hours ahead, then 7.
        #expect(entries[0].snapshot.body?.hasPrefix("Today, +8 h") == true)
        #expect(entries[1].snapshot.body?.hasPrefix("Today, +7 h") == true)
        #expect(entries[0].snapshot.title == "Tokyo")
    }

    @Test func zoneTableCoordinates() throws {
        let table = ZoneTable.system
        let berlin = try #require(table.coordinates["Europe/Berlin"])
        #expect(abs(berlin.latitude - 52.5) < 0.1 && abs(berlin.longitude - 13.37) < 0.1)
        let newYork = try #require(table.coordinates["America/New_York"])
        #expect(abs(newYork.latitude - 40.71) < 0.1 && abs(newYork.longitude + 74.0) < 0.1)
        #expect(table.names.count > 300)
    }
}

extension Paths {
    /// Essentials.app as `make test-build` assembles it.
    static let essentials = root.appendingPathComponent(".build/essentials").path
}

/// todayd serving Essentials.app on a bus of its own that starts the two
/// providers that answer on the bus (their service files as `make install`
/// writes them, pointing into the assembled bundle).
final class EssentialsService {
    let home: URL
    let bus: BusDaemon
    private(set) var daemon: TodayDaemon
    private(set) var client: Connection
    private let services: URL
    private let environment: [String: String]

    init(environment extra: [String: String] = [:]) async throws {
        home = try temporaryDirectory("essentials")
        services = try temporaryDirectory("essentials-services")
        for widget in ["NowPlaying", "Battery"] {
            let exec = Paths.essentials + "/Essentials.app/PlugIns/\(widget).appex/todayd-essentials serve"
            try Data("[D-BUS Service]\nName=io.github.todayd.Essentials.\(widget)\nExec=\(exec)\n".utf8)
                .write(to: services.appendingPathComponent("io.github.todayd.Essentials.\(widget).service"))
        }
        var environment = TodayDaemon.environment(home: home)
        environment.merge(extra) { _, given in given }
        bus = try await BusDaemon.start(serviceFolders: [services.path], environment: environment)
        daemon = try TodayDaemon(bundles: [Paths.essentials], home: home, address: bus.address, environment: extra)
        client = try await daemon.ready()
        self.environment = extra
    }

    /// Stops todayd and starts it again on the same bus and home; the
    /// providers on the bus keep running.
    func restart() async throws {
        client.close()
        daemon.stop(keepHome: true)
        daemon = try TodayDaemon(bundles: [Paths.essentials], home: home, address: bus.address, environment: environment)
        client = try await daemon.ready()
    }

    func stop() {
        client.close()
        daemon.stop()
        bus.stop()
        try? FileManager.default.removeItem(at: services)
    }

    func snapshot(_ id: String) async throws -> [String: Value] {
        try await client.property(id, "Snapshot").stringDictionary ?? [:]
    }

    func snapshot(at path: ObjectPath) async throws -> [String: Value] {
        let reply = try await client.call(
            Today.busName, path: path, interface: .properties, member: MemberName("Get"), [.string(Today.widget.name.rawValue), .string("Snapshot")])
        return reply.body.first?.unwrapped.stringDictionary ?? [:]
    }

    func update(_ id: String) async throws -> String {
        try await client.widget(id, "PerformUpdate").body.first?.string ?? ""
    }

    func add(_ kind: String, _ configuration: [(String, Value)]) async throws -> ObjectPath {
        let reply = try await client.center("AddWidget", [.string(kind), VariantDictionary(configuration).value, .string(""), .int32(-1)])
        guard case .objectPath(let path)? = reply.body.first else { throw DBusError.failed("AddWidget gave no path") }
        return path
    }

    func options(_ id: String, _ key: String) async throws -> [String] {
        let reply = try await client.widget(id, "GetOptions", [.string(key)])
        return reply.body.first?.elements?.compactMap { $0.stringDictionary?["value"]?.string } ?? []
    }
}

extension [String: Value] {
    var title: String { self["title"]?.string ?? "" }
    var subtitle: String { self["subtitle"]?.string ?? "" }
    var body: String { self["body"]?.string ?? "" }
}

@Suite(.serialized, .showsDaemonLogs) struct EssentialsWidgetTests {
    static let battery = "io.github.todayd.Essentials.Battery"
    static let nowPlaying = "io.github.todayd.Essentials.NowPlaying"
    static let worldClock = "io.github.todayd.Essentials.WorldClock"
    static let upNext = "io.github.todayd.Essentials.UpNext"
    static let weather = "io.github.todayd.Essentials.Weather"

    @Test func allFiveAreInstalledAndNamedInGerman() async throws {
        let service = try await EssentialsService(environment: ["LANG": "C.UTF-8", "LANGUAGE": "de"])
        defer { service.stop() }
        let list = try await run(["env", "LANGUAGE=de", Paths.todayctl, "--address", service.bus.address, "list"])
        for (id, name) in [(Self.battery, "Batterie"), (Self.nowPlaying, "Wiedergabe"), (Self.worldClock, "Weltuhr"), (Self.upNext, "Als Nächstes"), (Self.weather, "Wetter")] {
            #expect(list.output.contains("\(id)\t\(name)"), "\(list.output)")
        }
    }

    /// With no configuration at all, each says something sensible in
    /// `todayctl show` and in a bar.
    @Test func allFiveShowInTodayctlAndTheBars() async throws {
        // No system bus (no battery), no player, no calendar, no network.
        let service = try await EssentialsService(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket"])
        defer { service.stop() }
        let update = try await run([Paths.todayctl, "--address", service.bus.address, "update", "--all"], timeout: 60)
        #expect(update.status == 0, "\(update.output)\(update.error)")
        let cards = try await run([Paths.todayctl, "--address", service.bus.address, "show"]).output
        for text in ["No player is running", "Nothing in the next 24 hours", "Today, same time"] {
            #expect(cards.contains(text), "\(cards)")
        }
        // Without the network (as here), Weather says why; with it, the city's forecast.
        #expect(cards.contains("No forecast") || cards.contains("°C in "), "\(cards)")
        let battery = try await run([Paths.todayctl, "--address", service.bus.address, "show", Self.battery])
        #expect(battery.output.contains("No battery"), "\(battery.output)")
        let bar = try await run(
            [Paths.todayctl, "--address", service.bus.address, "bar", Self.worldClock, Self.upNext, Self.nowPlaying, "--format", "waybar", "--once"])
        let line = try #require(try JSONSerialization.jsonObject(with: Data(bar.output.utf8)) as? [String: Any], "\(bar.output)\(bar.error)")
        #expect((line["text"] as? String)?.contains("No player is running") == true, "\(line)")
        #expect((line["tooltip"] as? String)?.contains("World Clock") == true, "\(line)")
    }

    /// UPower as python3-dbusmock's upower template plays it, on a system
    /// bus of the test's own, with a display device.
    final class MockUPower {
        let system: BusDaemon
        private let upower: Background
        private let mock: Connection
        private static let name = BusName("org.freedesktop.UPower")
        private static let mockInterface = InterfaceName("org.freedesktop.DBus.Mock")

        /// The display device: a battery at `percentage` with `timeToEmpty` seconds left, discharging.
        init(percentage: Double, timeToEmpty: Int64, icon: String = "") async throws {
            system = try await BusDaemon.start()
            do {
                upower = try Background(
                    "/usr/bin/env", ["DBUS_SYSTEM_BUS_ADDRESS=\(system.address)", "/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "upower"])
            } catch {
                system.stop()
                throw error
            }
            do {
                mock = try await Connection.connect(address: system.address)
            } catch {
                upower.stop()
                system.stop()
                throw error
            }
            do {
                _ = try await mock.waitForOwner(of: Self.name, timeout: .seconds(10))
                try await mock.call(
                    Self.name, path: ObjectPath("/org/freedesktop/UPower"), interface: Self.mockInterface, member: MemberName("SetupDisplayDevice"),
                    [.uint32(2), .uint32(2), .double(percentage), .double(percentage / 2), .double(50), .double(10), .int64(timeToEmpty), .int64(0),
                     .boolean(true), .string(icon), .uint32(1)])
            } catch {
                stop()
                throw error
            }
        }

        /// Sets properties of the display device, as a change of the battery would.
        func set(_ properties: [(String, Value)]) async throws {
            try await mock.call(
                Self.name, path: ObjectPath("/org/freedesktop/UPower"), interface: Self.mockInterface, member: MemberName("SetDeviceProperties"),
                [.objectPath(ObjectPath("/org/freedesktop/UPower/devices/DisplayDevice")), VariantDictionary(properties).value])
        }

        func stop() {
            mock.close()
            upower.stop()
            system.stop()
        }
    }

    /// Battery on UPower: discharging, charging, no battery.
    @Test func batteryFollowsUPower() async throws {
        let upower = try await MockUPower(percentage: 76, timeToEmpty: 11_400, icon: "battery-good-symbolic")
        defer { upower.stop() }
        let service = try await EssentialsService(environment: ["DBUS_SYSTEM_BUS_ADDRESS": upower.system.address])
        defer { service.stop() }
        #expect(try await service.update(Self.battery) == "new-data")
        var card = try await service.snapshot(Self.battery)
        #expect(card.title == "76 %" && card.subtitle == "3 h 10 min left", "\(card)")

        // Plugged in: the provider hears it and todayd reloads, no update asked for.
        try await upower.set([("State", .uint32(1)), ("Percentage", .double(80)), ("TimeToFull", .int64(1800))])
        #expect(try await eventually(5) { try await service.snapshot(Self.battery).subtitle == "Charging, full in 30 min" })
        card = try await service.snapshot(Self.battery)
        #expect(card.title == "80 %")

        // The battery taken out: the widget has no content, and back.
        try await upower.set([("IsPresent", .boolean(false))])
        #expect(try await eventually(5) { try await service.client.property(Self.battery, "HasContent") == .boolean(false) })
        try await upower.set([("IsPresent", .boolean(true)), ("State", .uint32(4))])
        #expect(try await eventually(5) { try await service.client.property(Self.battery, "HasContent") == .boolean(true) })
        #expect(try await eventually(5) { try await service.snapshot(Self.battery).subtitle == "Fully charged" })
    }

    /// A provider on the bus outlives todayd: after a restart, what it
    /// follows still reaches the widget (it registers again).
    @Test func busProvidersOutliveARestartOfTodayd() async throws {
        let upower = try await MockUPower(percentage: 50, timeToEmpty: 3600)
        defer { upower.stop() }
        let service = try await EssentialsService(environment: ["DBUS_SYSTEM_BUS_ADDRESS": upower.system.address])
        defer { service.stop() }
        #expect(try await service.update(Self.battery) == "new-data")
        // A first change reaches the widget, so the provider has registered with this todayd.
        try await upower.set([("Percentage", .double(40))])
        #expect(try await eventually(5) { try await service.snapshot(Self.battery).title == "40 %" })
        try await service.restart()
        try await upower.set([("Percentage", .double(30))])
        #expect(try await eventually(5) { try await service.snapshot(Self.battery).title == "30 %" })
    }

    @Test func noUPowerIsNoBattery() async throws {
        let service = try await EssentialsService(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket"])
        defer { service.stop() }
        #expect(try await service.update(Self.battery) == "new-data")
        #expect(try await eventually(5) { try await service.client.property(Self.battery, "HasContent") == .boolean(false) })
        #expect(try await service.snapshot(Self.battery).title == "No battery")
    }

    /// Now Playing with mpv (Debian's mpv-mpris) playing two generated
    /// songs with no sound device, and playerctl on the same bus.
    @Test func nowPlayingFollowsMpvAndDrivesIt() async throws {
        let folder = try temporaryDirectory("songs")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (file, title) in [("one.wav", "First Song"), ("two.wav", "Second Song")] {
            let song = Paths.root.appendingPathComponent("scripts/make-song.py").path
            let made = try await run(["/usr/bin/python3", song, folder.appendingPathComponent(file).path, title, "The Testers", "Album One"])
            try #require(made.status == 0, "\(made.error)")
        }
        let service = try await EssentialsService()
        defer { service.stop() }
        #expect(try await service.update(Self.nowPlaying) == "new-data")
        #expect(try await service.snapshot(Self.nowPlaying).title == "No player is running")

        var environment = TodayDaemon.environment(home: service.home)
        environment["DBUS_SESSION_BUS_ADDRESS"] = service.bus.address
        let mpv = try Background(
            "/usr/bin/mpv", ["--no-config", "--ao=null", "--no-video", "--idle=no", "--really-quiet", "--script=/etc/mpv/scripts/mpris.so",
                             folder.appendingPathComponent("one.wav").path, folder.appendingPathComponent("two.wav").path],
            environment: environment)
        defer { mpv.stop() }
        // The player appearing is enough: no update is asked for.
        #expect(try await eventually(10) { try await service.snapshot(Self.nowPlaying).title == "First Song" })
        let card = try await service.snapshot(Self.nowPlaying)
        #expect(card.subtitle == "The Testers — Album One" && card.body.hasPrefix("Playing"), "\(card)")
        #expect(try await service.options(Self.nowPlaying, "player").contains("mpv"))

        func playerctl(_ arguments: String...) async throws -> String {
            try await run(["env", "DBUS_SESSION_BUS_ADDRESS=\(service.bus.address)", "playerctl", "--player=mpv"] + arguments).output
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // The widget's buttons change what playerctl sees…
        #expect(try await service.client.widget(Self.nowPlaying, "PerformAction", [.string("next"), VariantDictionary([]).value]).body.first?.string == "new-data")
        #expect(try await eventually(5) { try await playerctl("metadata", "title") == "Second Song" })
        #expect(try await service.client.widget(Self.nowPlaying, "PerformAction", [.string("play-pause"), VariantDictionary([("state", .boolean(false))]).value]).body.first?.string == "new-data")
        #expect(try await eventually(5) { try await playerctl("status") == "Paused" })
        // …and playerctl's commands change the widget.
        _ = try await playerctl("play")
        #expect(try await eventually(5) { try await service.snapshot(Self.nowPlaying).body.hasPrefix("Playing") })
        _ = try await playerctl("previous")
        #expect(try await eventually(5) { try await service.snapshot(Self.nowPlaying).title == "First Song" })
        // The player gone: so is its song.
        mpv.stop()
        #expect(try await eventually(5) { try await service.snapshot(Self.nowPlaying).title == "No player is running" })
    }

    @Test func worldClocksSideBySide() async throws {
        let service = try await EssentialsService()
        defer { service.stop() }
        let zones = try await service.options(Self.worldClock, "zone")
        #expect(zones.contains("Asia/Tokyo") && zones.contains("America/New_York") && zones.count > 300)
        func minute() -> Int { Int(Date().timeIntervalSince1970 / 60) }
        let madeFrom = minute()
        let tokyo = try await service.add(Self.worldClock, [("zone", .string("Asia/Tokyo"))])
        let lima = try await service.add(Self.worldClock, [("zone", .string("America/Lima"))])
        #expect(try await eventually(10) {
            let (first, second) = (try await service.snapshot(at: tokyo), try await service.snapshot(at: lima))
            return first.title == "Tokyo" && second.title == "Lima"
        })
        // What todayd shows is the tz database's time there.
        let card = try await service.snapshot(at: tokyo)
        let expected = Date().formatted(Date.FormatStyle(date: .omitted, time: .shortened, timeZone: TimeZone(identifier: "Asia/Tokyo") ?? .gmt))
        let later = Date().addingTimeInterval(5).formatted(Date.FormatStyle(date: .omitted, time: .shortened, timeZone: TimeZone(identifier: "Asia/Tokyo") ?? .gmt))
        #expect(card.subtitle == expected || card.subtitle == later, "\(card)")
        let timeline = try await run([Paths.todayctl, "--address", service.bus.address, "timeline", Self.worldClock + "/1"])
        // An entry a minute for the hour from the minute it was made; those
        // of minutes that have passed since are gone.
        let passed = minute() - madeFrom
        let entries = timeline.output.split(separator: "\n").filter { $0.contains("\"Tokyo\"") }.count
        #expect((60 - passed...60).contains(entries), "\(entries) entries, \(passed) minutes after: \(timeline.output)\(timeline.error)")
        #expect(try await service.client.property(Self.worldClock, "Sandboxed") == .boolean(FileManager.default.isExecutableFile(atPath: "/usr/bin/bwrap")))
    }

    /// Up Next reads the user's calendar folders by default and what the
    /// settings name, from inside its sandbox.
    @Test func upNextReadsCalendarsInItsSandbox() async throws {
        let service = try await EssentialsService()
        defer { service.stop() }
        func stamp(_ date: Date) -> String {
            let format = Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateSeparator(.omitted).time(includingFractionalSeconds: false).timeSeparator(.omitted)
            return date.formatted(format) + "Z"
        }
        func calendar(_ events: [(String, Date, Date)]) -> String {
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//todayd tests//EN\r\n" + events.enumerated().map { index, event in
                "BEGIN:VEVENT\r\nUID:\(index)-\(event.0.hashValue)@tests\r\nSUMMARY:\(event.0)\r\nDTSTART:\(stamp(event.1))\r\nDTEND:\(stamp(event.2))\r\nEND:VEVENT\r\n"
            }.joined() + "END:VCALENDAR\r\n"
        }
        let now = Date()
        // khal's layout: a folder per calendar under ~/.calendars.
        let khal = service.home.appendingPathComponent(".calendars/work")
        try FileManager.default.createDirectory(at: khal, withIntermediateDirectories: true)
        try calendar([("Stand-up", now.addingTimeInterval(1200), now.addingTimeInterval(2100))]).write(to: khal.appendingPathComponent("standup.ics"), atomically: true, encoding: .utf8)
        #expect(try await service.update(Self.upNext) == "new-data")
        var card = try await service.snapshot(Self.upNext)
        #expect(card.title == "Stand-up", "\(card)")

        // A file elsewhere, named in the settings.
        let elsewhere = try temporaryDirectory("calendar")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let file = elsewhere.appendingPathComponent("family.ics")
        try calendar([("Dentist", now.addingTimeInterval(3600), now.addingTimeInterval(5400)), ("Dinner", now.addingTimeInterval(7200), now.addingTimeInterval(9000))])
            .write(to: file, atomically: true, encoding: .utf8)
        let family = try await service.add(Self.upNext, [("sources", .string(file.path))])
        #expect(try await eventually(10) { try await service.snapshot(at: family).title == "Dentist" })
        card = try await service.snapshot(at: family)
        #expect(card.body == "1 more in the next 24 hours", "\(card)")
        // What it is not given, it cannot read: the same file through a folder not named.
        let other = try await service.add(Self.upNext, [("sources", .string("/nonexistent"))])
        #expect(try await eventually(10) { try await service.snapshot(at: other).title == "Nothing in the next 24 hours" })

        // A tap opens the calendar app: the webcal handler the mime-apps lists name.
        let applications = service.home.appendingPathComponent("data/applications")
        try FileManager.default.createDirectory(at: applications, withIntermediateDirectories: true)
        let opened = elsewhere.appendingPathComponent("opened")
        let calendarApp = elsewhere.appendingPathComponent("calendar-app")
        try writeExecutable("#!/bin/sh\n\(URLTests.recorder(elsewhere, "opened"))\n", to: calendarApp.path)
        try Data("[Desktop Entry]\nType=Application\nName=Calendar\nExec=\(calendarApp.path) %u\nMimeType=x-scheme-handler/webcal;\n".utf8)
            .write(to: applications.appendingPathComponent("org.example.Calendar.desktop"))
        let handler = try await service.client.widget(Self.upNext, "Activate", [VariantDictionary([]).value])
        #expect(handler.body.first?.string == "org.example.Calendar")
        #expect(try await URLTests.lines(opened) == ["1|webcal://|"])
    }
}

/// Weather against recorded Open-Meteo answers served by Python's
/// http.server on 127.0.0.1: a forecast, the last one kept when the
/// server is gone, malformed JSON, an HTTP error, a server that never
/// answers, a place nobody knows.
@Suite(.showsDaemonLogs) struct WeatherWidgetTests {
    static let weather = "io.github.todayd.Essentials.Weather"
    static let forecast = """
        {"latitude":38.72,"longitude":-9.14,"generationtime_ms":0.05,"utc_offset_seconds":0,"timezone":"Europe/Lisbon",
        "timezone_abbreviation":"WET","elevation":7.0,
        "current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","weather_code":"wmo code","is_day":"","wind_speed_10m":"km/h"},
        "current":{"time":"2026-12-03T14:00","interval":900,"temperature_2m":16.4,"weather_code":2,"is_day":1,"wind_speed_10m":11.2},
        "hourly_units":{"time":"iso8601","temperature_2m":"°C","weather_code":"wmo code"},
        "hourly":{"time":["2026-12-03T14:00","2026-12-03T15:00","2026-12-03T16:00","2026-12-03T17:00","2026-12-03T18:00","2026-12-03T19:00","2026-12-03T20:00"],
        "temperature_2m":[16.4,16.9,16.1,14.8,13.9,13.2,12.8],"weather_code":[2,3,3,61,61,3,0]}}
        """
    static let places = """
        {"results":[{"id":2267057,"name":"Lisbon","latitude":38.71667,"longitude":-9.13333,"elevation":45.0,"feature_code":"PPLC",
        "country_code":"PT","timezone":"Europe/Lisbon","country":"Portugal"}],"generationtime_ms":0.6}
        """

    @Test func forecastsFromARecordedServer() async throws {
        let root = try temporaryDirectory("open-meteo")
        defer { try? FileManager.default.removeItem(at: root) }
        func serve(_ path: String, _ text: String) throws {
            let file = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        try serve("good/v1/forecast", Self.forecast)
        try serve("good/v1/search", Self.places)
        try serve("broken/v1/forecast", "{\"current\": {\"time\": \"2026-12-03T14:00\", \"temperature_2m\": \"warm\"")
        try serve("nobody/v1/search", "{\"generationtime_ms\":0.4}")
        let log = root.appendingPathComponent("requests.log").path
        // http.server's handler on a port the system picks, written to a file once it listens.
        let portFile = root.appendingPathComponent("port").path
        let server = try Background(
            "/bin/sh",
            ["-c", """
                exec /usr/bin/python3 -c 'import functools, http.server, os, sys
                handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
                open(sys.argv[2] + ".new", "w").write(str(server.server_address[1]))
                os.rename(sys.argv[2] + ".new", sys.argv[2])
                server.serve_forever()' '\(root.path)' '\(portFile)' 2>'\(log)'
                """])
        defer { server.stop() }
        // A server that takes the connection and never answers.
        let silentFile = root.appendingPathComponent("silent-port").path
        let silentServer = try Background(
            "/usr/bin/python3",
            ["-c", "import os, socket, sys, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()\n"
                + "open(sys.argv[1] + '.new', 'w').write(str(s.getsockname()[1]))\nos.rename(sys.argv[1] + '.new', sys.argv[1])\ntime.sleep(300)",
             silentFile])
        defer { silentServer.stop() }
        func listening(_ file: String) async throws -> Int {
            _ = try await eventually(30) { FileManager.default.fileExists(atPath: file) }
            return try #require(Int((try? String(contentsOfFile: file, encoding: .utf8)) ?? ""), "no port in \(file)")
        }
        let port = try await listening(portFile)
        let silentPort = try await listening(silentFile)

        let service = try await EssentialsService()
        defer { service.stop() }
        let base = "http://127.0.0.1:\(port)"
        let lisbon = try await service.add(Self.weather, [("place", .string("Lisbon")), ("endpoint", .string(base + "/good"))])
        #expect(try await eventually(15) { try await service.snapshot(at: lisbon).title == "16°C in Lisbon" })
        var card = try await service.snapshot(at: lisbon)
        #expect(card.subtitle == "Partly cloudy" && card.body == "Partly cloudy, wind 11 km/h", "\(card)")
        #expect(card["items"]?.elements?.count == 5)
        // Updated again: the place is not geocoded twice.
        _ = try await service.client.call(Today.busName, path: lisbon, interface: Today.widget.name, member: MemberName("PerformUpdate"))
        let requests = try String(contentsOfFile: log, encoding: .utf8)
        #expect(requests.components(separatedBy: "GET /good/v1/search").count - 1 == 1, "\(requests)")
        #expect(requests.components(separatedBy: "GET /good/v1/forecast").count - 1 >= 1)

        // What cannot be read says why.
        let broken = try await service.add(Self.weather, [("place", .string("38.72,-9.14")), ("endpoint", .string(base + "/broken"))])
        let missing = try await service.add(Self.weather, [("place", .string("38.72,-9.14")), ("endpoint", .string(base + "/missing"))])
        let nobody = try await service.add(Self.weather, [("place", .string("Nowhere")), ("endpoint", .string(base + "/nobody"))])
        let silent = try await service.add(Self.weather, [("place", .string("0,0")), ("endpoint", .string("http://127.0.0.1:\(silentPort)"))])
        var cards: [[String: Value]] = []
        let settled = try await eventually(30) {
            cards = []
            for path in [broken, missing, nobody, silent] { cards.append(try await service.snapshot(at: path)) }
            return cards.allSatisfy { $0.title == "No forecast" }
        }
        #expect(settled, "\(cards)")
        if settled {
            #expect(cards[0].subtitle.contains("not the JSON Open-Meteo sends"), "\(cards[0])")
            #expect(cards[1].subtitle == "127.0.0.1 answered HTTP 404", "\(cards[1])")
            #expect(cards[2].subtitle.contains("knows no place called 'Nowhere'"), "\(cards[2])")
            #expect(cards[3].subtitle.contains("did not answer"), "\(cards[3])")
        }

        // Offline: the last forecast stays, with its age.
        server.stop()
        _ = try await service.client.call(Today.busName, path: lisbon, interface: Today.widget.name, member: MemberName("PerformUpdate"))
        card = try await service.snapshot(at: lisbon)
        #expect(card.title == "16°C in Lisbon" && card.body.contains("updated just now (offline)"), "\(card)")
        #expect(try await service.client.property(Self.weather, "Sandboxed") == .boolean(FileManager.default.isExecutableFile(atPath: "/usr/bin/bwrap")))
    }

    @Test func answersAreReadAsOpenMeteoWritesThem() throws {
        let place = WeatherPlace(name: "Lisbon", latitude: 38.72, longitude: -9.14)
        let forecast = try Forecast.decode(Data(Self.forecast.utf8), place: place, fetched: Date(timeIntervalSince1970: 0))
        #expect(forecast.temperature == 16.4 && forecast.code == 2 && forecast.isDay && forecast.unit == "°C")
        #expect(forecast.hours.map { String($0.time.suffix(5)) } == ["15:00", "16:00", "17:00", "18:00", "19:00"])
        #expect(WeatherPlace.coordinates("38.72, -9.14") == WeatherPlace(name: "38.72, -9.14", latitude: 38.72, longitude: -9.14))
        #expect(WeatherPlace.coordinates("91,0") == nil && WeatherPlace.coordinates("Lisbon") == nil)
        #expect(throws: WeatherError.self) { try Forecast.decode(Data("{}".utf8), place: place, fetched: Date()) }
        #expect(Forecast.age(from: Date(timeIntervalSince1970: 0), to: Date(timeIntervalSince1970: 7300)) == "updated 2 h ago")
    }
}

/// Now Playing's model of a player, from MPRIS properties as players send them.
@Suite struct MediaPlayerTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func playing(at date: Date = start, track: ObjectPath = ObjectPath("/track/1")) -> MediaPlayer {
        var player = MediaPlayer(name: "mpv")
        player.apply(
            [
                "PlaybackStatus": .string("Playing"), "Position": .int64(10_000_000), "CanGoNext": .boolean(true),
                "Metadata": .vardict([
                    ("mpris:trackid", .objectPath(track)), ("xesam:title", .string("Song")),
                    ("xesam:artist", .strings(["A", "B"])), ("mpris:length", .int64(200_000_000)),
                ]),
            ], at: date)
        return player
    }

    @Test func thePositionMovesBetweenSignals() {
        var player = Self.playing()
        #expect(player.position(at: Self.start.addingTimeInterval(2)) == 12_000_000)
        // Paused: it stays where it was.
        player.apply(["PlaybackStatus": .string("Paused")], at: Self.start.addingTimeInterval(5))
        #expect(player.position(at: Self.start.addingTimeInterval(60)) == 15_000_000)
        // Played on at twice the speed.
        player.apply(["PlaybackStatus": .string("Playing"), "Rate": .double(2)], at: Self.start.addingTimeInterval(60))
        #expect(player.position(at: Self.start.addingTimeInterval(61)) == 17_000_000)
        // Never past the end.
        #expect(player.position(at: Self.start.addingTimeInterval(3600)) == 200_000_000)
        // A seek, and another track, which starts at its beginning.
        player.seeked(to: 50_000_000, at: Self.start.addingTimeInterval(100))
        #expect(player.position(at: Self.start.addingTimeInterval(100)) == 50_000_000)
        player.apply(["Metadata": .vardict([("mpris:trackid", .objectPath(ObjectPath("/track/2"))), ("xesam:title", .string("Next"))])],
            at: Self.start.addingTimeInterval(101))
        #expect(player.position(at: Self.start.addingTimeInterval(101)) == 0)
        #expect(player.snapshot(at: Self.start.addingTimeInterval(101)).title == "Next")
    }

    @Test func theCardShowsTheSongAndItsButtons() throws {
        let folder = try temporaryDirectory("art")
        defer { try? FileManager.default.removeItem(at: folder) }
        let art = folder.appendingPathComponent("cover.png")
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: art)
        var player = Self.playing()
        player.identity = "mpv Media Player"
        player.apply(["Metadata": .vardict([
            ("mpris:trackid", .objectPath(ObjectPath("/track/1"))), ("xesam:title", .string("Song")), ("xesam:artist", .strings(["A", "B"])),
            ("xesam:album", .string("Album")), ("mpris:length", .int64(200_000_000)), ("mpris:artUrl", .string(art.absoluteString)),
        ])], at: Self.start)
        let card = player.snapshot(at: Self.start.addingTimeInterval(2))
        #expect(card.title == "Song" && card.subtitle == "A, B — Album")
        #expect(card.body == "Playing · 0:12 / 3:20 · mpv Media Player")
        #expect(card.imagePath == art.path)
        #expect(card.actions.map(\.id) == ["previous", "play-pause", "next"])
        #expect(card.actions[1].isToggle && card.actions[1].isOn)
        // Art the provider may not read, or not a file: the generic picture.
        player.apply(["Metadata": .vardict([("mpris:trackid", .objectPath(ObjectPath("/track/1"))), ("mpris:artUrl", .string("https://example.org/a.jpg"))])])
        #expect(player.snapshot.imagePath != "https://example.org/a.jpg")
    }

    @Test func theLastToPlayIsShown() {
        var first = Self.playing()
        first.playedAt = 1
        var second = MediaPlayer(name: "vlc")
        second.playedAt = 2
        second.status = "Paused"
        #expect(MediaPlayer.chosen("", among: [first, second])?.name == "vlc")
        #expect(MediaPlayer.chosen("mpv", among: [first, second])?.name == "mpv")
        #expect(MediaPlayer.chosen("spotify", among: [first, second]) == nil)
        #expect(MediaPlayer.clock(3_723_000_000) == "1:02:03" && MediaPlayer.clock(61_000_000) == "1:01")
    }
}

@Suite struct UpNextTimelineTests {
    @Test func anEntryWhereverWhatComesNextChanges() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let zone = try #require(TimeZone(identifier: "Europe/Berlin"))
        func event(_ name: String, _ from: TimeInterval, _ to: TimeInterval) -> CalendarEvent {
            CalendarEvent(uid: name, summary: name, location: "", start: now.addingTimeInterval(from), end: now.addingTimeInterval(to), allDay: false, file: "")
        }
        let entries = UpNextEntry.timeline([event("Stand-up", 1200, 2100), event("Lunch", 10_800, 14_400), event("Tomorrow", 90_000, 93_600)], from: now, zone: zone)
        #expect(entries.map { $0.date.timeIntervalSince(now) } == [0, 1200, 2100, 10_800, 14_400])
        #expect(entries.map { $0.snapshot.title } == ["Stand-up", "Stand-up", "Lunch", "Lunch", "Tomorrow"])
        #expect(entries[1].snapshot.subtitle?.hasPrefix("now, until") == true)
        #expect(entries[0].snapshot.body == "2 more in the next 24 hours")
        let empty = UpNextEntry.timeline([], from: now, zone: zone, problem: "No calendar found")
        #expect(empty.count == 1 && empty[0].snapshot.title == "Nothing in the next 24 hours" && empty[0].snapshot.subtitle == "No calendar found")
    }
}
