import DBus
import Essentials
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
