import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// A value todayd accepts, it reads back after a restart; a value it
/// cannot store it refuses when it arrives, saying which; and nothing a
/// provider answers brings it down.
@Suite(.showsDaemonLogs) struct ReadBackTests {
    static let group = "group.org.example.readback"

    /// A binary answer `{result: new-data, snapshot: {title: "t", when: <date>}}`
    /// whose date holds these 8 bytes of Double: what a provider may write,
    /// even where no property-list writer would.
    static func answer(dateBits: UInt64) throws -> Data {
        let marker = Date(timeIntervalSince1970: 978_307_200 + 12_345)
        var bytes = [UInt8](
            try Plist.write(
                .dictionary(["result": .string("new-data"), "snapshot": .dictionary(["title": .string("t"), "when": .date(marker)])]),
                format: .binary))
        let pattern = [UInt8(0x33)] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: (12_345.0).bitPattern >> UInt64($0 * 8)) }
        guard let at = (0...(bytes.count - 9)).first(where: { Array(bytes[$0..<$0 + 9]) == pattern }) else {
            throw PlistError("no date in the answer")
        }
        for i in 0..<8 { bytes[at + 1 + i] = UInt8(truncatingIfNeeded: dateBits >> UInt64((7 - i) * 8)) }
        return Data(bytes)
    }

    static func bundles() throws -> BundleFolder {
        let bundles = try BundleFolder()
        let answers: [(String, Double)] = [
            ("NaN", .nan), ("Infinite", .infinity), ("MinusInfinite", -.infinity), ("Far", 1e12), ("Before1970", -978_307_200 - 86_400),
            ("Fraction", 800_000_000.75),
        ]
        var widgets: [BundleFolder.Widget] = answers.map { name, _ in
            .init(name: name, script: "cat > /dev/null; cat \"$(dirname \"$0\")/answer\"")
        }
        widgets.append(.init(name: "W", script: "exit 0", groups: [group]))
        try bundles.addApp("org.example.ReadBack", widgets: widgets)
        for (name, seconds) in answers {
            try answer(dateBits: seconds.bitPattern)
                .write(to: bundles.url.appendingPathComponent("org.example.ReadBack.app/PlugIns/\(name).appex/answer"))
        }
        return bundles
    }

    @discardableResult
    func group(_ connection: Connection, _ member: String, _ arguments: [Value] = []) async throws -> Message {
        try await connection.call(
            Today.busName, path: Today.groupPath(Self.group), interface: Today.group.name,
            member: MemberName(rawValue: member) ?? MemberName("Get"), arguments)
    }

    /// Runs `before` against todayd serving `bundles()`, then `after`
    /// against a new todayd on the same home.
    func acrossARestart(
        _ before: (Connection) async throws -> Void, then after: (Connection) async throws -> Void
    ) async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("readback")
        defer { try? FileManager.default.removeItem(at: home) }
        try await life(before, bundles: bundles, home: home)
        try await life(after, bundles: bundles, home: home)
    }

    private func life(_ body: (Connection) async throws -> Void, bundles: BundleFolder, home: URL) async throws {
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home)
        defer { daemon.stop(keepHome: true) }
        let client = try await daemon.ready()
        defer { client.close() }
        try await body(client)
    }

    @Test func groupDatesAreWholeSecondsLiveAndAfterARestart() async throws {
        try await acrossARestart({ (client: Connection) async throws in
            try await client.center("RegisterApp", [.string("org.example.ReadBack.W")])
            try await group(client, "Set", [.string("d"), .variant(.uint64(1_764_450_000_123_456))])
            try await group(client, "Set", [.string("big"), .variant(.uint64(9_007_199_254_740_993))])
            #expect(try await group(client, "Get", [.string("d")]).body == [.variant(.uint64(1_764_450_000_000_000))])
            #expect(try await group(client, "Get", [.string("big")]).body == [.variant(.uint64(9_007_199_254_000_000))])

            // Past 9999-12-31T23:59:59Z: refused where it arrives, by Set and by Update.
            for call in [
                ("Set", [Value.string("far"), .variant(.uint64(253_402_300_800_000_000))]),
                ("Update", [.vardict([("far", .uint64(.max))]), .strings([])]),
            ] {
                do {
                    _ = try await group(client, call.0, call.1)
                    Issue.record("\(call.0) accepted a date after 9999")
                } catch let error as DBusError {
                    #expect(error.name.rawValue == "org.freedesktop.DBus.Error.InvalidArgs")
                    #expect(error.message.contains("'far'") && error.message.contains("9999-12-31T23:59:59Z"), "\(error.message)")
                }
            }
            // The last date that can be stored is stored.
            try await group(client, "Set", [.string("last"), .variant(.uint64(253_402_300_799_999_999))])
        }, then: { (client: Connection) async throws in
            try await client.center("RegisterApp", [.string("org.example.ReadBack.W")])
            let all = try await group(client, "GetAll").body.first?.stringDictionary ?? [:]
            #expect(all["d"]?.unwrapped == .uint64(1_764_450_000_000_000))
            #expect(all["big"]?.unwrapped == .uint64(9_007_199_254_000_000))
            #expect(all["last"]?.unwrapped == .uint64(253_402_300_799_000_000))
            #expect(all["far"] == nil)
        })
    }

    @Test func providerDatesNoStoreCanHoldAreBadOutputAndTheRestStays() async throws {
        let live = Locked(Value.string(""))
        let fraction = "org.example.ReadBack.Fraction"
        try await acrossARestart({ (client: Connection) async throws in
            for name in ["NaN", "Infinite", "MinusInfinite", "Far"] {
                let id = "org.example.ReadBack.\(name)"
                #expect(try await client.widget(id, "PerformUpdate").body.first?.string == "failed", "\(name)")
                let failure = try await client.property(id, "LastFailure").string ?? ""
                #expect(failure.hasPrefix("bad-output: ") && failure.contains("outside the years 0000 to 9999"), "\(name): \(failure)")
            }
            let before = "org.example.ReadBack.Before1970"
            #expect(try await client.widget(before, "PerformUpdate").body.first?.string == "failed")
            #expect(try await client.property(before, "LastFailure").string?.contains("snapshot key 'when' holds a date before 1970") == true)
            // A fraction of a second is dropped as the answer arrives, so the
            // snapshot published now is the one read back after a restart.
            #expect(try await client.widget(fraction, "PerformUpdate").body.first?.string == "new-data")
            live.value = try await client.property(fraction, "Snapshot")
            #expect(live.value.stringDictionary?["when"]?.unwrapped == .uint64(1_778_307_200_000_000))
        }, then: { (client: Connection) async throws in
            #expect(try await client.property(fraction, "Snapshot") == live.value)
            #expect(try await client.property("org.example.ReadBack.NaN", "LastResult") == .string("failed"))
        })
    }

    @Test func libxml2PrintsNothingOfItsOwn() async throws {
        // Bytes the declared encoding cannot convert: libxml2's encoding
        // layer would print its own lines to standard error (in todayd,
        // unprefixed lines in the journal for a provider's bad output);
        // the one error is ours, with the line and column.
        let folder = try temporaryDirectory("encoding")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("bad.plist")
        try Data("<?xml version=\"1.0\" encoding=\"ISO-2022-JP\"?><plist><string>\u{1b}$B".utf8 + [0, 0, 0, 0] + Array("</string></plist>".utf8))
            .write(to: file)
        let result = try await run([Paths.todayctl, "plist", file.path])
        #expect(result.status == 1)
        #expect(result.error.hasPrefix("todayctl: \(file.path): line 1, column "), "\(result.error)")
        #expect(!result.error.contains("encoding error") && !result.error.contains("I/O error"), "\(result.error)")
    }

    @Test func todayctlPlistRefusesWhatItCannotPrint() async throws {
        let folder = try temporaryDirectory("plist")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("n.bplist")
        try Self.answer(dateBits: Double.nan.bitPattern).write(to: file)
        let todayctl = Paths.todayctl
        for format in ["xml", "binary", "json"] {
            let result = try await run([todayctl, "plist", file.path, "--to", format])
            #expect(result.status == 1, "\(format): \(result.status) \(result.error)")
            #expect(result.error.contains("outside the years 0000 to 9999"), "\(result.error)")
        }
        // Standard input, and JSON in the form docs/todayctl.md gives.
        let good = folder.appendingPathComponent("good.bplist")
        try Plist.write(.dictionary(["d": .date(Date(timeIntervalSince1970: 1_764_450_000)), "b": .data(Data([1, 2, 255]))]), format: .binary)
            .write(to: good)
        let piped = try await run(["sh", "-c", "\"$0\" plist - --to json < \"$1\"", todayctl, good.path])
        #expect(piped.status == 0, "\(piped.error)")
        #expect(piped.output == "{\n  \"d\": \"2025-11-29T21:00:00Z\",\n  \"b\": \"AQL/\"\n}\n")
        let json = try await run([todayctl, "plist", good.path, "--json"])
        #expect(json.output == piped.output)
        let empty = try await run(["sh", "-c", "\"$0\" plist - < /dev/null", todayctl])
        #expect(empty.status == 1 && empty.error.contains("standard input"), "\(empty.error)")
        let version = try await run(["sh", "-c", "printf 'bplist01xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | \"$0\" plist -", todayctl])
        #expect(version.error.contains("unsupported binary property list version 'bplist01'"), "\(version.error)")
    }
}
