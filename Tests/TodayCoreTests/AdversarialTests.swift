import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The fast part of the adversarial suite: hostile calls against the real
/// daemon, each answered with its error name, nothing unanswered.
@Suite(.showsDaemonLogs) struct AdversarialTests {
    static func residentKiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    @Test func everyErrorHasItsName() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let widget = Today.widgetPath("tech.agostini.app.LatestPost")
        let cases: [(ObjectPath, InterfaceName?, String, [Value], String)] = [
            (ObjectPath("/io/github/todayd/Today1/nothing"), Today.center.name, "ListWidgets", [], "UnknownObject"),
            (Today.managerPath, InterfaceName("io.github.todayd.Today1.Nope"), "ListWidgets", [], "UnknownInterface"),
            (Today.managerPath, Today.center.name, "Nope", [], "UnknownMethod"),
            (Today.managerPath, Today.center.name, "PerformUpdate", [.int32(1)], "InvalidArgs"),
            (Today.managerPath, Today.center.name, "PerformUpdate", [], "InvalidArgs"),
            (widget, .properties, "Get", [.string(Today.widget.name.rawValue), .string("Nope")], "UnknownProperty"),
            (widget, .properties, "Set", [.string(Today.widget.name.rawValue), .string("HasContent"), .variant(.boolean(false))], "PropertyReadOnly"),
            (Today.managerPath, Today.center.name, "GroupObject", [.string("group.nobody.has.this")], "NotRegistered"),
            (Today.managerPath, Today.center.name, "OpenURL", [.string("::"), .vardict([])], "InvalidURL"),
        ]
        for (path, interface, member, arguments, expected) in cases {
            do {
                try await client.call(Today.busName, path: path, interface: interface, member: MemberName(rawValue: member) ?? MemberName("X"), arguments, timeout: .seconds(5))
                Issue.record("\(member) on \(path.rawValue) succeeded")
            } catch let error as DBusError {
                #expect(error.name.rawValue.hasSuffix("." + expected), "\(member): \(error)")
                #expect(!error.message.isEmpty)
            }
        }
    }

    /// A provider that crashes every time, asked for updates in a loop: the
    /// first runs fail with their reason, then requested updates wait out a
    /// growing back-off (by the injected clock) and are answered at once
    /// with ProviderFailed, without a fork.
    @Test func aCrashingProviderIsNotStartedInALoop() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Crash", widgets: [.init(name: "W", script: "echo run >> \"$TODAY_CONTAINER/runs\"\nkill -SEGV $$")])
        let home = try temporaryDirectory("crash-loop")
        defer { try? FileManager.default.removeItem(at: home) }
        let runsFile = home.path + "/data/todayd/containers/org.example.Crash.W/runs"
        func runs() -> Int { ((try? String(contentsOfFile: runsFile, encoding: .utf8)) ?? "").split(separator: "\n").count }
        let clock = ManualClock(Date())
        try await withService(bundles: bundles.path, home: home, clock: .manual(clock)) { client, _ in
            let id = "org.example.Crash.W"
            for _ in 0..<Int(Schedule.requestThreshold) {
                #expect(try await client.widget(id, "PerformUpdate").body.first == .string("failed"))
            }
            #expect(runs() == 3)
            #expect(try await client.property(id, "LastFailure") == .string("signal 11"))
            for _ in 0..<50 {
                do {
                    try await client.widget(id, "PerformUpdate")
                    Issue.record("a requested update ran inside the back-off")
                } catch let error as DBusError {
                    #expect(error.name.rawValue == "io.github.todayd.Today1.Error.ProviderFailed")
                    #expect(error.message.contains("failed 3 times in a row (last: signal 11)"), "\(error)")
                }
            }
            #expect(try await client.center("UpdateAll").body.first?.description.contains("failed") == true)
            #expect(runs() == 3)
            // After a second it may run again; it fails, and the wait doubles.
            clock.advance(by: 1.1)
            #expect(try await client.widget(id, "PerformUpdate").body.first == .string("failed"))
            #expect(runs() == 4)
            clock.advance(by: 1.1)
            await #expect(throws: DBusError.self) { try await client.widget(id, "PerformUpdate") }
            clock.advance(by: 1)
            #expect(try await client.widget(id, "PerformUpdate").body.first == .string("failed"))
            #expect(runs() == 5)
        }
    }

    /// Providers that allocate a gigabyte, print 100 MB, print garbage, hang
    /// or crash, each asked for updates again and again: every run is
    /// `failed` with its reason, and todayd's own memory stays where it was.
    @Test func hostileProvidersLeaveTheDaemonAsItWas() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Hostile",
            widgets: [
                .init(name: "Gigabyte", script: #"exec python3 -c "x = b'a' * (1 << 30); import time; time.sleep(30)""#),
                .init(name: "Flood", script: "head -c 100000000 /dev/zero"),
                .init(name: "Garbage", script: "head -c 3000 /dev/urandom"),
                .init(name: "Hang", script: "exec sleep 30", attributes: ["TodayUpdateTimeout": .integer(1)]),
                .init(name: "Crash", script: "kill -SEGV $$"),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let expected = [
            "Gigabyte": "memory-limit", "Flood": "too-large", "Garbage": "bad-output: ", "Hang": "timeout", "Crash": "signal 11",
        ]
        func round() async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (name, reason) in expected {
                    group.addTask {
                        let id = "org.example.Hostile." + name
                        do {
                            let result = try await client.widget(id, "PerformUpdate").body.first
                            #expect(result == .string("failed"), "\(name)")
                            let failure = try await client.property(id, "LastFailure").string ?? ""
                            #expect(failure.hasPrefix(reason), "\(name): \(failure)")
                        } catch let error as DBusError {
                            // Past three failures in a row, the back-off answers instead.
                            #expect(error.name.rawValue == "io.github.todayd.Today1.Error.ProviderFailed", "\(name): \(error)")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await round()
        let before = Self.residentKiB(daemon.process.processIdentifier)
        for _ in 0..<6 { try await round() }
        let after = Self.residentKiB(daemon.process.processIdentifier)
        #expect(Double(after) < Double(before) * 1.1, "resident size grew from \(before) KiB to \(after) KiB")
    }

    @Test func hugeArgumentsAreRefusedWithoutGrowing() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let huge = String(repeating: "a", count: 1 << 20)
        let many = Value.strings((0..<100_000).map { "w\($0)" })
        func attempt(_ arguments: [Value], member: String = "PerformUpdate") async -> String {
            do {
                try await client.center(member, arguments)
                return ""
            } catch let error as DBusError {
                return error.name.rawValue
            } catch {
                return "\(error)"
            }
        }
        // Warm up (the allocator keeps what it needed once), then measure.
        for _ in 0..<5 {
            _ = await attempt([.string(huge)])
            _ = await attempt([many])
            _ = await attempt([.string(huge)], member: "RegisterApp")
            _ = await attempt([.string("agostiniTech://" + huge)], member: "ResolveURL")
        }
        let before = Self.residentKiB(daemon.process.processIdentifier)
        for _ in 0..<20 {
            #expect(await attempt([.string(huge)]) == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(await attempt([many]) == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(await attempt([.string(huge)], member: "RegisterApp") == "org.freedesktop.DBus.Error.InvalidArgs")
            #expect(await attempt([.string("agostiniTech://" + huge)], member: "ResolveURL") == "io.github.todayd.Today1.Error.InvalidURL")
        }
        let after = Self.residentKiB(daemon.process.processIdentifier)
        #expect(after - before < 4 * 1024, "resident size grew from \(before) KiB to \(after) KiB")
    }

    /// Update calls one connection sends at once in the test below.
    static let pendingCalls = 10_000

    @Test func pendingUpdatesPerConnectionAreCapped() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // Slow enough that sending the calls, on a loaded machine, ends first.
        try bundles.addApp(
            "org.example.Slow",
            widgets: [.init(name: "W", script: "touch \"$TODAY_CONTAINER/started\"; sleep 8\n" + WidgetUpdateTests.newData, attributes: ["TodayUpdateTimeout": .integer(20)])])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let other = try Connection(address: daemon.address)
        defer { other.close() }
        let outcomes = Locked<[String: Int]>([:])
        let order = Locked<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<Self.pendingCalls {
                group.addTask {
                    var outcome = "new-data"
                    do {
                        try await client.center("PerformUpdate", [.string("org.example.Slow.W")], timeout: .seconds(30))
                    } catch let error as DBusError {
                        outcome = error.name.rawValue
                    }
                    if outcome == "new-data" { order.withLock { $0.append("update") } }
                    outcomes.withLock { $0[outcome, default: 0] += 1 }
                }
            }
            // Meanwhile another client is served while the updates still run.
            group.addTask {
                // Once the update runs, the calls are in.
                let started = daemon.home.path + "/data/todayd/containers/org.example.Slow.W/started"
                _ = try await eventually(10) { FileManager.default.fileExists(atPath: started) }
                _ = try await other.property("org.example.Slow.W", "LastResult")
                let reply = try await other.center("ListWidgets")
                #expect(reply.body.first?.elements?.count == 1)
                order.withLock { $0.append("other") }
                #expect(try await other.center("PerformUpdate", [.string("org.example.Slow.W")], timeout: .seconds(30)).body == [.string("new-data")])
            }
            try await group.waitForAll()
        }
        #expect(order.value.first == "other", "the other client waited for the slow updates")
        #expect(outcomes.value == ["new-data": WidgetService.maximumPendingCalls, "org.freedesktop.DBus.Error.LimitsExceeded": Self.pendingCalls - WidgetService.maximumPendingCalls])
    }

    /// Callers that leave while their call is being authorized (the first
    /// call of a connection waits for its credentials) are denied quietly.
    @Test func callersThatLeaveMidCall() async throws {
        let daemon = try TodayDaemon(bundles: [Paths.examples])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        for _ in 0..<200 {
            let leaver = try Connection(address: daemon.address)
            let call = Task { try? await leaver.center("SetHasContent", [.boolean(false), .string("tech.agostini.app.LatestPost")]) }
            leaver.close()
            _ = await call.value
        }
        // Still serving, and nothing those callers sent took effect.
        #expect(try await client.center("ListWidgets").body.first?.elements?.count == 3)
        #expect(try await client.property("tech.agostini.app.LatestPost", "HasContent") == .boolean(true))
        #expect(daemon.process.isRunning)
    }
}
