import FoundationEssentials
import PropertyList
import TodayProtocol

/// What todayd remembers about a widget across restarts (SPEC section 4):
/// its has-content flag, last result and schedule under
/// `$XDG_STATE_HOME/todayd/widgets/<id>.plist`, its last snapshot under
/// `$XDG_CACHE_HOME/todayd/snapshots/<id>.plist`. Both XML plists, both
/// written durably.
public struct WidgetRecord: Sendable, Equatable {
    public var hasContent = true
    /// Nil until the first update.
    public var lastResult: UpdateResult?
    /// Nil unless the last update failed.
    public var lastFailure: FailureReason?
    /// Microseconds since the epoch; 0: never.
    public var lastUpdated: UInt64 = 0
    public var schedule = Schedule()

    public init() {}

    var plist: PlistValue {
        var d = PlistDictionary()
        d["HasContent"] = .boolean(hasContent)
        d["LastResult"] = .string(lastResult?.rawValue ?? "")
        d["LastFailure"] = .string(lastFailure?.description ?? "")
        d["LastUpdated"] = .unsigned(lastUpdated)
        d["BudgetDay"] = .integer(schedule.budgetDay)
        d["BudgetUsed"] = .integer(Int64(schedule.budgetUsed))
        d["ConsecutiveFailures"] = .integer(Int64(schedule.consecutiveFailures))
        if let next = schedule.next { d["NextScheduledUpdate"] = .date(next) }
        return .dictionary(d)
    }

    init(plist: PlistValue) {
        hasContent = plist["HasContent"]?.bool ?? true
        lastResult = plist["LastResult"]?.string.flatMap(UpdateResult.init(rawValue:))
        lastFailure = plist["LastFailure"]?.string.flatMap { $0.isEmpty ? nil : FailureReason($0) }
        lastUpdated = plist["LastUpdated"]?.uint64 ?? 0
        schedule.budgetDay = plist["BudgetDay"]?.int64 ?? 0
        schedule.budgetUsed = UInt32(clamping: plist["BudgetUsed"]?.int64 ?? 0)
        schedule.consecutiveFailures = UInt32(clamping: plist["ConsecutiveFailures"]?.int64 ?? 0)
        schedule.next = plist["NextScheduledUpdate"]?.date
    }
}

public struct WidgetStore: Sendable {
    public let stateFolder: String
    public let snapshotFolder: String

    public init(directories: Directories) {
        stateFolder = directories.stateHome + "/todayd/widgets"
        snapshotFolder = directories.cacheHome + "/todayd/snapshots"
    }

    /// A kind's default instance keeps the files a widget had before
    /// instances (`<kind>.plist`); an added one has `<kind>/<n>.plist`.
    func statePath(_ id: WidgetInstanceID) -> String { stateFolder + "/" + Self.fileName(id) }
    func snapshotPath(_ id: WidgetInstanceID) -> String { snapshotFolder + "/" + Self.fileName(id) }

    static func fileName(_ id: WidgetInstanceID) -> String {
        id.isDefault ? id.kind.rawValue + ".plist" : id.kind.rawValue + "/" + String(id.number) + ".plist"
    }

    /// Forgets an added instance's files (it was removed from the layout).
    func remove(_ id: WidgetInstanceID) {
        guard !id.isDefault else { return }
        try? DurableFile.remove(statePath(id))
        try? DurableFile.remove(snapshotPath(id))
    }

    /// The stored record, or a fresh one; `problem` hears about a file that
    /// does not parse (it is then left for a person to look at and replaced
    /// on the next write).
    public func record(_ id: WidgetInstanceID, problem: (String) -> Void) -> WidgetRecord {
        let path = statePath(id)
        guard FileManager.default.fileExists(atPath: path) else { return WidgetRecord() }
        do {
            return WidgetRecord(plist: try Plist.read(contentsOf: path))
        } catch {
            problem("\(path): \(error); starting from a fresh state")
            return WidgetRecord()
        }
    }

    /// The stored timeline at `now` (the entry whose date has come shown,
    /// older ones dropped); a cache of an earlier todayd, which held the
    /// snapshot alone, is that snapshot shown since `shownSince`.
    public func timeline(_ id: WidgetInstanceID, shownSince: Date, at now: Date, problem: (String) -> Void) -> Timeline {
        let path = snapshotPath(id)
        guard FileManager.default.fileExists(atPath: path) else { return Timeline() }
        do {
            guard let dictionary = try Plist.read(contentsOf: path).dictionary else {
                problem("\(path): not a dictionary; starting without a snapshot")
                return Timeline()
            }
            return Timeline(stored: dictionary, shownSince: shownSince, at: now)
        } catch {
            problem("\(path): \(error); starting without a snapshot")
            return Timeline()
        }
    }

    /// The snapshot shown now, for callers that need no more.
    public func snapshot(_ id: WidgetInstanceID, problem: (String) -> Void) -> PlistDictionary {
        timeline(id, shownSince: Date(), at: Date(), problem: problem).snapshot
    }

    public func save(_ record: WidgetRecord, for id: WidgetInstanceID) throws {
        try DurableFile.write(try Plist.write(record.plist, format: .xml), to: statePath(id))
    }

    /// Writes the timeline and its policy, in one file.
    public func save(timeline: Timeline, for id: WidgetInstanceID) throws {
        try DurableFile.write(try Plist.write(timeline.plist, format: .xml), to: snapshotPath(id))
    }
}
