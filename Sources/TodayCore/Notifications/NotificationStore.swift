import FoundationEssentials
import Glibc
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The notification list on disk (SPEC section 14):
/// `$XDG_STATE_HOME/todayd/notifications/<id>.plist`, one binary property
/// list a notification, and `last-id`. A notification's file is in place
/// (written to a temporary file and renamed over the old one) before its
/// Notify is answered, so that killing todayd loses nothing it
/// acknowledged; what was written is flushed to the disk within a second,
/// together, so that a flood costs one fsync a second rather than one a
/// notification.
final class NotificationStore: Sendable {
    let folder: String
    private let log: Logger
    private let pending = Mutex<(names: Set<String>, flush: Task<Void, Never>?)>(([], nil))

    init(directories: Directories, log: Logger) {
        folder = directories.stateHome + "/todayd/notifications"
        self.log = log
    }

    /// The notifications kept, and the last id given.
    func load() -> (lastID: UInt32, notifications: [TodayNotification]) {
        var lastID: UInt32 = 0
        if let text = try? String(contentsOfFile: folder + "/last-id", encoding: .utf8) {
            lastID = UInt32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        var kept: [TodayNotification] = []
        for name in FileSystem.entries(folder) where name.hasSuffix(".plist") && !name.hasPrefix(".") {
            let path = folder + "/" + name
            guard let read = (try? Plist.read(contentsOf: path))?.dictionary, let notification = TodayNotification(stored: read) else {
                log.warning("\(path) is not a notification todayd wrote; it is left out (remove it)")
                continue
            }
            kept.append(notification)
        }
        return (lastID, kept)
    }

    /// Puts `notification` in place; throws where it cannot be kept.
    func save(_ notification: TodayNotification) throws {
        try write(try Plist.write(.dictionary(notification.stored), format: .binary), named: "\(notification.id).plist")
    }

    /// Keeps `id` as the last id given.
    func saveLastID(_ id: UInt32) throws {
        try write(Data("\(id)\n".utf8), named: "last-id")
    }

    /// Removes notification `id`'s file.
    func forget(_ id: UInt32) {
        do {
            try Files.unlink(folder + "/\(id).plist")
        } catch Errno.noSuchFile {
        } catch {
            log.warning("cannot remove \(folder)/\(id).plist: \(error)")
        }
        syncSoon("")
    }

    private func write(_ data: Data, named name: String) throws {
        try DurableFile.write(data, to: folder + "/" + name, sync: false)
        syncSoon(name)
    }

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
        for name in names where !name.isEmpty {
            try? FileDescriptor.open(folder + "/" + name, O_RDONLY).sync()
        }
        if !names.isEmpty { DurableFile.syncFolder(folder) }
    }
}
