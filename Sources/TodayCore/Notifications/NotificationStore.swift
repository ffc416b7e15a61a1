import FoundationEssentials
import Glibc
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The notification list on disk (SPEC section 14), under
/// `$XDG_STATE_HOME/todayd/notifications/`: `journal`, an append-only log
/// of what changed (a notification put, with its whole stored form, or one
/// removed), and `last-id`, the ids reserved.
///
/// A notification's record is appended, in one write(), before its Notify
/// is answered, so that killing todayd loses nothing it acknowledged (the
/// page cache outlives the process); the journal is flushed to the disk
/// half a second later, so that a flood costs one fsync a second, and a
/// Notify one write() rather than a file created, renamed and later
/// removed. Once it holds four times as many records as the list, it is
/// written again as the list alone, durably, and replaces itself.
///
/// Each record is its length and an FNV-1a checksum (both 32-bit, little
/// endian), then a binary property list: `{put: notification}` or
/// `{remove: id}`. Reading stops at the first record that is cut short or
/// does not match its checksum (a power cut in the middle of a write): what
/// came before is kept, the rest is cut off, and the log says so.
final class NotificationStore: Sendable {
    let folder: String
    private let log: Logger
    private let journal = Mutex(Journal())
    private let pending = Mutex<(names: Set<String>, flush: Task<Void, Never>?)>(([], nil))
    /// The list as it is now, for a rewrite of the journal.
    private let live = Mutex<(@Sendable () -> [TodayNotification]?)?>(nil)

    private struct Journal {
        var file: FileDescriptor?
        /// Its size, as written: where a failed append is cut back to.
        var size = 0
        /// Records appended since it was last written whole, and how many
        /// notifications that rewrite held.
        var appended = 0
        var lastRewrite = 0
    }

    static let journalName = "journal"

    init(directories: Directories, log: Logger) {
        folder = directories.stateHome + "/todayd/notifications"
        self.log = log
    }

    /// Where the list comes from when the journal is written again (nil
    /// once its owner is gone: then it is not).
    func follow(_ list: @escaping @Sendable () -> [TodayNotification]?) {
        live.withLock { $0 = list }
    }

    /// The notifications kept, and the last id given (or reserved).
    func load() -> (lastID: UInt32, notifications: [TodayNotification]) {
        var lastID: UInt32 = 0
        if let text = try? String(contentsOfFile: folder + "/last-id", encoding: .utf8) {
            lastID = UInt32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        var kept: [UInt32: TodayNotification] = [:]
        var rewrite = false
        // An earlier layout: a file a notification. Taken into the journal.
        var earlier: [String] = []
        for name in FileSystem.entries(folder) where name.hasSuffix(".plist") && !name.hasPrefix(".") {
            let path = folder + "/" + name
            earlier.append(path)
            guard let read = (try? Plist.read(contentsOf: path))?.dictionary, let notification = TodayNotification(stored: read) else {
                log.warning("\(path) is not a notification todayd wrote; it is left out")
                continue
            }
            kept[notification.id] = notification
        }
        let path = folder + "/" + Self.journalName
        var records = 0
        if let file = try? FileDescriptor.open(path, O_RDONLY), let data = try? file.readToEnd(limit: Int(Int32.max)) {
            let (read, good) = Self.records(in: data)
            for record in read {
                switch record {
                case .put(let notification): kept[notification.id] = notification
                case .remove(let id): kept[id] = nil
                }
            }
            records = read.count
            if good < data.count {
                log.warning("\(path): \(data.count - good) bytes after the last whole record (cut short by a crash?) are left out")
                rewrite = true
            }
        }
        let notifications = kept.values.sorted { $0.id < $1.id }
        // Rewritten when it must be (an earlier layout, a bad tail) or when
        // it has grown past the list it holds.
        if rewrite || !earlier.isEmpty || records > 4 * max(notifications.count, 1000) {
            journal.withLock { journal in
                do {
                    try rewriteJournal(notifications, &journal)
                    for file in earlier { try? Files.unlink(file) }
                } catch {
                    log.warning("cannot write \(path) again: \(error)")
                }
            }
        }
        for leftover in DurableFile.removeLeftovers(in: folder) { log.info("removed \(leftover), left by an interrupted write") }
        return (max(lastID, notifications.last?.id ?? 0), notifications)
    }

    /// Appends `notification` (put in place of what it replaces); throws
    /// where it cannot be kept, and then nothing of it is in the journal.
    func save(_ notification: TodayNotification) throws {
        try append(Self.record(.put(notification)))
    }

    /// Keeps `id` as the last id given (or reserved), durably.
    func saveLastID(_ id: UInt32) throws {
        try DurableFile.write(Data("\(id)\n".utf8), to: folder + "/last-id")
    }

    /// Appends the removal of notification `id`.
    func forget(_ id: UInt32) {
        do {
            try append(Self.record(.remove(id)))
        } catch {
            log.warning("cannot remove notification \(id) from \(folder)/\(Self.journalName): \(error)")
        }
    }

    private func append(_ record: Data) throws {
        let list = live.withLock { $0 }
        try journal.withLock { journal in
            let file = try open(&journal)
            do throws(Errno) {
                try file.write(all: record)
            } catch {
                // Nothing half-written stays at the end (ENOSPC, EIO).
                try? file.truncate(to: journal.size)
                throw DurableFile.Failure(path: folder + "/" + Self.journalName, operation: "write", error: error)
            }
            journal.size += record.count
            journal.appended += 1
            if journal.appended > 4 * max(journal.lastRewrite, 1000), let notifications = list?() {
                // The order of locks: the journal, then the list's. What is
                // appended from here on goes into the rewritten journal.
                do {
                    try rewriteJournal(notifications, &journal)
                } catch {
                    log.warning("cannot write \(folder)/\(Self.journalName) again (it goes on growing): \(error)")
                }
            }
        }
        syncSoon(Self.journalName)
    }

    /// The journal, open for appending.
    private func open(_ journal: inout Journal) throws -> FileDescriptor {
        if let file = journal.file { return file }
        try DurableFile.makeFolder(folder)
        let path = folder + "/" + Self.journalName
        do throws(Errno) {
            let file = try FileDescriptor.open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, mode: 0o600)
            journal.size = Int(try file.status().st_size)
            journal.file = file
            return file
        } catch {
            throw DurableFile.Failure(path: path, operation: "open", error: error)
        }
    }

    /// Replaces the journal with one put of each of `notifications`,
    /// durably, and appends to that from now on.
    private func rewriteJournal(_ notifications: [TodayNotification], _ journal: inout Journal) throws {
        var data = Data()
        for notification in notifications { data.append(Self.record(.put(notification))) }
        try DurableFile.write(data, to: folder + "/" + Self.journalName)
        journal = Journal(file: nil, size: 0, appended: 0, lastRewrite: notifications.count)
    }

    // MARK: Records

    enum Record: Equatable {
        case put(TodayNotification)
        case remove(UInt32)
    }

    /// `record` as it is appended: length, checksum, property list.
    static func record(_ record: Record) -> Data {
        let value: PlistDictionary =
            switch record {
            case .put(let notification): ["put": .dictionary(notification.stored)]
            case .remove(let id): ["remove": .integer(Int64(id))]
            }
        // A dictionary of plist values always encodes.
        let payload = (try? Plist.write(.dictionary(value), format: .binary)) ?? Data()
        var data = Data(capacity: payload.count + 8)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: checksum(payload).littleEndian) { data.append(contentsOf: $0) }
        data.append(payload)
        return data
    }

    /// The records in `data`, up to the first that is cut short, does not
    /// match its checksum or is not one todayd writes; and how many bytes
    /// those whole records take.
    static func records(in data: Data) -> (records: [Record], good: Int) {
        var records: [Record] = []
        var offset = data.startIndex
        while data.endIndex - offset >= 8 {
            let length = Int(word(data, at: offset))
            let sum = word(data, at: offset + 4)
            let start = offset + 8
            guard length <= data.endIndex - start else { break }
            let payload = data[start..<start + length]
            guard checksum(payload) == sum, let value = (try? Plist.read(Data(payload)))?.dictionary else { break }
            if let stored = value["put"]?.dictionary, let notification = TodayNotification(stored: stored) {
                records.append(.put(notification))
            } else if let id = value["remove"]?.int64, let removed = UInt32(exactly: id) {
                records.append(.remove(removed))
            } else {
                break
            }
            offset = start + length
        }
        return (records, offset - data.startIndex)
    }

    private static func word(_ data: Data, at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[offset + $1]) << (8 * UInt32($1)) }
    }

    /// 32-bit FNV-1a.
    static func checksum(_ bytes: Data) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return hash
    }

    // MARK: Flushing

    /// Flushes `name` (and the folder) to the disk within a second.
    private func syncSoon(_ name: String) {
        pending.withLock { pending in
            pending.names.insert(name)
            guard pending.flush == nil else { return }
            pending.flush = Task { [weak self] in
                try? await Task.sleep(for: .seconds(0.5))
                self?.flush()
            }
        }
    }

    /// Flushes what was written since the last flush.
    func flush() {
        let names = pending.withLock { pending -> Set<String> in
            defer { pending = ([], nil) }
            return pending.names
        }
        guard !names.isEmpty else { return }
        if let file = journal.withLock({ $0.file }) { try? file.sync() }
        DurableFile.syncFolder(folder)
    }
}
