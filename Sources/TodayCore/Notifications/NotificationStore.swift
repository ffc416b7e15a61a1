import FoundationEssentials
import Glibc
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The notification list on disk (SPEC section 14), under
/// `$XDG_STATE_HOME/todayd/notifications/`: `journal`, an append-only log
/// of what changed (a notification put, with its whole stored form, or one
/// removed), `last-id`, the ids reserved, and `seen`, the time up to which
/// the user has seen what was posted (MarkSeen; microseconds since 1970).
///
/// A notification's record is appended, in one write(), before its Notify
/// is answered, so that killing todayd loses nothing it acknowledged (the
/// page cache outlives the process); the journal is flushed to the disk
/// half a second later, so that a flood costs one fsync a second, and a
/// Notify one write() rather than a file created, renamed and later
/// removed. Once it holds eight times as many records as the list, it is
/// written again as the list alone, on a thread of its own while appends go
/// on: the list taken at a point of the journal, written and flushed beside
/// it, what was appended since that point copied after it, and the result
/// renamed over the journal.
///
/// Each record is its length and an FNV-1a checksum (both 32-bit, little
/// endian), then its kind and what it holds: 1 and a notification's record
/// (`TodayNotification.appendRecord`), or 2 and the id removed (32-bit,
/// little endian). The journals of earlier versions hold binary property
/// lists instead (`{put: notification}`, `{remove: id}`), which are still
/// read. Reading stops at the first record that is cut short or does not
/// match its checksum (a power cut in the middle of a write): what came
/// before is kept, the rest is cut off, and the log says so. What one change
/// appends (a notification put and the oldest one removed) is one write().
final class NotificationStore: Sendable {
    let folder: String
    private let log: Logger
    private let journal = Mutex(Journal())
    /// The id `last-id` holds, as last written.
    private let lastIDKept = Mutex<UInt32>(0)
    /// What the next flush makes durable: the journal and the folder
    /// (`journal`), and files written whole without waiting for the disk
    /// (pictures, `seen`).
    private let pending = Mutex<(journal: Bool, files: Set<String>, flush: Task<Void, Never>?)>((false, [], nil))
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
        /// A rewrite is under way: no second one starts.
        var rewriting = false
        /// Where an append's records are made, kept from one append to
        /// the next: most records are a few hundred bytes.
        var buffer: [UInt8] = []
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

    /// The notifications kept, the last id given (or reserved), and the
    /// time up to which the user has seen them (nil: never marked seen).
    func load() -> (lastID: UInt32, notifications: [TodayNotification], seenUpTo: Date?) {
        var lastID: UInt32 = 0
        if let text = try? String(contentsOfFile: folder + "/last-id", encoding: .utf8) {
            lastID = UInt32(text.trimmingWhitespace()) ?? 0
        }
        var seenUpTo: Date?
        if let text = try? String(contentsOfFile: folder + "/" + Self.seenName, encoding: .utf8) {
            if let micros = UInt64(text.trimmingWhitespace()) {
                seenUpTo = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
            } else {
                log.warning("\(folder)/\(Self.seenName) holds no time; every notification kept counts as unseen")
            }
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
        // A rewrite cut short by a stop: the journal itself is whole.
        try? Files.unlink(path + ".next")
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
        if rewrite || !earlier.isEmpty || records > Self.rewriteFactor * max(notifications.count, 1000) {
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
        return (max(lastID, notifications.last?.id ?? 0), notifications, seenUpTo)
    }

    /// How many times as many records as the list the journal holds before
    /// it is written again as the list alone. A flood past a full list
    /// appends two records a notification (its put, the oldest's remove),
    /// so the list of 1,000 is written again every 4,000 notifications:
    /// rarely enough to cost a flood little, and a journal read at start
    /// holds at most 8,000 records.
    static let rewriteFactor = 8

    /// Appends `records` in one write; throws where they cannot be kept,
    /// and then none of them is in the journal.
    func keep(_ records: [Record]) throws {
        guard !records.isEmpty else { return }
        let rewrite = try journal.withLock { journal in
            let file = try open(&journal)
            journal.buffer.removeAll(keepingCapacity: true)
            for record in records { Self.append(record, to: &journal.buffer) }
            let written = journal.buffer.count
            // A buffer grown by a long body goes with it.
            defer { if journal.buffer.capacity > 1 << 16 { journal.buffer = [] } }
            do throws(Errno) {
                try file.write(all: journal.buffer)
            } catch {
                // Nothing half-written stays at the end (ENOSPC, EIO).
                try? file.truncate(to: journal.size)
                throw DurableFile.Failure(path: folder + "/" + Self.journalName, operation: "write", error: error)
            }
            journal.size += written
            journal.appended += records.count
            guard journal.appended > Self.rewriteFactor * max(journal.lastRewrite, 1000), !journal.rewriting else { return false }
            journal.rewriting = true
            return true
        }
        if rewrite {
            do {
                try Threads.detach { [self] in rewriteBeside() }
            } catch {
                journal.withLock { $0.rewriting = false }
                log.warning("cannot start writing \(folder)/\(Self.journalName) again (it goes on growing): \(error)")
            }
        }
        syncSoon()
    }

    /// Keeps `id` as the last id reserved, durably, unless a later one is
    /// kept already (two reservations can cross).
    func saveLastID(_ id: UInt32) throws {
        try lastIDKept.withLock { kept in
            guard id > kept else { return }
            try DurableFile.write(Data("\(id)\n".utf8), to: folder + "/last-id")
            kept = id
        }
    }

    /// Keeps `id` as the last id given, at a clean stop: ids go on from it.
    func saveLastGiven(_ id: UInt32) throws {
        try lastIDKept.withLock { kept in
            try DurableFile.write(Data("\(id)\n".utf8), to: folder + "/last-id")
            kept = id
        }
    }

    static let seenName = "seen"

    /// Keeps that the notifications posted up to `time` are seen: written
    /// whole at once, and flushed to the disk within a second with the
    /// journal (MarkSeen comes on the loop thread, which does not wait for
    /// the disk).
    func keepSeen(upTo time: Date) throws {
        let path = folder + "/" + Self.seenName
        try DurableFile.makeFolder(folder)
        try DurableFile.write(Data("\(ValueMapping.microseconds(time))\n".utf8), to: path, sync: false)
        pending.withLock { _ = $0.files.insert(path) }
        syncSoon()
    }

    /// The folder of the pictures kept as PNG files.
    var imageFolder: String { folder + "/images" }

    /// Keeps `png` as a file of its own, in one step (flushed to the disk
    /// within a second, with the journal); returns its path.
    func keepImage(_ png: Data) throws -> String {
        let name = String(UInt64.random(in: 0...UInt64.max), radix: 16) + ".png"
        let path = imageFolder + "/" + name
        try DurableFile.write(png, to: path, sync: false)
        pending.withLock { _ = $0.files.insert(path) }
        syncSoon()
        return path
    }

    /// Removes a picture kept for a notification that is gone.
    func dropImage(_ path: String) {
        guard path.hasPrefix(imageFolder + "/") else { return }
        try? Files.unlink(path)
    }

    /// Removes the pictures no notification of `kept` holds (left by a
    /// kill between a picture and its record, or by a transient one).
    func sweepImages(keeping kept: [TodayNotification]) {
        let held = Set(kept.compactMap(\.imageFile))
        for name in FileSystem.entries(imageFolder) where !held.contains(imageFolder + "/" + name) {
            try? Files.unlink(imageFolder + "/" + name)
        }
    }

    /// Writes the journal again as the list, while appends go on; on a
    /// thread of its own (a flood must not wait for it).
    private func rewriteBeside() {
        let path = folder + "/" + Self.journalName
        let next = path + ".next"
        // The list, and the point of the journal it holds: a change reaches
        // the list before its record is appended, so the list taken after
        // the point holds every record before it.
        // The order of locks: the journal, then the list's.
        let list = live.withLock { $0 }
        guard let (notifications, point) = journal.withLock({ journal in list?().map { ($0, journal.size) } }) else {
            journal.withLock { $0.rewriting = false }
            return
        }
        do {
            try DurableFile.write(Data(Self.journal(of: notifications)), to: next)
            try journal.withLock { journal in
                defer { journal.rewriting = false }
                // What was appended since the point goes after the list
                // (its records replay over it), then the whole replaces
                // the journal; the flush that follows makes that durable.
                let file = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW)
                var tail = Data(count: journal.size - point)
                let read = try tail.withUnsafeMutableBytes { try file.read(into: $0, at: point) }
                guard read == tail.count else { throw Errno(EIO) }
                let written = try FileDescriptor.open(next, O_WRONLY | O_APPEND | O_NOFOLLOW)
                try written.write(all: tail)
                try written.close()
                try Files.rename(next, to: path)
                journal = Journal(file: nil, size: 0, appended: 0, lastRewrite: notifications.count)
            }
        } catch {
            try? Files.unlink(next)
            journal.withLock { $0.rewriting = false }
            log.warning("cannot write \(path) again (it goes on growing): \(error)")
        }
        syncSoon()
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
        try DurableFile.write(Data(Self.journal(of: notifications)), to: folder + "/" + Self.journalName)
        journal = Journal(file: nil, size: 0, appended: 0, lastRewrite: notifications.count)
    }

    // MARK: Records

    /// A journal that holds `notifications` alone: one put of each.
    static func journal(of notifications: [TodayNotification]) -> [UInt8] {
        var bytes: [UInt8] = []
        for notification in notifications { append(.put(notification), to: &bytes) }
        return bytes
    }

    enum Record: Equatable {
        case put(TodayNotification)
        case remove(UInt32)
    }

    /// What a record holds, its first byte.
    enum Kind: UInt8 {
        case put = 1, remove = 2
    }

    /// `record` as it is appended: length, checksum, kind, what it holds.
    static func record(_ record: Record) -> [UInt8] {
        var bytes: [UInt8] = []
        append(record, to: &bytes)
        return bytes
    }

    static func append(_ record: Record, to bytes: inout [UInt8]) {
        let header = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 8))
        switch record {
        case .put(let notification):
            bytes.append(Kind.put.rawValue)
            notification.appendRecord(to: &bytes)
        case .remove(let id):
            bytes.append(Kind.remove.rawValue)
            withUnsafeBytes(of: id.littleEndian) { bytes.append(contentsOf: $0) }
        }
        bytes.withUnsafeMutableBytes { raw in
            let payload = UnsafeRawBufferPointer(rebasing: raw[(header + 8)...])
            raw.storeBytes(of: UInt32(truncatingIfNeeded: payload.count).littleEndian, toByteOffset: header, as: UInt32.self)
            raw.storeBytes(of: checksum(payload).littleEndian, toByteOffset: header + 4, as: UInt32.self)
        }
    }

    /// The records in `data`, up to the first that is cut short, does not
    /// match its checksum or is not one todayd writes; and how many bytes
    /// those whole records take.
    static func records(in data: Data) -> (records: [Record], good: Int) {
        data.withUnsafeBytes { raw in
            var records: [Record] = []
            var offset = 0
            while raw.count - offset >= 8 {
                let length = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let sum = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
                let start = offset + 8
                guard length <= raw.count - start else { break }
                let payload = UnsafeRawBufferPointer(rebasing: raw[start..<start + length])
                guard checksum(payload) == sum, let record = decode(payload) else { break }
                records.append(record)
                offset = start + length
            }
            return (records, offset)
        }
    }

    /// The record a checked payload holds, in either form; nil where it
    /// is not one todayd writes.
    private static func decode(_ payload: UnsafeRawBufferPointer) -> Record? {
        guard let first = payload.first else { return nil }
        switch Kind(rawValue: first) {
        case .put:
            return TodayNotification(record: UnsafeRawBufferPointer(rebasing: payload.dropFirst())).map(Record.put)
        case .remove:
            guard payload.count == 5 else { return nil }
            return .remove(UInt32(littleEndian: payload.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
        case nil:
            // An earlier version's property list.
            guard let value = (try? Plist.read(Data(payload)))?.dictionary else { return nil }
            if let stored = value["put"]?.dictionary, let notification = TodayNotification(stored: stored) { return .put(notification) }
            if let id = value["remove"]?.int64, let removed = UInt32(exactly: id) { return .remove(removed) }
            return nil
        }
    }

    /// 32-bit FNV-1a.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return hash
    }

    // MARK: Flushing

    /// Flushes the journal and the folder to the disk within a second.
    private func syncSoon() {
        pending.withLock { pending in
            pending.journal = true
            guard pending.flush == nil else { return }
            pending.flush = Task { [weak self] in
                try? await Task.sleep(for: .seconds(0.5))
                self?.flush()
            }
        }
    }

    /// Flushes what was written since the last flush.
    func flush() {
        let (journalWritten, files) = pending.withLock { pending -> (Bool, Set<String>) in
            defer { pending = (false, [], nil) }
            return (pending.journal, pending.files)
        }
        for path in files {
            // A picture is gone already where its notification went.
            try? FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW).sync()
        }
        if files.contains(where: { $0.hasPrefix(imageFolder + "/") }) { DurableFile.syncFolder(imageFolder) }
        guard journalWritten else { return }
        if let file = journal.withLock({ $0.file }) { try? file.sync() }
        DurableFile.syncFolder(folder)
    }
}
