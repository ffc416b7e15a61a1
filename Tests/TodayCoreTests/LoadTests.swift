import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The long part of the adversarial suite: 100 client connections for
/// TODAYD_LOAD_SECONDS (`make adversarial`, a minute; `make soak`, ten)
/// mixing reads, updates, group writes and opened URLs while providers
/// fail. At the end: every call answered, resident memory within 10% of
/// what it was after the first minute (or fifth), no more open descriptors.
@Suite(.showsDaemonLogs) struct LoadTests {
    static let seconds = ProcessInfo.processInfo.environment["TODAYD_LOAD_SECONDS"].flatMap(Double.init)

    @Test(.enabled(if: seconds != nil, "run by `make adversarial` (TODAYD_LOAD_SECONDS)"))
    func hundredClientsForAMinute() async throws {
        let seconds = Self.seconds ?? 60
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try URLTests.addApp(
            bundles, "org.example.Load", name: "Load", schemes: ["loadtest"], script: "exit 0",
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
        let memory = Locked<[(resident: Int, descriptors: Int)]>([])
        let pid = daemon.process.processIdentifier
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
                            case 3 where index % 4 == 1:
                                try await client.center("OpenURL", [.string("loadtest://item?n=\(round)"), .vardict([])], timeout: .seconds(30))
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
                    // A sample a second: the measure, not a wait for something.
                    try await Task.sleep(for: .seconds(1))
                    let sample = (AdversarialTests.residentKiB(pid), FileSystem.entries("/proc/\(pid)/fd").count)
                    memory.withLock { $0.append(sample) }
                }
            }
            try await group.waitForAll()
        }
        let answered = counts.value
        #expect(answered["org.freedesktop.DBus.Error.NoReply"] == nil, "\(answered)")
        #expect(answered["org.freedesktop.DBus.Error.Disconnected"] == nil, "\(answered)")
        #expect(answered["ok", default: 0] > 1000, "\(answered)")
        // After the first minute (or fifth, in a shorter run: warmed up) against the end.
        let samples = memory.value
        let warm = samples.isEmpty ? (resident: 0, descriptors: 0) : samples[min(samples.count / 5, 60)]
        let end = samples.last ?? warm
        #expect(Double(end.resident) < Double(warm.resident) * 1.1, "resident \(warm.resident) KiB after warm-up, \(end.resident) KiB at the end")
        // Descriptors come and go with the provider runs under way at a
        // sample: growth is the fewest at the end above the most early on.
        let early = samples.prefix(max(1, min(samples.count / 5, 60))).map(\.descriptors).max() ?? 0
        let late = samples.suffix(max(1, min(samples.count / 5, 30))).map(\.descriptors).min() ?? 0
        #expect(late <= early, "open descriptors: at most \(early) in the first minute, at least \(late) at the end")
        print("load: \(answered.values.reduce(0, +)) calls in \(Int(seconds)) s: \(answered.sorted { $0.key < $1.key }); resident \(warm.resident) → \(end.resident) KiB, descriptors \(warm.descriptors) → \(end.descriptors)")
    }
}
