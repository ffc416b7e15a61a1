import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The long part of the adversarial suite (`make adversarial`): 100 client
/// connections for a minute (TODAYD_LOAD_SECONDS) mixing reads, updates
/// and group writes while providers fail.
@Suite(.showsDaemonLogs) struct LoadTests {
    static let seconds = ProcessInfo.processInfo.environment["TODAYD_LOAD_SECONDS"].flatMap(Double.init)

    @Test(.enabled(if: seconds != nil, "run by `make adversarial` (TODAYD_LOAD_SECONDS)"))
    func hundredClientsForAMinute() async throws {
        let seconds = Self.seconds ?? 60
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Load",
            widgets: [
                .init(name: "Good", script: WidgetUpdateTests.newData, groups: ["group.org.example.load"]),
                .init(name: "Crash", script: "kill -SEGV $$"),
                .init(name: "Hang", script: "sleep 30", attributes: ["TodayUpdateTimeout": .integer(1)]),
                .init(name: "Garbage", script: "head -c 2000 /dev/urandom"),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let setup = try await daemon.ready()
        defer { setup.close() }
        let widgets = ["Good", "Crash", "Hang", "Garbage"].map { "org.example.Load.\($0)" }
        let counts = Locked<[String: Int]>([:])
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let memory = Locked<[Int]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let client = try Connection(address: daemon.address)
                    defer { client.close() }
                    let writer = index % 4 == 0
                    if writer { try await client.center("RegisterApp", [.string("org.example.Load.Good")]) }
                    var round = 0
                    while ContinuousClock.now < deadline {
                        round += 1
                        let widget = widgets[(index + round) % widgets.count]
                        var outcome = "ok"
                        do {
                            switch (index + round) % 5 {
                            case 0: _ = try await client.call(Today.busName, path: Today.widgetPath(widget), interface: .properties, member: MemberName("GetAll"), [.string(Today.widget.name.rawValue)], timeout: .seconds(30))
                            case 1: try await client.center("ListWidgets", timeout: .seconds(30))
                            case 2: try await client.center("PerformUpdate", [.string(widget)], timeout: .seconds(30))
                            case 3 where writer:
                                try await client.call(Today.busName, path: Today.groupPath("group.org.example.load"), interface: Today.group.name, member: MemberName("Set"), [.string("k\(index)"), .variant(.int64(Int64(round)))], timeout: .seconds(30))
                            default: _ = try await client.property(widget, "Snapshot")
                            }
                        } catch let error as DBusError {
                            outcome = error.name.rawValue
                        }
                        counts.withLock { $0[outcome, default: 0] += 1 }
                    }
                }
            }
            group.addTask {
                while ContinuousClock.now < deadline {
                    try await Task.sleep(for: .seconds(1))
                    let resident = AdversarialTests.residentKiB(daemon.process.processIdentifier)
                    memory.withLock { $0.append(resident) }
                }
            }
            try await group.waitForAll()
        }
        let answered = counts.value
        #expect(answered["org.freedesktop.DBus.Error.NoReply"] == nil, "\(answered)")
        #expect(answered["org.freedesktop.DBus.Error.Disconnected"] == nil, "\(answered)")
        #expect(answered["ok", default: 0] > 1000, "\(answered)")
        // Memory after the first fifth (warmed up) against the end.
        let samples = memory.value
        let warm = samples.isEmpty ? 0 : samples[samples.count / 5]
        let end = samples.last ?? warm
        #expect(Double(end) < Double(warm) * 1.1, "resident \(warm) KiB after warm-up, \(end) KiB at the end")
        print("load: \(answered.values.reduce(0, +)) calls in \(Int(seconds)) s: \(answered.sorted { $0.key < $1.key }); resident \(warm) → \(end) KiB")
    }
}
