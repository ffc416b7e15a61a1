import FoundationEssentials
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The apps' scheduled notifications on disk (SPEC section 18), under
/// `$XDG_STATE_HOME/todayd/scheduled/`: a binary property list per app,
/// `<app id>.plist`, with its pending requests and its categories, written
/// durably before the call that changed it is answered, and removed when
/// the app has neither left.
///
/// Each app's file is written on its own: a flood of Schedule calls from
/// one app waits for that app's writes, not another's. Writes of one app
/// are numbered as their changes were made, so a slow write never lands
/// over a newer one.
final class ScheduleStore: Sendable {
    let folder: String
    private let log: Logger
    /// Per app: the change last written.
    private let written = Mutex<[String: Written]>([:])

    private final class Written: Sendable {
        let last = Mutex<UInt64>(0)
    }

    init(directories: Directories, log: Logger) {
        folder = directories.stateHome + "/todayd/scheduled"
        self.log = log
    }

    /// Every app's requests and categories as kept.
    func load() -> [String: NotificationSchedule.App] {
        var apps: [String: NotificationSchedule.App] = [:]
        for name in FileSystem.entries(folder) where name.hasSuffix(".plist") && !name.hasPrefix(".") {
            let path = folder + "/" + name
            guard let plist = (try? Plist.read(contentsOf: path))?.dictionary else {
                log.warning("\(path) is not a property list todayd wrote; its requests are left out")
                continue
            }
            var problems: [String] = []
            let app = NotificationSchedule.app(stored: plist, problems: &problems)
            for problem in problems { log.warning("\(path): \(problem)") }
            if !app.isEmpty { apps[String(name.dropLast(".plist".count))] = app }
        }
        return apps
    }

    /// The file of `appID`.
    func path(of appID: String) -> String? {
        guard !appID.isEmpty, !appID.hasPrefix("."), !appID.contains("/"), appID.utf8.count <= 255 - ".plist".count else { return nil }
        return folder + "/" + appID + ".plist"
    }

    /// Writes `app` as `appID`'s file (or removes the file, where it is
    /// empty), unless a newer `change` of the app is already written.
    func save(_ app: NotificationSchedule.App, of appID: String, change: UInt64) throws {
        guard let path = path(of: appID) else { throw TodayError.invalidArgs("'\(appID)' cannot name a file") }
        let lock = written.withLock { files in
            if let lock = files[appID] { return lock }
            let lock = Written()
            files[appID] = lock
            return lock
        }
        try lock.last.withLock { last in
            guard change > last else { return }
            if app.isEmpty {
                if FileSystem.exists(path) { try Files.unlink(path) }
            } else {
                try DurableFile.write(try Plist.write(.dictionary(NotificationSchedule.stored(app)), format: .binary), to: path)
            }
            last = change
        }
    }
}
