import FoundationEssentials
import PropertyList
import TodayProtocol

/// What a timeline asks for after its entries (SPEC section 9).
public enum ReloadPolicy: Sendable, Equatable {
    /// Every UpdateInterval, as without a timeline.
    case interval
    /// At the last entry's date.
    case atEnd
    /// At this date.
    case after(Date)
    /// Only on request.
    case never

    /// The `ReloadPolicy` property's value.
    public var name: String {
        switch self {
        case .interval: "interval"
        case .atEnd: "at-end"
        case .after: "after"
        case .never: "never"
        }
    }
}

/// A widget's dated entries (SPEC section 9): the one shown now and those
/// still to come, with the policy of the answer that brought them. Plain
/// value code; the time comes in as an argument.
public struct Timeline: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var date: Date
        public var relevance: Double
        private var content: Content

        /// An entry still to come keeps its snapshot encoded until its date
        /// comes: the snapshots of a timeline's upcoming entries are one
        /// binary property list, an array whose keys and repeated strings
        /// are stored once, and an entry holds its place in it. A thousand
        /// widgets of a hundred entries each hold mostly entries nobody
        /// reads yet.
        private enum Content: Sendable {
            case values(PlistDictionary)
            case encoded(EncodedSnapshots, index: Int)
        }

        /// The encoded snapshots one timeline's entries share.
        final class EncodedSnapshots: Sendable {
            let data: Data
            init(_ data: Data) { self.data = data }
        }

        public init(date: Date, snapshot: PlistDictionary, relevance: Double = 0) {
            self.date = date
            self.relevance = relevance
            content = .values(snapshot)
        }

        public var snapshot: PlistDictionary {
            get {
                switch content {
                case .values(let snapshot): snapshot
                // Encoded here from values, so it reads back; an empty
                // snapshot is the answer to the impossible.
                case .encoded(let snapshots, let index): (try? Plist.readElement(index, ofBinaryArray: snapshots.data).dictionary) ?? [:]
                }
            }
            set { content = .values(newValue) }
        }

        /// `entries` with the snapshots they hold as values encoded
        /// together; where they cannot be encoded, they stay as they are.
        static func encoded(_ entries: [Entry]) -> [Entry] {
            var snapshots: [PlistValue] = []
            snapshots.reserveCapacity(entries.count)
            for entry in entries {
                if case .values(let snapshot) = entry.content { snapshots.append(.dictionary(snapshot)) }
            }
            guard !snapshots.isEmpty, let data = try? Plist.write(.array(snapshots), format: .binary) else { return entries }
            // A buffer of exactly its size, not one that grew while written.
            let shared = EncodedSnapshots(data.withUnsafeBytes { Data($0) })
            var index = 0
            return entries.map { entry in
                guard case .values = entry.content else { return entry }
                var compact = entry
                compact.content = .encoded(shared, index: index)
                index += 1
                return compact
            }
        }

        /// This entry with its snapshot as values, to be shown.
        func decoded() -> Entry {
            guard case .encoded = content else { return self }
            var entry = self
            entry.content = .values(snapshot)
            return entry
        }

        public static func == (a: Entry, b: Entry) -> Bool {
            guard a.date == b.date, a.relevance == b.relevance else { return false }
            if case .encoded(let x, let i) = a.content, case .encoded(let y, let j) = b.content, x === y, i == j { return true }
            return a.snapshot == b.snapshot
        }
    }

    /// The entry `Snapshot` shows; nil before the first whose date came.
    public var current: Entry?
    /// Entries after `current`, by date.
    public var upcoming: [Entry]
    public var policy: ReloadPolicy

    public init(current: Entry? = nil, upcoming: [Entry] = [], policy: ReloadPolicy = .interval) {
        self.current = current?.decoded()
        self.upcoming = Entry.encoded(upcoming)
        self.policy = policy
    }

    public static let maximumEntries = 100

    public var snapshot: PlistDictionary { current?.snapshot ?? [:] }
    public var nextDate: Date? { upcoming.first?.date }
    public var lastDate: Date? { upcoming.last?.date ?? current?.date }
    /// The current entry and those after it.
    public var entries: [Entry] { (current.map { [$0] } ?? []) + upcoming }

    /// Moves to the last entry whose date has come, dropping those before
    /// it; true when the entry shown changed.
    @discardableResult
    public mutating func advance(to now: Date) -> Bool {
        guard let index = upcoming.lastIndex(where: { $0.date <= now }) else { return false }
        current = upcoming[index].decoded()
        upcoming.removeFirst(index + 1)
        return true
    }

    /// The timeline after a provider's new answer at `now`: its entries
    /// replace the upcoming ones; where every entry is still to come, the
    /// entry shown now stays until the first one's date.
    /// The same content again (a snapshot alone, equal to the one shown,
    /// nothing to come, the same policy) changes nothing, not even the
    /// date of the entry shown.
    public func replaced(by answer: TimelineAnswer, at now: Date) -> Timeline {
        if answer.dated.count == 1, answer.dated[0].date == nil, upcoming.isEmpty, answer.policy == policy,
            let current, current.snapshot == answer.dated[0].snapshot, current.relevance == answer.dated[0].relevance
        {
            return self
        }
        var next = Timeline(current: current, upcoming: answer.entries(at: now), policy: answer.policy)
        next.advance(to: now)
        return next
    }
}

/// A provider's `new-data` answer: entries (a `snapshot` alone is one
/// entry dated when it arrives) and a reload policy.
public struct TimelineAnswer: Sendable, Equatable {
    /// Entries by date, one per date (the later one in the answer won);
    /// a nil date is the time the answer is recorded.
    public var dated: [(date: Date?, snapshot: PlistDictionary, relevance: Double)]
    public var policy: ReloadPolicy

    public init(snapshot: PlistDictionary) {
        dated = [(nil, snapshot, 0)]
        policy = .interval
    }

    init(dated: [(date: Date?, snapshot: PlistDictionary, relevance: Double)], policy: ReloadPolicy) {
        self.dated = dated
        self.policy = policy
    }

    /// The answer as a provider could have written it: `snapshot` for a
    /// snapshot alone, else `timeline` and `policy`.
    public var plist: PlistDictionary {
        var result: PlistDictionary = [:]
        if dated.count == 1, dated[0].date == nil {
            result["snapshot"] = .dictionary(dated[0].snapshot)
        } else {
            result["timeline"] = .array(
                dated.map { entry in
                    var value: PlistDictionary = ["snapshot": .dictionary(entry.snapshot), "relevance": .real(entry.relevance)]
                    if let date = entry.date { value["date"] = .date(date) }
                    return .dictionary(value)
                })
        }
        if case .after(let date) = policy {
            result["policy"] = .dictionary(["after": .date(date)])
        } else if policy != .interval || result["timeline"] != nil {
            result["policy"] = .string(policy.name)
        }
        return result
    }

    func entries(at now: Date) -> [Timeline.Entry] {
        dated.map { Timeline.Entry(date: $0.date ?? now, snapshot: $0.snapshot, relevance: $0.relevance) }
    }

    public static func == (a: TimelineAnswer, b: TimelineAnswer) -> Bool {
        a.policy == b.policy && a.dated.count == b.dated.count
            && zip(a.dated, b.dated).allSatisfy { $0.date == $1.date && $0.snapshot == $1.snapshot && $0.relevance == $1.relevance }
    }

    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads `timeline` and `policy` of an answer (SPEC section 9): 1 to
    /// 100 entries `{date, snapshot, relevance?}`, dates as plist dates, or
    /// (from JSON) ISO 8601 strings or seconds since the epoch; the policy
    /// `at-end`, `never`, `interval` or `{after: <date>}`. Entries are
    /// sorted by date, and of two with the same date the later one in the
    /// answer wins. Every snapshot follows `Snapshot`'s rules.
    public static func parse(timeline: PlistValue, policy: PlistValue?) throws -> TimelineAnswer {
        guard let list = timeline.array else { throw Problem(description: "'timeline' must be an array, not \(timeline.typeName)") }
        guard (1...Timeline.maximumEntries).contains(list.count) else {
            throw Problem(description: "'timeline' has \(list.count) entries; it must have 1 to \(Timeline.maximumEntries)")
        }
        var entries: [(index: Int, date: Date, snapshot: PlistDictionary, relevance: Double)] = []
        for (index, value) in list.enumerated() {
            let at = "timeline[\(index)]"
            guard let entry = value.dictionary else { throw Problem(description: "\(at) must be a dictionary, not \(value.typeName)") }
            guard let dateValue = entry["date"] else { throw Problem(description: "\(at) has no 'date'") }
            let date = try Self.date(dateValue, at: "\(at).date")
            guard let snapshot = entry["snapshot"]?.dictionary else { throw Problem(description: "\(at) needs a 'snapshot' dictionary") }
            if let problem = Snapshot.problem(in: snapshot) { throw Problem(description: "\(at): \(problem)") }
            let stored: PlistDictionary
            do {
                stored = try SnapshotRules.stored(snapshot)
            } catch {
                throw Problem(description: "\(at): \(error)")
            }
            var relevance = 0.0
            if let value = entry["relevance"] {
                guard let number = value.double, number.isFinite else {
                    throw Problem(description: "\(at).relevance must be a finite number, not \(value.typeName)")
                }
                relevance = number
            }
            entries.append((index, date, stored, relevance))
        }
        entries.sort { ($0.date, $0.index) < ($1.date, $1.index) }
        var unique: [(date: Date?, snapshot: PlistDictionary, relevance: Double)] = []
        for entry in entries {
            if let last = unique.last, last.date == entry.date { unique.removeLast() }
            unique.append((entry.date, entry.snapshot, entry.relevance))
        }
        return TimelineAnswer(dated: unique, policy: try policy.map { try Self.policy($0) } ?? .interval)
    }

    static func policy(_ value: PlistValue) throws -> ReloadPolicy {
        switch value {
        case .string("at-end"): return .atEnd
        case .string("never"): return .never
        case .string("interval"): return .interval
        case .dictionary(let dictionary):
            guard dictionary.count == 1, let after = dictionary["after"] else {
                throw Problem(description: "'policy' as a dictionary must be {after: <date>}")
            }
            return .after(try date(after, at: "policy.after"))
        default:
            throw Problem(description: "'policy' must be at-end, never, interval or {after: <date>}, not \(value.typeName == "string" ? "'\(value.string ?? "")'" : value.typeName)")
        }
    }

    /// A date as a plist date, an ISO 8601 string or seconds since the
    /// epoch: whole seconds (rounded down), from 1970 to 9999.
    static func date(_ value: PlistValue, at path: String) throws -> Date {
        let seconds: Double
        switch value {
        case .date(let date): seconds = date.timeIntervalSince1970
        case .integer(let integer): seconds = Double(integer)
        case .real(let real): seconds = real
        case .string(let text):
            guard let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) else {
                throw Problem(description: "\(path) '\(text.prefix(64))' is not an ISO 8601 date such as 2026-12-01T09:30:00Z")
            }
            seconds = date.timeIntervalSince1970
        default:
            throw Problem(description: "\(path) must be a date, not \(value.typeName)")
        }
        let date = Date(timeIntervalSince1970: seconds.rounded(.down))
        guard seconds.isFinite, seconds >= 0, Plist.isStorable(date) else {
            throw Problem(description: "\(path) must lie between 1970 and 9999")
        }
        return date
    }
}

extension Timeline {
    /// The stored form (SPEC section 4): the entries from the current one
    /// on, and the policy, in one dictionary, written as one file.
    static let storedKey = "TodaydTimeline"

    var plist: PlistValue {
        var policyValue: PlistDictionary = ["kind": .string(policy.name)]
        if case .after(let date) = policy { policyValue["after"] = .date(date) }
        return .dictionary([
            Self.storedKey: .array(
                entries.map { .dictionary(["date": .date($0.date), "snapshot": .dictionary($0.snapshot), "relevance": .real($0.relevance)]) }),
            "policy": .dictionary(policyValue),
        ])
    }

    /// The timeline in a stored file, at `now`: the entry whose date has
    /// come, older ones dropped. A file of an earlier todayd, which held
    /// the snapshot alone, is a timeline of that one entry, shown since
    /// `shownSince`.
    init(stored dictionary: PlistDictionary, shownSince: Date, at now: Date) {
        guard let entries = dictionary[Self.storedKey]?.array else {
            self.init(current: dictionary.isEmpty ? nil : Entry(date: shownSince, snapshot: dictionary))
            return
        }
        let parsed = entries.compactMap { value -> Entry? in
            guard let date = value["date"]?.date, let snapshot = value["snapshot"]?.dictionary else { return nil }
            return Entry(date: date, snapshot: snapshot, relevance: value["relevance"]?.double ?? 0)
        }.sorted { $0.date < $1.date }
        var policy = ReloadPolicy.interval
        switch dictionary["policy"]?["kind"]?.string {
        case "at-end": policy = .atEnd
        case "never": policy = .never
        case "after": policy = dictionary["policy"]?["after"]?.date.map(ReloadPolicy.after) ?? .interval
        default: policy = .interval
        }
        self.init(current: nil, upcoming: parsed, policy: policy)
        advance(to: now)
    }
}
