import DBus
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

    /// A notification with every field set, none at its default.
    static func full(_ id: UInt32) -> TodayNotification {
        var full = TodayNotification(
            id: id, appID: "org.gnome.Maps", appName: "Maps ✈", summary: "Turn left", body: "in <b>200 m</b>", appIcon: "maps",
            actions: [
                .init(key: "default", label: "Open"),
                .init(key: "app.route", label: "Route", gtkAction: "app.route", gtkTarget: .structure([.int32(-7), .string("home")])),
            ],
            urgency: .critical, category: "transfer", time: Date(timeIntervalSince1970: 1_796_083_200.123_456), source: .gtk)
        full.isOpen = true
        full.resident = true
        full.transient = true
        full.image = .init(width: 2, height: 1, rowstride: 8, hasAlpha: true, bitsPerSample: 8, channels: 4, data: Data([1, 2, 3, 4, 5, 6, 7, 8]))
        full.imagePath = "/usr/share/icons/a.png"
        full.imageFile = "/tmp/kept.png"
        full.value = 40
        full.hints = VariantDictionary([("x-count", .uint16(3)), ("sound-name", .string("bell"))])
        full.expires = Date(timeIntervalSince1970: 1_796_083_210.5)
        full.stackTag = "volume"
        full.appNotificationID = "route-1"
        full.gtkDefaultAction = "app.open"
        full.gtkDefaultTarget = .uint64(9)
        full.desktopEntry = "org.gnome.Maps"
        full.duplicates = 2
        return full
    }

    /// The record each Notify appends reads back as the notification it
    /// was, every field; bytes that are not one are refused, not guessed.
    @Test func aRecordReadsBackEveryField() throws {
        let full = Self.full(7)
        let bytes = NotificationStore.record(.put(full))
        #expect(NotificationStore.records(in: Data(bytes)).records == [.put(full)])
        let plain = Self.notification(8)
        #expect(NotificationStore.records(in: Data(NotificationStore.record(.put(plain)))).records == [.put(plain)])
        #expect(NotificationStore.records(in: Data(NotificationStore.record(.remove(9)))).records == [.remove(9)])

        var record: [UInt8] = []
        full.appendRecord(to: &record)
        // A field cut short is refused, wherever the cut. (A cut between
        // two fields is the journal's to catch: its length and checksum.)
        var fieldEnds: Set<Int> = [0]
        var offset = 0
        while offset < record.count {
            offset += 5 + Int(record[offset + 1]) + Int(record[offset + 2]) << 8 + Int(record[offset + 3]) << 16
            fieldEnds.insert(offset)
        }
        #expect(offset == record.count)
        for cut in 0..<record.count where !fieldEnds.contains(cut) {
            #expect(record.prefix(cut).withUnsafeBytes { TodayNotification(record: $0) } == nil, "cut at \(cut)")
        }
        // A field a later todayd adds is passed over.
        var later = record
        later += [200, 3, 0, 0, 0, 1, 2, 3]
        #expect(later.withUnsafeBytes { TodayNotification(record: $0) } == full)
        // A known field of the wrong size, or text that is not UTF-8, is not a record todayd wrote.
        var wrongSize = record
        wrongSize += [7, 2, 0, 0, 0, 1, 1]  // urgency, two bytes
        #expect(wrongSize.withUnsafeBytes { TodayNotification(record: $0) } == nil)
        var notText = record
        notText += [6, 2, 0, 0, 0, 0xC3, 0x28]  // the body, not UTF-8
        #expect(notText.withUnsafeBytes { TodayNotification(record: $0) } == nil)
    }

    /// The journals earlier versions wrote, of property lists, read as before.
    @Test func anEarlierJournalStillReads() throws {
        func plistRecord(_ value: PlistDictionary) throws -> Data {
            let payload = try Plist.write(.dictionary(value), format: .binary)
            var data = Data()
            withUnsafeBytes(of: UInt32(payload.count).littleEndian) { data.append(contentsOf: $0) }
            let sum = payload.withUnsafeBytes { NotificationStore.checksum($0) }
            withUnsafeBytes(of: sum.littleEndian) { data.append(contentsOf: $0) }
            return data + payload
        }
        let full = Self.full(3)
        let journal = try plistRecord(["put": .dictionary(full.stored)]) + plistRecord(["put": .dictionary(Self.notification(4).stored)])
            + plistRecord(["remove": .integer(4)]) + Data(NotificationStore.record(.put(Self.notification(5))))
        let (records, good) = NotificationStore.records(in: journal)
        #expect(records == [.put(full), .put(Self.notification(4)), .remove(4), .put(Self.notification(5))])
        #expect(good == journal.count)
    }

    func store(_ home: URL) -> NotificationStore {
        NotificationStore(directories: Directories(environment: ["HOME": home.path]), log: Logger(verbose: false))
    }

    @Test func whatIsAppendedReadsBack() throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let first = store(home)
        for id in 1...5 { try first.keep([.put(Self.notification(UInt32(id)))]) }
        try first.keep([.put(Self.notification(2, "replaced"))])
        try first.keep([.remove(4)])
        let (lastID, kept, seenUpTo) = store(home).load()
        #expect(kept.map(\.id) == [1, 2, 3, 5])
        #expect(kept.first { $0.id == 2 }?.summary == "replaced")
        #expect(lastID == 5)
        #expect(seenUpTo == nil, "never marked seen")
    }

    @Test func whatIsSeenReadsBackToTheMicrosecond() throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let time = ValueMapping.storable(Date(timeIntervalSince1970: 1_796_119_200.123456))
        try store(home).keepSeen(upTo: time)
        #expect(store(home).load().seenUpTo == time)
        // A file that holds no time: every notification counts as unseen.
        try Data("garbage".utf8).write(to: home.appendingPathComponent(".local/state/todayd/notifications/seen"))
        #expect(store(home).load().seenUpTo == nil)
    }

    @Test func aTailCutShortIsLeftOutAndCutOff() throws {
        let home = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: home) }
        let first = store(home)
        for id in 1...3 { try first.keep([.put(Self.notification(UInt32(id)))]) }
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
        try again.keep([.put(Self.notification(9))])
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
        let edits = NotificationStore.rewriteFactor * 1000 + 100
        for n in 0..<edits {
            list.value = [Self.notification(1, "edit \(n)"), Self.notification(2, "other")]
            try kept.keep([.put(Self.notification(1, "edit \(n)"))])
            if n == 0 { try kept.keep([.put(Self.notification(2, "other"))]) }
            largest = max(largest, size())
        }
        #expect(try await eventually(10) { size() < largest / 10 }, "\(size()) bytes after the rewrite, \(largest) before")
        let read = store(home).load().notifications
        #expect(read.map(\.summary) == ["edit \(edits - 1)", "other"])
        #expect(!FileManager.default.fileExists(atPath: path + ".next"))
    }
}
