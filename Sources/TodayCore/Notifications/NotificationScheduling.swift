import DBus
import FoundationEssentials
import TodayProtocol

/// Apps notify the iOS way (SPEC section 18): the Notifications interface's
/// Schedule, PendingRequests, RemovePending, RemoveDelivered and
/// SetCategories for callers with a bundle identity, the delivery of what
/// comes due, and the responses that go back to the app.
extension NotificationService {
    /// The app the caller is (a widget counts as its container app), or
    /// NotRegistered naming `member`.
    func callerApp(_ call: MethodCall, for member: String) async throws -> String {
        guard let bundle = try await identities.caller(of: call).bundleID else { throw TodayError.notRegistered(member) }
        return appOf(bundle)
    }

    /// Changes `appID`'s requests or categories with `change`, and keeps the
    /// app's file before returning; where it cannot be kept, the change is
    /// undone and the caller hears why.
    func changeSchedule<Result>(
        of appID: String, _ change: (inout NotificationSchedule) throws(NotificationSchedule.Refusal) -> Result
    ) throws -> Result {
        let outcome: Swift.Result<(Result, NotificationSchedule.App, NotificationSchedule.App?, UInt64), NotificationSchedule.Refusal> =
            schedule.withLock { state in
                let before = state.book.apps[appID]
                do throws(NotificationSchedule.Refusal) {
                    let result = try change(&state.book)
                    state.change += 1
                    return .success((result, state.book.apps[appID] ?? .init(), before, state.change))
                } catch {
                    return .failure(error)
                }
            }
        switch outcome {
        case .failure(.invalid(let problem)):
            throw TodayError.invalidArgs(problem.description)
        case .failure(.full(let app, let limit)):
            throw DBusError(.limitsExceeded, "'\(app)' has \(limit) pending requests; remove some (RemovePending) before scheduling more")
        case .success(let (result, app, before, change)):
            do {
                try scheduleStore.save(app, of: appID, change: change)
            } catch {
                schedule.withLock { state in
                    if state.change == change { state.book.restore(before, of: appID) }
                }
                throw TodayError.storage("cannot keep the scheduled notifications of '\(appID)' in \(scheduleStore.folder): \(error)")
            }
            return result
        }
    }

    /// Schedule: kept (durably) before the answer; a trigger of now, or
    /// a time already past, is delivered at once.
    func schedule(_ id: String, content: ScheduledContent, trigger: ScheduledTrigger, for appID: String) throws {
        let now = clock.now
        let request = try changeSchedule(of: appID) { schedule throws(NotificationSchedule.Refusal) in
            try schedule.schedule(id, content: content, trigger: trigger, for: appID, at: now)
        }
        guard let request else {
            let delivery = NotificationSchedule.Delivery(appID: appID, request: .init(id: id, content: content, trigger: .now, next: now), at: now)
            try deliver(delivery)
            return
        }
        scheduleTimer.withLock { $0 }?.poke(ifBefore: request.next)
    }

    func pendingRequests(of appID: String) -> [VariantDictionary] {
        schedule.withLock { $0.book.pending(for: appID) }.map(\.dictionary)
    }

    func removePending(_ ids: [String], of appID: String) throws {
        try changeSchedule(of: appID) { schedule in _ = schedule.removePending(ids, for: appID) }
    }

    func setCategories(_ categories: [ScheduledCategory], of appID: String) throws {
        try changeSchedule(of: appID) { schedule in schedule.setCategories(categories, for: appID) }
    }

    /// RemoveDelivered: the app's delivered notifications of those request
    /// ids leave the list, as the app recalling them (reason 3).
    func removeDelivered(_ ids: [String], of appID: String) throws {
        try change { book in
            book.delivered(Set(ids), of: appID).flatMap { book.recall($0) }
        }
    }

    /// Delivers what is due; returns how many seconds until the next
    /// request is (an hour at most).
    func deliverDue() -> Double {
        let now = clock.now
        let (deliveries, saves, change) = schedule.withLock { state in
            let (deliveries, changed) = state.book.due(at: now)
            state.change += 1
            return (deliveries, changed.map { ($0, state.book.apps[$0] ?? .init()) }, state.change)
        }
        for delivery in deliveries {
            do {
                try deliver(delivery)
            } catch {
                log.warning("scheduled notification '\(delivery.request.id)' of '\(delivery.appID)': \(error)")
            }
        }
        for (appID, app) in saves {
            do {
                try scheduleStore.save(app, of: appID, change: change)
            } catch {
                log.warning("cannot keep the scheduled notifications of '\(appID)': \(error)")
            }
        }
        let next = schedule.withLock { $0.book.nextDue }
        return min(max(next.map { $0.timeIntervalSince(clock.now) } ?? 3600, 0), 3600)
    }

    /// Posts a request's content as its app's notification, unless it was
    /// delivered for that time already (todayd was killed before it wrote
    /// the request's next date).
    func deliver(_ delivery: NotificationSchedule.Delivery) throws {
        let posting = posting(for: delivery)
        guard !book.withLock({ $0.hasDelivered(delivery.request.id, of: delivery.appID, for: delivery.at) }) else { return }
        var kept = posting
        if let png = delivery.request.content.image {
            do {
                kept.notification.imageFile = try store.keepImage(png)
            } catch {
                log.warning("scheduled notification '\(delivery.request.id)': cannot keep its picture: \(error)")
            }
        }
        announce(try post(kept))
    }

    /// The notification a request's content becomes: its category's
    /// actions as buttons (a text-input action as the reply field), its
    /// interruption level as urgency and banner rule, the content's URL,
    /// user-info and the time it is delivered for kept as hints.
    func posting(for delivery: NotificationSchedule.Delivery) -> NotificationBook.Posting {
        let content = delivery.request.content
        let appID = delivery.appID
        let category = content.category.isEmpty ? nil : schedule.withLock { $0.book.category(content.category, of: appID) }
        var hints: [(String, Value)] = [(NotificationBook.deliveredForHint, .uint64(ValueMapping.microseconds(delivery.at)))]
        var actions: [TodayNotification.Action] = []
        for action in category?.actions ?? [] {
            if action.textInput {
                actions.append(.init(key: "inline-reply", label: action.title))
                hints.append((NotificationBook.textInputHint, .string(action.id)))
                if !action.placeholder.isEmpty { hints.append(("placeholder", .string(action.placeholder))) }
            } else {
                actions.append(.init(key: action.id, label: action.title))
            }
        }
        if let url = content.url { hints.append((NotificationBook.urlHint, .string(url))) }
        if !content.userInfo.entries.isEmpty { hints.append((NotificationBook.userInfoHint, content.userInfo.value)) }
        if !content.threadID.isEmpty { hints.append(("thread-id", .string(content.threadID))) }
        if !content.subtitle.isEmpty { hints.append(("subtitle", .string(content.subtitle))) }
        hints.append(("interruption-level", .string(content.interruptionLevel.rawValue)))
        // The content is text: escaped, as markup of its own; a subtitle
        // is the body's first line, in bold.
        var body = NotificationMarkup.escape(Self.cut(content.body, to: Self.longestBody))
        if !content.subtitle.isEmpty { body = "<b>\(NotificationMarkup.escape(Self.cut(content.subtitle, to: Self.longestSummary)))</b>\n" + body }
        let urgency: TodayNotification.Urgency =
            switch content.interruptionLevel {
            case .passive: .low
            case .active, .timeSensitive: .normal
            case .critical: .critical
            }
        var notification = TodayNotification(
            id: 0, appID: appID, appName: urls.appName(appID) ?? appID.split(separator: ".").last.map(String.init) ?? appID,
            summary: Self.cut(content.title, to: Self.longestSummary), body: NotificationMarkup.reduce(body), actions: actions, urgency: urgency,
            category: content.category, time: delivery.at, source: .todaykit)
        notification.appNotificationID = delivery.request.id
        notification.appIcon = iconOf(appID) ?? ""
        notification.hints = VariantDictionary(hints)
        let banner: NotificationBook.BannerRule =
            switch content.interruptionLevel {
            case .passive: .never
            case .timeSensitive: .throughDoNotDisturb
            case .active, .critical: .usual
            }
        return NotificationBook.Posting(notification: notification, replaces: 0, expireTimeout: -1, banner: banner, sound: sound(content.sound, of: appID))
    }

    /// The sound of a request's content: the theme's message sound for
    /// `default` (its warning sound for `default-critical`), else the
    /// app's file of that name in its container's `Library/Sounds/`, then
    /// in its bundle, as iOS looks for it; the default sound where neither
    /// has it.
    func sound(_ name: String, of appID: String) -> NotificationSound? {
        switch name {
        case "": return nil
        case ScheduledContent.defaultSound: return .name(Self.messageSound)
        case ScheduledContent.defaultCriticalSound: return .name(Self.criticalSound)
        default:
            let folders = [directories.container(of: appID) + "/Library/Sounds"] + (urls.appFolder(appID).map { [$0] } ?? [])
            guard let file = folders.lazy.map({ $0 + "/" + name }).first(where: FileSystem.isRegularFile) else {
                log.debug("scheduled notification of '\(appID)': no sound file '\(name)' in \(folders.joined(separator: " or ")); the default sound plays")
                return .name(Self.messageSound)
            }
            return .file(file)
        }
    }

    /// The sound-theme names of the default sounds (the XDG Sound Naming Specification's).
    static let messageSound = "message-new-instant"
    static let criticalSound = "dialog-warning"

    /// Hands the user's answer to the app (ActivateAction
    /// "notification-response"), starting it where it is not running. In
    /// the background: nobody waits for the app.
    func respond(_ appID: String, _ response: NotificationResponse, token: String?) {
        let urls = urls
        let log = log
        Task {
            do {
                try await urls.activateAction(
                    appID, NotificationResponse.actionName, parameter: response.dictionary.value,
                    platformData: VariantDictionary(token.map { [("activation-token", .string($0))] } ?? []))
            } catch {
                log.warning("the response to '\(response.requestID)' did not reach '\(appID)': \(error)")
            }
        }
    }

    /// InvokeAction, Reply and Dismiss answer for the app whose
    /// notification it is: the user's tools (no bundle identity) may, and
    /// the app itself; another app may not (NotEntitled).
    func checkAnswerer(_ call: MethodCall, of id: UInt32) async throws {
        guard let notification = book.withLock({ $0.byID[id] }), notification.source == .todaykit else { return }
        guard let bundle = try await identities.caller(of: call).bundleID else { return }
        guard appOf(bundle) == notification.appID else {
            throw TodayError.notEntitled("'\(bundle)' may not answer for '\(notification.appID)': only the user and that app may")
        }
    }
}
