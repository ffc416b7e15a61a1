import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// A panel applet that subscribes to every signal and then stops reading
/// must not slow todayd down for everyone else, nor make it hold more and
/// more: the bus queues (and in the end drops) what the applet does not
/// read, and todayd never waits for it.
///
/// 1,000 providers at once load the machine, and the latencies compared are
/// the point: `make test` runs this suite alone, after the others
/// (TODAY_TEST_ALONE).
@Suite(.serialized, .showsDaemonLogs) struct SlowAppletTests {
    static let widgets = 1000

    @Test(.enabled(if: ProcessInfo.processInfo.environment["TODAY_TEST_ALONE"] != nil, "run alone by make test (TODAY_TEST_ALONE=1)"))
    func aStalledSubscriberSlowsNobodyAndCostsNoMemory() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Many",
            widgets: (0..<Self.widgets).map { index in
                .init(name: "W\(index)", script: #"printf '{"result": "new-data", "snapshot": {"title": "%s %s"}}' "$$" "$(date +%N)""#)
            })
        let daemon = try TodayDaemon(bundles: [bundles.path], verbose: false)
        defer { daemon.stop() }
        let reader = try await daemon.ready()
        defer { reader.close() }
        let updater = try Connection(address: daemon.address)
        defer { updater.close() }
        #expect(try await reader.center("ListWidgets").body.first?.elements?.count == Self.widgets)
        let pid = daemon.process.processIdentifier
        var idle: [Double] = []
        for _ in 0..<500 {
            let start = ContinuousClock.now
            _ = try await reader.call(
                Today.busName, path: Today.widgetPath("org.example.Many.W0"), interface: .properties, member: MemberName("GetAll"),
                [.string(Today.widget.name.rawValue)])
            idle.append((ContinuousClock.now - start) / .seconds(1))
        }

        // Every widget updates while another client reads: first with
        // nobody stalled, to know what the load alone costs.
        let alone = try await Self.getAllDuringUpdates(reader: reader, updater: updater)
        #expect(alone.results == Self.widgets)

        // An applet that subscribes to every signal, then never reads again.
        let applet = try Background("/usr/bin/python3", [
            "-c",
            """
            import dbus, sys, time
            bus = dbus.bus.BusConnection(sys.argv[1])
            bus.add_match_string("type='signal'")
            print("subscribed", flush=True)
            time.sleep(3600)
            """,
            daemon.address,
        ])
        defer { applet.stop() }
        #expect(try await read(applet.output) { $0.contains("subscribed") }.contains("subscribed"))

        var stalled: [Double] = []
        var resident: [Int] = []
        for _ in 0..<2 {
            let round = try await Self.getAllDuringUpdates(reader: reader, updater: updater)
            #expect(round.results == Self.widgets)
            stalled += round.latencies
            resident.append(AdversarialTests.residentKiB(pid))
        }
        // The applet was still connected, its queue full, not read.
        #expect(applet.process.isRunning)
        let (before, after) = (Self.p99(alone.latencies), Self.p99(stalled))
        #expect(
            after <= 2 * before + 0.002,
            "GetAll p99 while updating: \(Int(before * 1e6)) µs alone, \(Int(after * 1e6)) µs beside a stalled applet")
        // A second round costs no more than the first: nothing piles up in todayd.
        #expect(resident[1] <= resident[0] + 16 * 1024, "resident memory after each round: \(resident) KiB")
        print("slow applet: GetAll p99 \(Int(Self.p99(idle) * 1e6)) µs idle; while 1,000 widgets update \(Int(before * 1e6)) µs alone, \(Int(after * 1e6)) µs beside the stalled applet; resident \(resident) KiB")
    }

    /// GetAll round trips from `reader` while every widget updates (one
    /// UpdateAll from `updater`): their latencies in seconds, and how many
    /// results UpdateAll gave.
    static func getAllDuringUpdates(reader: Connection, updater: Connection) async throws -> (latencies: [Double], results: Int) {
        let path = Today.widgetPath("org.example.Many.W0")
        let finished = Locked(false)
        return try await withThrowingTaskGroup(of: (latencies: [Double], results: Int).self) { group in
            group.addTask {
                defer { finished.withLock { $0 = true } }
                let reply = try await updater.center("UpdateAll", timeout: .seconds(600))
                return ([], reply.body.first?.stringDictionary?.count ?? 0)
            }
            group.addTask {
                var latencies: [Double] = []
                while !finished.value {
                    let start = ContinuousClock.now
                    _ = try await reader.call(
                        Today.busName, path: path, interface: .properties, member: MemberName("GetAll"), [.string(Today.widget.name.rawValue)])
                    latencies.append((ContinuousClock.now - start) / .seconds(1))
                }
                return (latencies, 0)
            }
            var total: (latencies: [Double], results: Int) = ([], 0)
            for try await part in group {
                total.latencies += part.latencies
                total.results += part.results
            }
            return total
        }
    }

    static func p99(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))]
    }
}
