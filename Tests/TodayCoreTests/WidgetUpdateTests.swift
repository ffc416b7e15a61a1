import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Provider runs through the real daemon on a private bus, with providers
/// written as small shell scripts.
@Suite(.showsDaemonLogs) struct WidgetUpdateTests {
    static let newData = #"echo '{"result": "new-data", "snapshot": {"title": "Fresh", "items": [{"title": "one", "url": "demo://1"}]}}'"#

    @Test func eachOutcomeOfAProviderRun() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        let quick: PlistDictionary = ["TodayUpdateTimeout": .integer(1)]
        try bundles.addApp(
            "org.example.Outcomes",
            widgets: [
                .init(name: "Fresh", script: "cat > /dev/null\n" + Self.newData),
                .init(name: "Plist", script: """
                    cat <<'END'
                    <?xml version="1.0" encoding="UTF-8"?>
                    <plist version="1.0"><dict><key>result</key><string>new-data</string>
                    <key>snapshot</key><dict><key>title</key><string>From XML</string><key>count</key><integer>7</integer></dict></dict></plist>
                    END
                    """),
                .init(name: "Exit", script: "exit 3"),
                .init(name: "Hang", script: "trap '' TERM\nsleep 60", attributes: quick),
                .init(
                    name: "Hog", script: #"exec python3 -c "x = b'a' * (400 << 20); import time; time.sleep(30)""#,
                    attributes: ["TodayMemoryLimit": .integer(64 << 20)]),
                .init(name: "Garbage", script: "echo 'this is not a property list'"),
                .init(name: "Big", script: "head -c 5000000 /dev/zero | tr '\\0' a"),
                .init(name: "Crash", script: "kill -SEGV $$"),
                .init(name: "Reported", script: #"echo '{"result": "failed"}'"#),
                .init(name: "WrongShape", script: #"echo '{"result": "new-data", "snapshot": {"title": 5}}'"#),
                .init(name: "Missing"),
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }

        let names = ["Fresh", "Plist", "Exit", "Hang", "Hog", "Garbage", "Big", "Crash", "Reported", "WrongShape", "Missing"]
        let timings = Locked<[String: Duration]>([:])
        let results = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for name in names {
                group.addTask {
                    let start = ContinuousClock.now
                    let reply = try await connection.widget("org.example.Outcomes.\(name)", "PerformUpdate")
                    timings.withLock { $0[name] = ContinuousClock.now - start }
                    return (name, reply.body.first?.string ?? "")
                }
            }
            var results: [String: String] = [:]
            for try await (name, result) in group { results[name] = result }
            return results
        }
        #expect(results["Fresh"] == "new-data")
        #expect(results["Plist"] == "new-data")
        for name in names where !["Fresh", "Plist"].contains(name) { #expect(results[name] == "failed", "\(name)") }

        func failure(_ name: String) async throws -> String {
            try await connection.property("org.example.Outcomes.\(name)", "LastFailure").string ?? ""
        }
        #expect(try await failure("Fresh") == "")
        #expect(try await failure("Exit") == "exit 3")
        #expect(try await failure("Hang") == "timeout")
        #expect(try await failure("Hog") == "memory-limit")
        #expect(try await failure("Garbage").hasPrefix("bad-output: "))
        #expect(try await failure("Big") == "too-large")
        #expect(try await failure("Crash") == "signal 11")
        #expect(try await failure("Reported") == "reported")
        #expect(try await failure("WrongShape") == "bad-output: snapshot key 'title' must be a string, not integer")
        #expect(try await failure("Missing") == "no-provider")
        // The hang ignores SIGTERM: SIGKILL follows two seconds after the
        // one-second limit, long before its 60 s (the whole suite running
        // beside it on two processors can delay the answer by seconds).
        let hang = timings.value["Hang"] ?? .zero
        #expect(hang >= .seconds(3) && hang < .seconds(20), "\(hang)")

        let snapshot = try await connection.property("org.example.Outcomes.Fresh", "Snapshot")
        #expect(snapshot.type.signature == "a{sv}")
        #expect(snapshot.stringDictionary?["title"]?.unwrapped == .string("Fresh"))
        #expect(snapshot.stringDictionary?["items"]?.unwrapped.type.signature == "aa{sv}")
        let plist = try await connection.property("org.example.Outcomes.Plist", "Snapshot")
        #expect(plist.stringDictionary?["count"]?.unwrapped == .int64(7))
        #expect(try await connection.property("org.example.Outcomes.Exit", "LastResult") == .string("failed"))
        #expect(try await connection.property("org.example.Outcomes.Exit", "LastUpdated").uint64 ?? 0 > 0)
    }

    @Test func noDataAndFailuresKeepTheSnapshot() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // First run: new data; second: no data; third: a failure.
        try bundles.addApp(
            "org.example.Keep",
            widgets: [
                .init(name: "W", script: """
                    n=$(cat "$TODAY_CONTAINER/n" 2>/dev/null || echo 0); echo $((n + 1)) > "$TODAY_CONTAINER/n"
                    case $n in
                    0) echo '{"result": "new-data", "snapshot": {"title": "kept"}}' ;;
                    1) echo '{"result": "no-data"}' ;;
                    *) exit 1 ;;
                    esac
                    """)
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        let id = "org.example.Keep.W"
        for expected in ["new-data", "no-data", "failed"] {
            #expect(try await connection.widget(id, "PerformUpdate").body == [.string(expected)])
            let snapshot = try await connection.property(id, "Snapshot")
            #expect(snapshot.stringDictionary?["title"]?.unwrapped == .string("kept"), "after \(expected)")
        }
        #expect(try await connection.property(id, "LastFailure") == .string("exit 1"))
    }

    @Test func concurrentCallsShareOneRun() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Shared",
            widgets: [.init(name: "W", script: "echo run >> \"$TODAY_CONTAINER/runs\"\nsleep 1\n" + Self.newData)])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        let updated = Locked(0)
        try await connection.subscribe(MatchRule(interface: Today.widget.name, member: MemberName("Updated"))) { _ in
            updated.withLock { $0 += 1 }
        }
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let reply =
                        index.isMultiple(of: 2)
                        ? try await connection.widget("org.example.Shared.W", "PerformUpdate")
                        : try await connection.center("PerformUpdate", [.string("org.example.Shared.W")])
                    return reply.body.first?.string ?? ""
                }
            }
            var all: [String] = []
            for try await result in group { all.append(result) }
            return all
        }
        #expect(results == Array(repeating: "new-data", count: 20))
        let runs = try String(contentsOfFile: daemon.home.path + "/data/todayd/containers/org.example.Shared.W/runs", encoding: .utf8)
        #expect(runs == "run\n")
        // Every Updated came before the replies that followed the run (one
        // connection's messages keep their order, and handlers run as they
        // arrive): a second one would be counted by now.
        #expect(updated.value == 1)
    }

    @Test func theProviderSeesItsEnvironment() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp(
            "org.example.Env",
            widgets: [
                .init(
                    name: "W",
                    script: """
                        input=$(cat)
                        case "$input" in *"<plist"*) stdin=plist ;; *) stdin=other ;; esac
                        fds=$(ls /proc/self/fd | tr '\n' ' ')
                        printf '{"result": "new-data", "snapshot": {"id": "%s", "container": "%s", "groups": "%s", "bus": "%s", "pwd": "%s", "stdin": "%s", "argument": "%s", "fds": "%s"}}' \
                          "$TODAY_WIDGET_ID" "$TODAY_CONTAINER" "$TODAY_GROUP_CONTAINERS" "$DBUS_SESSION_BUS_ADDRESS" "$(pwd)" "$stdin" "$1" "$fds"
                        """, groups: ["group.org.example.env", "group.org.example.other"])
            ])
        let daemon = try TodayDaemon(bundles: [bundles.path])
        defer { daemon.stop() }
        let connection = try await daemon.ready()
        defer { connection.close() }
        let id = "org.example.Env.W"
        #expect(try await connection.widget(id, "PerformUpdate").body == [.string("new-data")])
        let seen = try await connection.property(id, "Snapshot").stringDictionary?.mapValues { $0.unwrapped.string ?? "" } ?? [:]
        let data = daemon.home.path + "/data/todayd"
        #expect(seen["id"] == id)
        #expect(seen["container"] == data + "/containers/" + id)
        #expect(seen["pwd"] == data + "/containers/" + id)
        #expect(seen["groups"] == "group.org.example.env=\(data)/groups/group.org.example.env:group.org.example.other=\(data)/groups/group.org.example.other")
        #expect(seen["bus"] == daemon.address)
        #expect(seen["stdin"] == "plist")
        #expect(seen["argument"] == "perform-update")
        // Only the three pipes are inherited (ls adds 3, its listing of
        // the folder): none of todayd's sockets or its libraries' pipes.
        #expect(seen["fds"] == "0 1 2 3 ")
    }
}
