import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The notification journal: what is appended reads back, a tail cut
/// short by a crash is left out and cut off, the earlier layout (a file a
/// notification) is taken in, and a journal that has grown is written
/// again as the list alone.
@Suite struct NotificationStoreTests {
    static func notification(_ id: UInt32, _ summary: String = "hello") -> TodayNotification {
        TodayNotification(
            id: id, appID: "org.example.Chat", appName: "Chat", summary: summary, body: "<b>body</b>", urgency: .normal, category: "",
            time: Date(timeIntervalSince1970: 1_796_083_200), source: .freedesktop)
    }

    func store(_ home: URL) -> NotificationStore {
        NotificationStore(directories: Directories(environment: ["HOME": home.path]), log: Logger(verbose: false))
    }

    @Test func whatIsAppendedReadsBack() throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let first = store(home)
        for id in 1...5 { try first.save(Self.notification(UInt32(id))) }
        try first.save(Self.notification(2, "replaced"))
        first.forget(4)
        let (lastID, kept) = store(home).load()
        #expect(kept.map(\.id) == [1, 2, 3, 5])
        #expect(kept.first { $0.id == 2 }?.summary == "replaced")
        #expect(lastID == 5)
    }

    @Test func aTailCutShortIsLeftOutAndCutOff() throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let first = store(home)
        for id in 1...3 { try first.save(Self.notification(UInt32(id))) }
        let path = first.folder + "/" + NotificationStore.journalName
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        // Half of a fourth record, as a power cut in its write leaves it.
        let fourth = NotificationStore.record(.put(Self.notification(4)))
        try (whole + fourth.prefix(fourth.count / 2)).write(to: URL(fileURLWithPath: path))
        #expect(store(home).load().notifications.map(\.id) == [1, 2, 3])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == whole.count, "the cut tail is gone, what came before stays")
        // A record whose bytes changed does not match its checksum.
        var flipped = whole
        flipped[flipped.count - 3] ^= 0x40
        try flipped.write(to: URL(fileURLWithPath: path))
        #expect(store(home).load().notifications.map(\.id) == [1, 2])
        // Appends after a cut land after the good records.
        let again = store(home)
        _ = again.load()
        try again.save(Self.notification(9))
        #expect(store(home).load().notifications.map(\.id) == [1, 2, 9])
    }

    @Test func theEarlierLayoutIsTakenIn() throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let folder = home.path + "/.local/state/todayd/notifications"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for id in [3, 7] {
            try Plist.write(.dictionary(Self.notification(UInt32(id)).stored), format: .binary).write(to: URL(fileURLWithPath: "\(folder)/\(id).plist"))
        }
        #expect(store(home).load().notifications.map(\.id) == [3, 7])
        #expect(!FileManager.default.fileExists(atPath: folder + "/3.plist"), "taken into the journal")
        #expect(store(home).load().notifications.map(\.id) == [3, 7])
    }

    /// The rewrite runs beside the appends: what is appended while it runs
    /// is in the journal that replaces the old one.
    @Test func aGrownJournalIsWrittenAgainAsTheList() async throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let kept = store(home)
        let list = Locked([Self.notification(1)])
        kept.follow { list.value }
        let path = kept.folder + "/" + NotificationStore.journalName
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        var largest = 0
        // As the service does: the list changes, then its record is appended.
        for n in 0..<4100 {
            list.value = [Self.notification(1, "edit \(n)"), Self.notification(2, "other")]
            try kept.save(Self.notification(1, "edit \(n)"))
            if n == 0 { try kept.save(Self.notification(2, "other")) }
            largest = max(largest, size())
        }
        #expect(try await eventually(10) { size() < largest / 10 }, "\(size()) bytes after the rewrite, \(largest) before")
        let read = store(home).load().notifications
        #expect(read.map(\.summary) == ["edit 4099", "other"])
        #expect(!FileManager.default.fileExists(atPath: path + ".next"))
    }
}
