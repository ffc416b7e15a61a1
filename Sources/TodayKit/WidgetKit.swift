import Foundation
import PropertyList
import TodayProtocol

// WidgetKit's timeline API, so that a WidgetKit widget ports nearly line by
// line: a TimelineProvider returns dated entries and a reload policy, and
// each entry gives its Snapshot (where WidgetKit would render a SwiftUI
// view). todayd shows each entry when its date comes (SPEC section 9).

/// TimelineEntryRelevance: how relevant an entry is, for panels that order
/// widgets by it. todayd publishes the score as the widget's `Relevance`.
public struct TimelineEntryRelevance: Sendable, Equatable {
    public var score: Float
    /// How long the score holds, in seconds from the entry's date; 0: until
    /// the next entry.
    public var duration: TimeInterval

    public init(score: Float, duration: TimeInterval = 0) {
        self.score = score
        self.duration = duration
    }
}

/// TimelineEntry: one dated state of the widget.
public protocol TimelineEntry: Sendable {
    /// When todayd starts showing this entry.
    var date: Date { get }
    var relevance: TimelineEntryRelevance? { get }
    /// What the widget shows from `date` on.
    var snapshot: Snapshot { get }
}

extension TimelineEntry {
    public var relevance: TimelineEntryRelevance? { nil }
}

/// TimelineReloadPolicy: when todayd should ask for the next timeline.
public struct TimelineReloadPolicy: Sendable, Equatable {
    enum Kind: Equatable {
        case atEnd, never
        case after(Date)
    }

    let kind: Kind

    /// Once the last entry's date has come.
    public static let atEnd = TimelineReloadPolicy(kind: .atEnd)
    /// Only when asked (WidgetCenter, a tap on refresh).
    public static let never = TimelineReloadPolicy(kind: .never)
    /// At `date`.
    public static func after(_ date: Date) -> TimelineReloadPolicy { TimelineReloadPolicy(kind: .after(date)) }

    /// The answer's `policy` (SPEC section 9).
    var plist: PlistValue {
        switch kind {
        case .atEnd: .string("at-end")
        case .never: .string("never")
        case .after(let date): .dictionary(["after": .date(date)])
        }
    }
}

/// Timeline: the entries (1 to 100) and the policy.
public struct Timeline<EntryType: TimelineEntry>: Sendable {
    public var entries: [EntryType]
    public var policy: TimelineReloadPolicy

    public init(entries: [EntryType], policy: TimelineReloadPolicy) {
        self.entries = entries
        self.policy = policy
    }

    /// The provider's answer to todayd: `new-data` with the timeline.
    var answer: PlistDictionary {
        let list: [PlistValue] = entries.map { entry in
            var item: PlistDictionary = ["date": .date(entry.date), "snapshot": .dictionary(entry.snapshot.dictionary)]
            if let relevance = entry.relevance { item["relevance"] = .real(Double(relevance.score)) }
            return .dictionary(item)
        }
        return ["result": .string(UpdateResult.newData.rawValue), "timeline": .array(list), "policy": policy.plist]
    }
}

/// TimelineProviderContext: what todayd tells a provider about the run.
public struct TimelineProviderContext: Sendable {
    /// True for a placeholder or preview, which must answer at once.
    public var isPreview: Bool
    /// The size of the instance served.
    public var family: WidgetFamily = .medium

    public init(isPreview: Bool = false) { self.isPreview = isPreview }
}

/// TimelineProvider: a widget's provider in WidgetKit's terms. todayd runs
/// the widget's executable with `perform-update`; `main()` asks
/// `getTimeline(in:completion:)` and answers with its entries and policy.
///
///     @main struct Departures: TimelineProvider {
///         func placeholder(in context: Context) -> Entry { Entry(date: Date(), line: "—") }
///         func getSnapshot(in context: Context, completion: @escaping (Entry) -> Void) { completion(placeholder(in: context)) }
///         func getTimeline(in context: Context, completion: @escaping (Timeline<Entry>) -> Void) {
///             completion(Timeline(entries: upcoming(), policy: .atEnd))
///         }
///     }
public protocol TimelineProvider {
    associatedtype Entry: TimelineEntry
    typealias Context = TimelineProviderContext

    init()
    /// An entry to show before any content exists.
    func placeholder(in context: Context) -> Entry
    /// The entry to show now, quickly.
    func getSnapshot(in context: Context, completion: @escaping @Sendable (Entry) -> Void)
    /// The entries from now on and when to ask again.
    func getTimeline(in context: Context, completion: @escaping @Sendable (Timeline<Entry>) -> Void)
    /// The intents the entries' buttons and toggles run: `perform-action
    /// ID` performs the one with that id, then the timeline is the answer.
    static var intents: [any WidgetIntent.Type] { get }
    /// Runs when the executable is started with other arguments.
    func run(arguments: [String]) async -> Int32
}

extension TimelineProvider {
    public static var intents: [any WidgetIntent.Type] { [] }

    /// The async form of `getSnapshot(in:completion:)`.
    public func snapshot(in context: Context) async -> Entry {
        await withCheckedContinuation { continuation in getSnapshot(in: context) { continuation.resume(returning: $0) } }
    }

    /// The async form of `getTimeline(in:completion:)`.
    public func timeline(in context: Context) async -> Timeline<Entry> {
        await withCheckedContinuation { continuation in getTimeline(in: context) { continuation.resume(returning: $0) } }
    }

    public func run(arguments: [String]) async -> Int32 {
        FileHandle.standardError.write(Data("usage: \(CommandLine.arguments.first ?? "widget") perform-update (todayd runs this)\n".utf8))
        return 2
    }

    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "perform-action", !intents.isEmpty {
            _ = FileHandle.standardInput.readDataToEndOfFile()
            if let problem = await performIntent(arguments, among: intents) { exit(answerFailed(problem)) }
        } else {
            guard arguments == ["perform-update"] else { exit(await Self().run(arguments: arguments)) }
            _ = FileHandle.standardInput.readDataToEndOfFile()
        }
        let timeline = await Self().timeline(in: Context.current())
        var answer = timeline.answer
        if timeline.entries.isEmpty {
            // No entries is not a timeline: keep what is shown.
            answer = ["result": .string(UpdateResult.noData.rawValue)]
        }
        exit(writeAnswer(answer))
    }
}

/// WidgetCenter: an app (or its widget) asks todayd for fresh timelines.
///
///     WidgetCenter.shared.reloadTimelines(ofKind: "org.example.Departures.Widget")
public final class WidgetCenter: Sendable {
    public static let shared = WidgetCenter()

    /// Updates the widget whose bundle id is `kind` now. Only the widget
    /// or its container app may ask; the reason is on standard error when
    /// todayd refused.
    public func reloadTimelines(ofKind kind: String) {
        do {
            try TodayBus.shared.center(Today.Center.reloadTimelines, try TodayBus.bundleID(kind))
        } catch {
            report("reloadTimelines(ofKind: \(kind))", error)
        }
    }

    /// `reloadTimelines(ofKind:)` without waiting: the request is sent and
    /// this returns; `completion` gets todayd's answer (nil, or why it
    /// refused) on another thread. For providers on the bus, which ask on
    /// every change of what they follow and must not hold their
    /// connection's thread.
    public func reloadTimelines(ofKind kind: String, completion: @escaping @Sendable ((any Error)?) -> Void) {
        reloadTimelines(ofKind: kind, again: true, completion: completion)
    }

    private func reloadTimelines(ofKind kind: String, again: Bool, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let send: @Sendable () -> Void = {
            do {
                let id = try TodayBus.bundleID(kind)
                let method = Today.Center.reloadTimelines
                try TodayBus.shared.registeredConnection().call(
                    Today.busName, path: Today.managerPath, interface: Today.center.name, member: method.method.name, method.values(id)
                ) { result in
                    guard case .failure(let error) = result else { return completion(nil) }
                    // todayd restarted since this process registered: once more, registering first.
                    if again, TodayBus.shared.forgetRegistration(after: error) {
                        return self.reloadTimelines(ofKind: kind, again: false, completion: completion)
                    }
                    report("reloadTimelines(ofKind: \(kind))", error)
                    completion(error)
                }
            } catch {
                report("reloadTimelines(ofKind: \(kind))", error)
                completion(error)
            }
        }
        // Registering waits for todayd's answer: never on a bus thread.
        if TodayBus.shared.isRegistered { send() } else { Thread.detachNewThread(send) }
    }

    /// Updates every widget of the calling app.
    public func reloadAllTimelines() {
        do {
            try TodayBus.shared.center(Today.Center.reloadAllTimelines)
        } catch {
            report("reloadAllTimelines()", error)
        }
    }
}
