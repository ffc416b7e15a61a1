import DBus
import FoundationEssentials
import PropertyList
import TodayProtocol

/// The apps' scheduled notifications as value code (SPEC section 18):
/// requests scheduled, replaced and removed, categories set, and time
/// passing in; what to deliver and which app's file to write out. The
/// clock and the local time zone are passed in, so triggers are tested
/// without waiting; `NotificationService` carries the effects out.
struct NotificationSchedule: Sendable {
    /// A request not yet delivered (a repeating one stays, with its next date).
    struct Request: Sendable, Equatable {
        var id: String
        var content: ScheduledContent
        var trigger: ScheduledTrigger
        /// When it is next delivered.
        var next: Date

        /// As PendingRequests gives it.
        var dictionary: VariantDictionary {
            VariantDictionary([
                ("id", .string(id)), ("content", content.dictionary.value), ("trigger", trigger.dictionary.value),
                ("next", .uint64(ValueMapping.microseconds(next))),
            ])
        }
    }

    /// What one app has scheduled, and its categories.
    struct App: Sendable, Equatable {
        var requests: [String: Request] = [:]
        var categories: [String: ScheduledCategory] = [:]

        var isEmpty: Bool { requests.isEmpty && categories.isEmpty }
    }

    /// A request due: deliver its content as `appID`'s notification, for
    /// its time `at` (which tells a delivery apart from the next one).
    struct Delivery: Sendable, Equatable {
        var appID: String
        var request: Request
        var at: Date
    }

    enum Refusal: Error, Equatable {
        case invalid(ScheduleProblem)
        /// The app has as many pending requests as it may.
        case full(appID: String, limit: Int)
    }

    /// Pending requests one app may have.
    static let requestsPerApp = 1_000

    private(set) var apps: [String: App] = [:]
    /// The local time zone calendar triggers follow (unless they name one).
    var zone: TimeZone

    init(apps: [String: App] = [:], zone: TimeZone) {
        self.apps = apps
        self.zone = zone
    }

    /// Schedules (or replaces) `appID`'s request `id` at `now`. Returns the
    /// request as kept, with its first date; nil for a trigger of now,
    /// which is delivered at once and not kept.
    mutating func schedule(_ id: String, content: ScheduledContent, trigger: ScheduledTrigger, for appID: String, at now: Date) throws(Refusal) -> Request? {
        guard !id.isEmpty, id.utf8.count <= 256 else { throw .invalid(ScheduleProblem("a request id is 1 to 256 bytes")) }
        let next: Date
        switch trigger {
        case .now:
            apps[appID]?.requests[id] = nil
            return nil
        case .interval(let seconds, _):
            next = ValueMapping.storable(now.addingTimeInterval(seconds))
        case .calendar(let match, _):
            guard let date = match.nextDate(after: now, in: zone) else {
                throw .invalid(ScheduleProblem("the trigger's date never comes (no such day within 400 years)"))
            }
            next = date
        }
        var app = apps[appID] ?? App()
        guard app.requests[id] != nil || app.requests.count < Self.requestsPerApp else { throw .full(appID: appID, limit: Self.requestsPerApp) }
        let request = Request(id: id, content: content, trigger: trigger, next: next)
        app.requests[id] = request
        apps[appID] = app
        return request
    }

    /// The app's pending requests, soonest first.
    func pending(for appID: String) -> [Request] {
        (apps[appID]?.requests.values).map { $0.sorted { ($0.next, $0.id) < ($1.next, $1.id) } } ?? []
    }

    /// Forgets the app's pending requests of `ids`; whether any was there.
    mutating func removePending(_ ids: [String], for appID: String) -> Bool {
        guard var app = apps[appID] else { return false }
        let before = app.requests.count
        for id in ids { app.requests[id] = nil }
        apps[appID] = app.isEmpty ? nil : app
        return app.requests.count != before
    }

    mutating func setCategories(_ categories: [ScheduledCategory], for appID: String) {
        var app = apps[appID] ?? App()
        app.categories = Dictionary(categories.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        apps[appID] = app.isEmpty ? nil : app
    }

    /// Puts back what `appID` had before a change that could not be kept.
    mutating func restore(_ app: App?, of appID: String) {
        apps[appID] = app
    }

    func category(_ id: String, of appID: String) -> ScheduledCategory? {
        apps[appID]?.categories[id]
    }

    /// When a request is next due.
    var nextDue: Date? {
        apps.values.lazy.flatMap(\.requests.values).map(\.next).min()
    }

    /// Time passes: the requests due at `now`, each delivered once however
    /// many of its times went by (todayd was down, the machine asleep); a
    /// repeating one moves on to its first time after `now`, the others
    /// leave. Returns the deliveries, oldest first, and the apps whose
    /// requests changed.
    mutating func due(at now: Date) -> (deliveries: [Delivery], changed: Set<String>) {
        var deliveries: [Delivery] = []
        var changed: Set<String> = []
        for (appID, app) in apps {
            for (id, request) in app.requests where request.next <= now {
                deliveries.append(Delivery(appID: appID, request: request, at: request.next))
                changed.insert(appID)
                if let next = following(request, at: now) {
                    apps[appID]?.requests[id]?.next = next
                } else {
                    apps[appID]?.requests[id] = nil
                }
            }
            if apps[appID]?.isEmpty == true { apps[appID] = nil }
        }
        deliveries.sort { ($0.at, $0.appID, $0.request.id) < ($1.at, $1.appID, $1.request.id) }
        return (deliveries, changed)
    }

    /// A repeating request's first time after `now`; nil for the others.
    func following(_ request: Request, at now: Date) -> Date? {
        switch request.trigger {
        case .now, .interval(_, repeats: false), .calendar(_, repeats: false):
            return nil
        case .interval(let seconds, repeats: true):
            // Its times keep their rhythm: the next of next + k × interval.
            let missed = max(0, (now.timeIntervalSince(request.next) / seconds).rounded(.down))
            return ValueMapping.storable(request.next.addingTimeInterval((missed + 1) * seconds))
        case .calendar(let match, repeats: true):
            return match.nextDate(after: now, in: zone)
        }
    }

    // MARK: The stored form

    /// One app's requests and categories as its file keeps them.
    static func stored(_ app: App) -> PlistDictionary {
        [
            "requests": .array(
                app.requests.values.sorted { $0.id < $1.id }.compactMap { request in
                    guard let content = try? request.content.dictionary.value.wireBytes(),
                        let trigger = try? request.trigger.dictionary.value.wireBytes()
                    else { return nil }
                    return .dictionary([
                        "id": .string(request.id), "content": .data(content), "trigger": .data(trigger),
                        "next": .unsigned(ValueMapping.microseconds(request.next)),
                    ])
                }),
            "categories": .array(
                app.categories.values.sorted { $0.id < $1.id }.compactMap { category in
                    (try? category.dictionary.value.wireBytes()).map { .data($0) }
                }),
        ]
    }

    /// An app's file as kept; what of it cannot be read is in `problems`.
    static func app(stored plist: PlistDictionary, problems: inout [String]) -> App {
        var app = App()
        for entry in plist["requests"]?.array ?? [] {
            guard let d = entry.dictionary, let id = d["id"]?.string, let micros = d["next"]?.uint64,
                let content = d["content"]?.data.flatMap({ try? Value(wireBytes: $0) }).flatMap(VariantDictionary.init),
                let trigger = d["trigger"]?.data.flatMap({ try? Value(wireBytes: $0) }).flatMap(VariantDictionary.init),
                let readContent = try? ScheduledContent(content), let readTrigger = try? ScheduledTrigger(trigger)
            else {
                problems.append("a request that is not one todayd wrote is left out")
                continue
            }
            app.requests[id] = Request(id: id, content: readContent, trigger: readTrigger, next: Date(timeIntervalSince1970: Double(micros) / 1_000_000))
        }
        for entry in plist["categories"]?.array ?? [] {
            guard let dictionary = entry.data.flatMap({ try? Value(wireBytes: $0) }).flatMap(VariantDictionary.init),
                let category = try? ScheduledCategory(dictionary)
            else {
                problems.append("a category that is not one todayd wrote is left out")
                continue
            }
            app.categories[category.id] = category
        }
        return app
    }
}
