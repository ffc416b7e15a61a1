import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// Nothing acknowledged is lost: todayd killed with SIGKILL mid-work, and
/// a full or read-only disk under its folders.
@Suite(.showsDaemonLogs) struct DurabilityTests {
    static let group = "group.org.example.durable"

    static func bundles() throws -> BundleFolder {
        let bundles = try BundleFolder()
        // Each run returns a new title: the run's number. The count is
        // replaced whole (a provider killed with todayd between `>`'s
        // truncation and its write would start counting again from 1).
        try bundles.addApp(
            "org.example.Durable",
            widgets: [
                .init(
                    name: "W",
                    script: """
                        n=$(cat "$TODAY_CONTAINER/n" 2>/dev/null || echo 0); n=$((n + 1))
                        echo $n > "$TODAY_CONTAINER/n.new" && mv "$TODAY_CONTAINER/n.new" "$TODAY_CONTAINER/n"
                        printf '{"result": "new-data", "snapshot": {"title": "%s"}}' "$n"
                        """, groups: [group])
            ])
        return bundles
    }

    /// Kills todayd and the bus it started, at once.
    static func killHard(_ daemon: TodayDaemon) {
        let children = (try? runBlocking(["pgrep", "-P", "\(daemon.process.processIdentifier)"]).output) ?? ""
        kill(daemon.process.processIdentifier, SIGKILL)
        for pid in children.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
        daemon.process.waitUntilExit()
        // Nobody was left to remove the bus's socket.
        if let socket = BusDaemon.socketPath(of: daemon.address) { unlink(socket) }
    }

    @Test func sigkillLosesNothingAcknowledged() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("durable")
        defer { try? FileManager.default.removeItem(at: home) }
        let id = "org.example.Durable.W"
        var acknowledgedTitle = 0
        var acknowledgedKeys: [String: Int64] = [:]
        var acknowledgedContent = true
        for round in 0..<20 {
            let daemon = try TodayDaemon(bundles: [bundles.path], home: home)
            let client = try await daemon.ready()
            // What the last round acknowledged is there, and every file parses.
            let snapshot = try await client.property(id, "Snapshot").stringDictionary?["title"]?.unwrapped.string
            #expect(Int(snapshot ?? "0") ?? 0 >= acknowledgedTitle, "round \(round)")
            #expect(try await client.property(id, "HasContent") == .boolean(acknowledgedContent), "round \(round)")
            try await client.center("RegisterApp", [.string("org.example.Durable.W")])
            let path = Today.groupPath(Self.group)
            let stored = try await client.call(Today.busName, path: path, interface: Today.group.name, member: MemberName("GetAll"))
                .body.first?.stringDictionary ?? [:]
            for (key, value) in acknowledgedKeys {
                #expect(stored[key]?.unwrapped.int64 ?? -1 >= value, "round \(round): \(key)")
            }
            for folder in ["cache/todayd/snapshots", "state/todayd/widgets", "data/todayd/groups/\(Self.group)/Library/Preferences"] {
                for file in FileSystem.entries(home.path + "/" + folder) where file.hasSuffix(".plist") {
                    #expect(throws: Never.self) { try Plist.read(contentsOf: home.path + "/" + folder + "/" + file) }
                }
                // What a kill during a write left, the new todayd removed.
                #expect(FileSystem.entries(home.path + "/" + folder).filter { $0.hasSuffix(".tmp") } == [], "round \(round): \(folder)")
            }

            // Work that gets acknowledged, then work cut off by SIGKILL.
            let result = try await client.widget(id, "PerformUpdate").body.first?.string
            if result != "new-data" {
                let reason = try await client.property(id, "LastFailure").string ?? ""
                Issue.record("round \(round): the update came to \(result ?? "nothing"): \(reason)")
            }
            if let title = try await client.property(id, "Snapshot").stringDictionary?["title"]?.unwrapped.string, let number = Int(title) {
                acknowledgedTitle = number
            }
            try await client.call(Today.busName, path: path, interface: Today.group.name, member: MemberName("Set"), [.string("k\(round % 3)"), .variant(.int64(Int64(round)))])
            acknowledgedKeys["k\(round % 3)"] = Int64(round)
            acknowledgedContent = round % 2 == 0
            try await client.center("SetHasContent", [.boolean(acknowledgedContent), .string(id)])
            let flood = Task {
                for index in 0..<50 {
                    _ = try? await client.call(Today.busName, path: path, interface: Today.group.name, member: MemberName("Set"), [.string("flood"), .variant(.int64(Int64(index)))])
                    _ = try? await client.widget(id, "PerformUpdate")
                }
            }
            // The kill comes at a random moment of the flood, on purpose.
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...60)))
            Self.killHard(daemon)
            flood.cancel()
            client.close()
        }
        try? FileManager.default.removeItem(at: home)
    }

    @Test func leftoversOfAKilledWriteAreRemovedAtStart() throws {
        let home = try temporaryDirectory("leftovers")
        defer { try? FileManager.default.removeItem(at: home) }
        let directories = Directories(environment: ["HOME": home.path])
        let preferences = directories.groupsFolder + "/group.org.example.left/Library/Preferences"
        let store = WidgetStore(directories: directories)
        let applications = directories.dataHome + "/applications"
        for folder in [preferences, store.stateFolder, store.snapshotFolder, applications] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        // A process that has ended, and one that runs (this one's parent).
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let gone = ended.processIdentifier
        let running = getppid()
        let files = [
            (preferences, ".group.org.example.left.plist.\(gone).123456.tmp", true),
            (store.stateFolder, ".org.example.W.plist.\(gone).9.tmp", true),
            (store.snapshotFolder, ".org.example.W.plist.\(gone).4000000000.tmp", true),
            (applications, ".todayd-org.example.desktop.\(gone).77.tmp", true),
            // Not todayd's, or still being written, or not of its naming: kept.
            (applications, ".other-app.desktop.\(gone).77.tmp", false),
            (store.stateFolder, ".org.example.W.plist.\(running).5.tmp", false),
            (store.stateFolder, ".notes.tmp", false),
            (store.stateFolder, "org.example.W.plist", false),
        ]
        for (folder, name, _) in files { #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data("x".utf8))) }
        let removed = Daemon.removeLeftovers(directories)
        #expect(Set(removed) == Set(files.filter(\.2).map { $0.0 + "/" + $0.1 }))
        for (folder, name, gone) in files { #expect(FileManager.default.fileExists(atPath: folder + "/" + name) != gone, "\(name)") }
    }

    /// The deferred flush copies a record, then SetHasContent changes it
    /// and is acknowledged, then the flush writes: the acknowledged flag
    /// must be what stays on disk. The flush is held between its copy and
    /// its write, where it was overtaken before.
    @Test func aRecordWriteCannotOvertakeANewerOne() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("order")
        defer { try? FileManager.default.removeItem(at: home) }
        let id = "org.example.Durable.W"
        try await withService(bundles: bundles.path, home: home) { service, client, _ in
            try await client.center("RegisterApp", [.string(id)])
            #expect(try await client.widget(id, "PerformUpdate").body.first?.string == "new-data")

            let copied = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let writes = Locked(0)
            service.widgets.records.beforeWrite.withLock {
                $0 = { _ in
                    var first = false
                    writes.withLock { count in
                        count += 1
                        first = count == 1
                    }
                    guard first else { return }
                    copied.signal()
                    release.wait()
                }
            }
            // The flush, on a thread of its own, stops after copying the record.
            let flushed = DispatchSemaphore(value: 0)
            Thread {
                service.widgets.records.flush()
                flushed.signal()
            }.start()
            copied.wait()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { release.signal() }
            try await client.center("SetHasContent", [.boolean(false), .string(id)])
            flushed.wait()
            let file = home.path + "/state/todayd/widgets/\(id).plist"
            #expect(try Plist.read(contentsOf: file)["HasContent"] == .boolean(false))
            #expect(writes.value == 2)
        }
    }

    /// Whether a private mount namespace with a tmpfs in it can be made
    /// (root, and a kernel and container that allow it).
    static let canUnshare: Bool = {
        guard getuid() == 0 else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("mount-probe-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: probe) }
        let command = ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe.path]
        return (try? runBlocking(command).status) == 0
    }()

    @Test func theBusGoingAwayEndsTodaydWithNothingLost() async throws {
        // The bus dies under todayd: it says so, writes what it holds and
        // exits 1 (so systemd's Restart= starts it again); the next todayd
        // has every acknowledged value.
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("busgone")
        defer { try? FileManager.default.removeItem(at: home) }
        let logFile = home.path + "/todayd.log"
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let id = "org.example.Durable.W"
        let path = Today.groupPath(Self.group)
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home, standardError: logFile)
        let client = try await daemon.ready()
        try await client.center("RegisterApp", [.string(id)])
        try await client.call(Today.busName, path: path, interface: Today.group.name, member: MemberName("Set"), [.string("kept"), .variant(.string("acknowledged"))])
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("new-data")])
        let title = try await client.property(id, "Snapshot").stringDictionary?["title"]?.unwrapped.string
        let updated = try await client.property(id, "LastUpdated")
        try await client.center("SetHasContent", [.boolean(false), .string(id)])

        let bus = try runBlocking(["pgrep", "-P", "\(daemon.process.processIdentifier)", "dbus-daemon"]).output
        let busPID = try #require(pid_t(bus.split(separator: "\n").first ?? ""), "the private bus is todayd's child")
        kill(busPID, SIGKILL)
        _ = try await eventually(5) { !daemon.process.isRunning }
        #expect(!daemon.process.isRunning, "todayd outlived its bus")
        if daemon.process.isRunning { kill(daemon.process.processIdentifier, SIGKILL) }
        await exited(daemon.process)
        client.close()
        if let socket = BusDaemon.socketPath(of: daemon.address) { unlink(socket) }
        #expect(daemon.process.terminationStatus == 1)
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        #expect(log.contains("the bus connection was lost; exiting"), "\(log)")

        let again = try TodayDaemon(bundles: [bundles.path], home: home)
        defer { again.stop(keepHome: true) }
        let second = try await again.ready()
        defer { second.close() }
        #expect(try await second.property(id, "Snapshot").stringDictionary?["title"]?.unwrapped.string == title)
        #expect(try await second.property(id, "LastUpdated") == updated)
        #expect(try await second.property(id, "HasContent") == .boolean(false))
        try await second.center("RegisterApp", [.string(id)])
        let kept = try await second.call(Today.busName, path: path, interface: Today.group.name, member: MemberName("Get"), [.string("kept")])
        #expect(kept.body.first?.unwrapped == .string("acknowledged"))
    }

    @Test(.enabled(if: canUnshare, "needs root and unshare(1) to give todayd a private mount namespace with a small filesystem"))
    func aFullOrReadOnlyDiskIsAnErrorAndOldDataStays() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("full")
        defer { try? FileManager.default.removeItem(at: home) }
        // todayd in a mount namespace of its own, its data and cache folders
        // on a 1 MiB tmpfs there: nothing is mounted where anyone else looks.
        let disk = home.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        for folder in ["data", "cache"] {
            try FileManager.default.createSymbolicLink(atPath: home.path + "/" + folder, withDestinationPath: disk.path + "/" + folder)
        }
        let prepare = "mount -t tmpfs -o size=1m,mode=0700 tmpfs '\(disk.path)' && mkdir '\(disk.path)/data' '\(disk.path)/cache' && exec \"$@\""
        let daemon = try TodayDaemon(
            bundles: [bundles.path], home: home, launcher: ["/usr/bin/unshare", "-m", "--propagation", "private", "sh", "-c", prepare, "sh"])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        // The namespace's view of the disk, from outside it.
        let inside = "/proc/\(daemon.process.processIdentifier)/root" + disk.path
        func inNamespace(_ command: [String]) async throws -> Int32 {
            try await run(["nsenter", "-t", "\(daemon.process.processIdentifier)", "-m"] + command).status
        }
        #expect(try await run(["findmnt", disk.path]).status != 0, "the tmpfs is not mounted outside todayd's namespace")
        let id = "org.example.Durable.W"
        let path = Today.groupPath(Self.group)
        func set(_ key: String, _ value: Value) async -> String {
            do {
                try await client.call(Today.busName, path: path, interface: Today.group.name, member: MemberName("Set"), [.string(key), .variant(value)])
                return ""
            } catch let error as DBusError {
                return error.name.rawValue + ": " + error.message
            } catch {
                return "\(error)"
            }
        }
        try await client.center("RegisterApp", [.string("org.example.Durable.W")])
        #expect(await set("kept", .string("old")) == "")
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("new-data")])

        // Fill the disk.
        let filler = inside + "/data/filler"
        _ = try? await run(["dd", "if=/dev/zero", "of=\(filler)", "bs=64k", "count=100"])
        let full = await set("big", .bytes(Data(repeating: 1, count: 200_000)))
        #expect(full.hasPrefix("org.freedesktop.DBus.Error.Failed: ") && full.contains("No space left on device"), "\(full)")
        // New content that cannot be stored is a failure; the old snapshot stays.
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("failed")])
        let afterFull = try await client.property(id, "LastFailure").string ?? ""
        #expect(afterFull.hasPrefix("storage: ") && afterFull.contains("No space left on device"), "\(afterFull)")
        try FileManager.default.removeItem(atPath: filler)
        // Space again: writes work again.
        #expect(await set("after", .string("space")) == "")
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("new-data")])
        #expect(try await client.property(id, "LastFailure") == .string(""))

        // Read-only.
        #expect(try await inNamespace(["mount", "-o", "remount,ro", disk.path]) == 0)
        let readOnly = await set("kept", .string("new"))
        #expect(readOnly.contains("Read-only file system"), "\(readOnly)")
        #expect(try await client.widget(id, "PerformUpdate").body == [.string("failed")])
        #expect(try await client.property(id, "LastFailure").string?.hasPrefix("storage: ") == true)
        let title = try await client.property(id, "Snapshot").stringDictionary?["title"]?.unwrapped.string
        #expect(title != nil, "the last stored snapshot stays")
        _ = try await inNamespace(["mount", "-o", "remount,rw", disk.path])

        // The old data is intact on disk.
        let defaults = try Plist.read(contentsOf: inside + "/data/todayd/groups/\(Self.group)/Library/Preferences/\(Self.group).plist")
        #expect(defaults["kept"]?.string == "old")
        #expect(defaults["big"] == nil)
        let stored = try Plist.read(contentsOf: inside + "/cache/todayd/snapshots/\(id).plist")
        #expect(stored["TodaydTimeline"]?.array?.last?["snapshot"]?["title"]?.string == title)
    }

    /// A Notify whose record cannot be written (a full disk) is refused
    /// saying why, and nothing of it stays: not in the list, not in the
    /// journal, not announced; with space again, notifications are kept.
    @Test(.enabled(if: canUnshare, "needs root and unshare(1) to give todayd a private mount namespace with a small filesystem"))
    func aNotificationThatCannotBeKeptIsRefused() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("full-notifications")
        defer { try? FileManager.default.removeItem(at: home) }
        // The state folder, where the list is kept, on a 1 MiB tmpfs in a
        // mount namespace of todayd's own.
        let disk = home.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: home.path + "/state", withDestinationPath: disk.path + "/state")
        let prepare = "mount -t tmpfs -o size=1m,mode=0700 tmpfs '\(disk.path)' && mkdir '\(disk.path)/state' && exec \"$@\""
        let daemon = try TodayDaemon(
            bundles: [bundles.path], home: home, launcher: ["/usr/bin/unshare", "-m", "--propagation", "private", "sh", "-c", prepare, "sh"])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        _ = try await client.waitForOwner(of: Notifications.freedesktopName, timeout: .seconds(10))
        let inside = "/proc/\(daemon.process.processIdentifier)/root" + disk.path
        let announced = Locked<[String]>([])
        try await client.subscribe(MatchRule(interface: Notifications.today.name, member: Notifications.Center.notificationsChanged.name)) { message in
            announced.withLock { $0.append("\(message.body)") }
        }
        typealias F = Notifications.Freedesktop
        // Each record needs pages of its own (a body of 16 KiB).
        let body = String(repeating: "x", count: 16 * 1024)
        func notify(_ summary: String) async -> Result<UInt32, DBusError> {
            do {
                return .success(
                    try await client.call(
                        Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name, F.notify,
                        "Mail", UInt32(0), "", summary, body, [String](), VariantDictionary([]), Int32(0)
                    ).value(UInt32.self))
            } catch let error as DBusError {
                return .failure(error)
            } catch {
                return .failure(DBusError.failed("\(error)"))
            }
        }
        var acknowledged: [UInt32] = []
        for n in 1...3 { acknowledged.append(try await notify("kept \(n)").get()) }

        let filler = inside + "/state/filler"
        _ = try? await run(["dd", "if=/dev/zero", "of=\(filler)", "bs=64k", "count=100"])
        #expect(try await eventually(5) { !announced.value.isEmpty })
        try await Task.sleep(for: .milliseconds(100))
        let heard = announced.value.count
        guard case .failure(let refused) = await notify("not kept") else {
            Issue.record("a Notify on a full disk was answered with an id")
            return
        }
        #expect(refused.name.rawValue == "org.freedesktop.DBus.Error.Failed")
        #expect(refused.message.contains("No space left on device") && refused.message.contains("nothing was posted"), "\(refused.message)")
        let listed = try await NotificationServerTests.list(client)
        #expect(listed.map { $0["id"]?.uint64 ?? 0 } == acknowledged.reversed().map(UInt64.init))
        // Short ones, 32 at once, are answered on todayd's loop thread and
        // kept together at the end of each turn: a turn's write that fails
        // takes every one of them back. (A record of more than 4 KiB needs
        // a page the full disk does not have.)
        let short = String(repeating: "y", count: 4096)
        let together = await withTaskGroup(of: Result<UInt32, DBusError>.self) { group in
            for n in 1...32 {
                group.addTask {
                    do {
                        return .success(
                            try await client.call(
                                Notifications.freedesktopName, path: Notifications.freedesktopPath, interface: Notifications.freedesktop.name,
                                F.notify, "Mail", UInt32(0), "", "together \(n)", short, [String](), VariantDictionary([]), Int32(0)
                            ).value(UInt32.self))
                    } catch let error as DBusError {
                        return .failure(error)
                    } catch {
                        return .failure(DBusError.failed("\(error)"))
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for result in together {
            guard case .failure(let refused) = result else {
                Issue.record("a Notify on a full disk was answered with an id: \(result)")
                continue
            }
            #expect(refused.message.contains("nothing was posted"), "\(refused.message)")
        }
        #expect(try await NotificationServerTests.list(client).map { $0["id"]?.uint64 ?? 0 } == acknowledged.reversed().map(UInt64.init))
        try await Task.sleep(for: .milliseconds(100))
        #expect(announced.value.count == heard, "a notification taken back is not announced: \(announced.value.suffix(2))")

        // Space again: the next is kept, with an id never given before.
        try FileManager.default.removeItem(atPath: filler)
        let next = try await notify("kept again").get()
        #expect(next > acknowledged.max() ?? 0)
        acknowledged.append(next)

        // The journal holds exactly what was acknowledged.
        var environment = TodayDaemon.environment(home: home)
        environment["XDG_STATE_HOME"] = inside + "/state"
        let store = NotificationStore(directories: Directories(environment: environment, extraBundleFolders: []), log: Logger(verbose: false))
        #expect(store.load().notifications.map(\.id) == acknowledged)
    }
}
