import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Crash consistency under mixed load: four clients write group defaults
/// (Set, Update, Remove), SetHasContent and PerformUpdate while todayd is
/// killed with SIGKILL at a random instant. After each restart, every
/// acknowledged write holds its last acknowledged value (or the value of
/// the one call that was under way, applied whole), every file parses, and
/// no temporary file is left. `make test` runs 10 rounds;
/// `make torture` 200 (TODAY_TORTURE_ROUNDS).
@Suite(.showsDaemonLogs) struct CrashTests {
    static let rounds = ProcessInfo.processInfo.environment["TODAY_TORTURE_ROUNDS"].flatMap(Int.init) ?? 10
    static let widget = "org.example.Durable.W"
    static let clients = 4

    /// What one client knows of its own keys: the values todayd
    /// acknowledged, and the call it was waiting for when todayd died.
    struct Ledger: Sendable {
        /// Key → value; a removed key is absent.
        var acknowledged: [String: Int64] = [:]
        /// The call under way: every key it sets (a value) or removes (nil).
        var pending: [String: Int64?]?
        var hasContent: Bool?
        var pendingHasContent: Bool?
        /// The title of the last snapshot an acknowledged update stored.
        var title = 0
        /// Calls answered, over all rounds.
        var answered = 0
    }

    @Test func mixedLoadFromFourClientsKeepsTheLastAcknowledgedValues() async throws {
        let bundles = try DurabilityTests.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("crash")
        defer { try? FileManager.default.removeItem(at: home) }
        let ledgers = (0..<Self.clients).map { _ in Locked(Ledger()) }
        let groupPath = Today.groupPath(DurabilityTests.group)

        for round in 0..<Self.rounds {
            let daemon = try TodayDaemon(bundles: [bundles.path], home: home, verbose: false)
            let reader = try await daemon.ready()
            try await reader.center("RegisterApp", [.string(Self.widget)])
            try await check(round: round, reader: reader, ledgers: ledgers, home: home)
            // Whatever was under way is settled now: what was read is the truth.
            try await settle(reader: reader, ledgers: ledgers)
            reader.close()

            let connections = try (0..<Self.clients).map { _ in try Connection(address: daemon.address) }
            for connection in connections { try await connection.center("RegisterApp", [.string(Self.widget)]) }
            let load = (0..<Self.clients).map { index in
                Task { await Self.work(index, connections[index], ledgers[index], group: groupPath) }
            }
            // The kill comes at a random moment of the load, on purpose.
            try await Task.sleep(for: .milliseconds(Int.random(in: 40...250)))
            DurabilityTests.killHard(daemon)
            for task in load { await task.value }
            for connection in connections { connection.close() }
        }
        // The load was real: every round saw calls answered before the kill.
        let answered = ledgers.map(\.value.answered).reduce(0, +)
        #expect(answered >= Self.rounds * Self.clients, "\(answered) calls answered in \(Self.rounds) rounds")
        // And the provider counted: its titles went up.
        let title = ledgers.map(\.value.title).max() ?? 0
        #expect(title > 1, "the last acknowledged title is \(title) after \(Self.rounds) rounds")
        print("crash rounds: \(Self.rounds), calls answered before the kills: \(answered), last title \(title)")
    }

    /// One client's load until todayd is gone: its own keys only, so that
    /// what it was told is all there is to know of them.
    static func work(_ index: Int, _ connection: Connection, _ ledger: Locked<Ledger>, group: ObjectPath) async {
        var serial: Int64 = Int64(index) * 1_000_000 + Int64.random(in: 0..<1000) * 1000
        func call(_ member: String, _ arguments: [Value]) async throws {
            _ = try await connection.call(Today.busName, path: group, interface: Today.group.name, member: MemberName(rawValue: member) ?? MemberName("Set"), arguments)
        }
        while true {
            serial += 1
            let key = "c\(index).k\(Int.random(in: 0..<4))"
            do {
                switch Int.random(in: 0..<10) {
                case 0..<4:
                    ledger.withLock { $0.pending = [key: serial] }
                    try await call("Set", [.string(key), .variant(.int64(serial))])
                    ledger.withLock { $0.acknowledged[key] = serial; $0.pending = nil; $0.answered += 1 }
                case 4..<6:
                    ledger.withLock { $0.pending = [key: nil] }
                    try await call("Remove", [.string(key)])
                    ledger.withLock { $0.acknowledged[key] = nil; $0.pending = nil; $0.answered += 1 }
                case 6..<8:
                    // Two keys set, one removed, in one write.
                    let set = ["c\(index).u0", "c\(index).u1"]
                    let removed = "c\(index).k\(Int.random(in: 0..<4))"
                    var change: [String: Int64?] = [removed: nil]
                    for name in set { change[name] = serial }
                    ledger.withLock { $0.pending = change }
                    try await call("Update", [.vardict(set.map { ($0, .int64(serial)) }), .strings([removed])])
                    ledger.withLock { ledger in
                        for (name, value) in change { ledger.acknowledged[name] = value }
                        ledger.pending = nil
                        ledger.answered += 1
                    }
                case 8:
                    // Only client 0 sets HasContent, so that its ledger knows the value.
                    guard index == 0 else { continue }
                    let flag = Bool.random()
                    ledger.withLock { $0.pendingHasContent = flag }
                    try await connection.center("SetHasContent", [.boolean(flag), .string(widget)])
                    ledger.withLock { $0.hasContent = flag; $0.pendingHasContent = nil; $0.answered += 1 }
                default:
                    let result = try await connection.widget(widget, "PerformUpdate").body.first?.string
                    if result == "new-data", let title = try? await connection.property(widget, "Snapshot").stringDictionary?["title"]?.unwrapped.string,
                        let number = Int(title)
                    {
                        ledger.withLock { $0.title = max($0.title, number) }
                    }
                    ledger.withLock { $0.answered += 1 }
                }
            } catch let error as DBusError where error.name.rawValue.hasPrefix("io.github.todayd.Today1.Error.") {
                // Refused (an update in its back-off, say): the call changed nothing.
                ledger.withLock { $0.pending = nil; $0.pendingHasContent = nil }
            } catch {
                // todayd is gone. What was pending stays pending: it may or
                // may not have landed, and the next start settles it.
                return
            }
        }
    }

    /// What a restarted todayd holds agrees with every ledger.
    func check(round: Int, reader: Connection, ledgers: [Locked<Ledger>], home: URL) async throws {
        let stored = try await reader.call(
            Today.busName, path: Today.groupPath(DurabilityTests.group), interface: Today.group.name, member: MemberName("GetAll")
        ).body.first?.stringDictionary ?? [:]
        for (index, ledger) in ledgers.enumerated() {
            let known = ledger.value
            let mine = stored.filter { $0.key.hasPrefix("c\(index).") }.compactMapValues { $0.unwrapped.int64 }
            var withPending = known.acknowledged
            for (key, value) in known.pending ?? [:] { withPending[key] = value }
            #expect(
                mine == known.acknowledged || (known.pending != nil && mine == withPending),
                "round \(round), client \(index): stored \(mine.sorted { $0.key < $1.key }), acknowledged \(known.acknowledged.sorted { $0.key < $1.key }), pending \(String(describing: known.pending))")
        }
        let zero = ledgers[0].value
        if let acknowledged = zero.hasContent {
            let shown = try await reader.property(Self.widget, "HasContent").bool
            #expect(shown == acknowledged || shown == zero.pendingHasContent, "round \(round): HasContent \(String(describing: shown))")
        }
        let title = Int(try await reader.property(Self.widget, "Snapshot").stringDictionary?["title"]?.unwrapped.string ?? "0") ?? 0
        let acknowledgedTitle = ledgers.map(\.value.title).max() ?? 0
        #expect(title >= acknowledgedTitle, "round \(round): the snapshot went back from \(acknowledgedTitle) to \(title)")
        for folder in ["cache/todayd/snapshots", "state/todayd/widgets", "data/todayd/groups/\(DurabilityTests.group)/Library/Preferences"] {
            for file in FileSystem.entries(home.path + "/" + folder) where file.hasSuffix(".plist") {
                #expect(throws: Never.self, "round \(round): \(folder)/\(file)") { try Plist.read(contentsOf: home.path + "/" + folder + "/" + file) }
            }
            #expect(FileSystem.entries(home.path + "/" + folder).filter { $0.hasSuffix(".tmp") } == [], "round \(round): \(folder)")
        }
    }

    /// Takes what todayd holds as what each client was last told, now that
    /// nothing is under way.
    func settle(reader: Connection, ledgers: [Locked<Ledger>]) async throws {
        let stored = try await reader.call(
            Today.busName, path: Today.groupPath(DurabilityTests.group), interface: Today.group.name, member: MemberName("GetAll")
        ).body.first?.stringDictionary ?? [:]
        let hasContent = try await reader.property(Self.widget, "HasContent").bool
        let title = Int(try await reader.property(Self.widget, "Snapshot").stringDictionary?["title"]?.unwrapped.string ?? "0") ?? 0
        for (index, ledger) in ledgers.enumerated() {
            ledger.withLock { ledger in
                ledger.acknowledged = stored.filter { $0.key.hasPrefix("c\(index).") }.compactMapValues { $0.unwrapped.int64 }
                ledger.pending = nil
                if index == 0 { ledger.hasContent = hasContent }
                ledger.pendingHasContent = nil
                ledger.title = max(ledger.title, title)
            }
        }
    }
}
