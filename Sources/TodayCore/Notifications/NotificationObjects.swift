import DBus
import FoundationEssentials
import TodayProtocol

/// The notification server's objects, each method bound to the service,
/// and what Notify and AddNotification hand over read into a `Posting`.
extension NotificationService {
    static func freedesktopObject(_ late: Late<NotificationService>) -> ExportedInterface {
        typealias F = Notifications.Freedesktop
        return ExportedInterface(
            Notifications.freedesktop, properties: [F.inhibited.name: .boolean(false)],
            bindings: [
                F.notify.deferred { call, answer, appName, replaces, appIcon, summary, body, actions, hints, timeout in
                    let service = try late.get()
                    let post = { @Sendable (caller: String?, atTurnEnd: Bool) throws -> ([Value], Posted) in
                        // Counted before it is read: beyond the rate, a
                        // notification costs no parsing.
                        try service.admit(Self.appID(caller: caller, appName: appName, hints: hints))
                        let posting = try Self.posting(
                            appName: appName, replaces: replaces, appIcon: appIcon, summary: summary, body: body, actions: actions,
                            hints: hints, timeout: timeout, caller: caller)
                        let posted = try service.post(consume posting, atTurnEnd: atTurnEnd)
                        return ([.uint32(posted.id)], posted)
                    }
                    if let caller = service.readyCaller(call, body: body, hints: hints) {
                        try service.inTurn(call, answer, ready: { atTurnEnd in try post(caller.bundleID, atTurnEnd) })
                    } else {
                        try service.inTurn(call, answer) { try post(await service.callerApp(call), false) }
                    }
                },
                F.closeNotification.immediate { _, id in
                    try late.get().change { $0.recall(id) }
                    return []
                },
                F.getCapabilities.immediate { _ in
                    // `sound` where a sound can be played: a player is installed.
                    let service = try late.get()
                    let command = service.book.withLock { $0.settings.soundCommand }
                    return [.strings(F.capabilities + (service.sounds.player(command) != nil ? ["sound"] : []))]
                },
                F.getServerInformation.immediate { _ in [.string("todayd"), .string("todayd"), .string(Today.version), .string("1.2")] },
                F.inhibit.immediate { call, _, _, _ in
                    let service = try late.get()
                    var cookie: UInt32 = 0
                    try service.change { book in
                        let (given, effects) = book.inhibit(by: call.sender)
                        cookie = given
                        return effects
                    }
                    return [.uint32(cookie)]
                },
                F.unInhibit.immediate { call, cookie in
                    try late.get().change { $0.uninhibit(cookie, by: call.sender) }
                    return []
                },
            ])
    }

    static func gtkObject(_ late: Late<NotificationService>) -> ExportedInterface {
        typealias G = Notifications.Gtk
        return ExportedInterface(
            Notifications.gtk,
            bindings: [
                G.addNotification.deferred { call, answer, appID, id, notification in
                    let service = try late.get()
                    try service.inTurn(call, answer) {
                        try await service.checkGtkSender(call, appID: appID)
                        try service.admit(appID)
                        return ([], try service.post(try Self.posting(gtkApp: appID, id: id, notification)))
                    }
                },
                G.removeNotification.task { call, appID, id in
                    let service = try late.get()
                    try await service.checkGtkSender(call, appID: appID)
                    try service.change { book in
                        guard let existing = book.list.first(where: { $0.source == .gtk && $0.appID == appID && $0.appNotificationID == id }) else { return [] }
                        return book.recall(existing.id)
                    }
                    return []
                },
            ])
    }

    static func centerObject(_ late: Late<NotificationService>, count: UInt32, unseen: UInt32, settings: NotificationSettings) -> ExportedInterface {
        typealias C = Notifications.Center
        return ExportedInterface(
            Notifications.today,
            properties: [
                C.count.name: .uint32(count), C.unseen.name: .uint32(unseen), C.doNotDisturb.name: .boolean(settings.doNotDisturb),
                C.doNotDisturbUntil.name: settings.doNotDisturbUntilValue,
                C.doNotDisturbSchedule.name: .structure([.string(settings.scheduleFrom), .string(settings.scheduleTo)]),
                C.appPolicies.name: settings.policiesValue,
                C.bannerPosition.name: .string(settings.bannerPosition.rawValue), C.bannerOutput.name: .string(settings.bannerOutput),
                C.idleThreshold.name: .uint32(settings.idleThreshold), C.listLimit.name: .uint32(UInt32(clamping: settings.listLimit)),
                C.bannerLimit.name: .uint32(UInt32(clamping: settings.bannerLimit)),
            ],
            bindings: [
                C.listNotifications.replying { _ in try late.get().listReply() },
                C.getNotification.immediate { _, id in [.vardict(try late.get().notification(id).dictionary)] },
                C.dismiss.task { call, id in
                    let service = try late.get()
                    try await service.checkAnswerer(call, of: id)
                    try service.change { book throws(NotificationBook.Refusal) in try book.dismiss(id) }
                    return []
                },
                C.dismissAll.immediate { _, appID in
                    try late.get().change { $0.dismissAll(appID) }
                    return []
                },
                C.holdExpiry.immediate { call, hold in
                    try late.get().holdExpiry(hold, by: call.sender)
                    return []
                },
                C.invokeAction.task { call, id, key, platformData in
                    let service = try late.get()
                    try await service.checkAnswerer(call, of: id)
                    let token = platformData.dictionary["activation-token"]?.string
                    try service.change { book throws(NotificationBook.Refusal) in try book.invoke(id, key: key, token: token) }
                    return []
                },
                C.reply.task { call, id, text in
                    let service = try late.get()
                    try await service.checkAnswerer(call, of: id)
                    try service.change { book throws(NotificationBook.Refusal) in try book.reply(id, text: text) }
                    return []
                },
                C.markSeen.immediate { _ in
                    try late.get().change { $0.markSeen() }
                    return []
                },
                C.setAppPolicy.immediate { _, appID, policy in
                    let read = try NotificationSettings.policy(policy.dictionary)
                    try late.get().changeSettings { $0.policies[appID] = read }
                    return []
                },
                C.schedule.task { call, requestID, content, trigger in
                    let service = try late.get()
                    let appID = try await service.callerApp(call, for: "Schedule")
                    let (readContent, readTrigger): (ScheduledContent, ScheduledTrigger)
                    do throws(ScheduleProblem) {
                        (readContent, readTrigger) = (try ScheduledContent(content), try ScheduledTrigger(trigger))
                    } catch {
                        throw TodayError.invalidArgs(error.description)
                    }
                    try service.schedule(requestID, content: readContent, trigger: readTrigger, for: appID)
                    return []
                },
                C.pendingRequests.task { call in
                    let service = try late.get()
                    let appID = try await service.callerApp(call, for: "PendingRequests")
                    return [VariantDictionaries(service.pendingRequests(of: appID)).dbusValue]
                },
                C.removePending.task { call, ids in
                    let service = try late.get()
                    try service.removePending(ids, of: try await service.callerApp(call, for: "RemovePending"))
                    return []
                },
                C.removeDelivered.task { call, ids in
                    let service = try late.get()
                    try service.removeDelivered(ids, of: try await service.callerApp(call, for: "RemoveDelivered"))
                    return []
                },
                C.setCategories.task { call, categories in
                    let service = try late.get()
                    let appID = try await service.callerApp(call, for: "SetCategories")
                    let read: [ScheduledCategory]
                    do throws(ScheduleProblem) {
                        read = try categories.dictionaries.map { dictionary throws(ScheduleProblem) in try ScheduledCategory(dictionary) }
                    } catch {
                        throw TodayError.invalidArgs(error.description)
                    }
                    try service.setCategories(read, of: appID)
                    return []
                },
            ],
            setters: [
                C.doNotDisturb.name: { _, value in
                    guard case .boolean(let on) = value else { throw TodayError.invalidArgs("DoNotDisturb is a boolean") }
                    // On or off for good: an end set before is gone.
                    try late.get().changeSettings {
                        $0.doNotDisturb = on
                        $0.doNotDisturbUntil = nil
                    }
                },
                C.doNotDisturbUntil.name: { _, value in
                    guard case .uint64(let microseconds) = value else { throw TodayError.invalidArgs("DoNotDisturbUntil is a uint64 (t) of microseconds since 1970") }
                    let service = try late.get()
                    let now = service.clock.now
                    try service.changeSettings { try $0.setDoNotDisturb(until: microseconds, now: now) }
                },
                C.bannerPosition.name: { _, value in
                    guard case .string(let name) = value, let position = BannerPosition(rawValue: name) else {
                        throw TodayError.invalidArgs("BannerPosition is a string: \(BannerPosition.choices)")
                    }
                    try late.get().changeSettings { $0.bannerPosition = position }
                },
                C.bannerOutput.name: { _, value in
                    guard case .string(let name) = value, NotificationSettings.isOutputName(name) else {
                        throw TodayError.invalidArgs("BannerOutput is an output's name, such as DP-1 (swaymsg -t get_outputs, xrandr), or \"\" for the compositor's choice")
                    }
                    try late.get().changeSettings { $0.bannerOutput = name }
                },
                C.bannerLimit.name: { _, value in
                    guard case .uint32(let limit) = value, let limit = Int(exactly: limit), (1...NotificationSettings.mostBanners).contains(limit) else {
                        throw TodayError.invalidArgs("BannerLimit is how many banners show at once: 1, 2 or 3")
                    }
                    try late.get().changeSettings { $0.bannerLimit = limit }
                },
                C.listLimit.name: { _, value in
                    guard case .uint32(let limit) = value, let limit = Int(exactly: limit), (1...NotificationSettings.mostListed).contains(limit) else {
                        throw TodayError.invalidArgs("ListLimit is a number of notifications from 1 to \(NotificationSettings.mostListed)")
                    }
                    try late.get().changeSettings { $0.listLimit = limit }
                },
                C.idleThreshold.name: { _, value in
                    guard case .uint32(let seconds) = value else {
                        throw TodayError.invalidArgs("IdleThreshold is a uint32 (u) of seconds; 0 for never")
                    }
                    try late.get().changeSettings { $0.idleThreshold = seconds }
                },
                C.doNotDisturbSchedule.name: { _, value in
                    let (from, to) = try NotificationSettings.schedule(value)
                    try late.get().changeSettings {
                        $0.scheduleFrom = from
                        $0.scheduleTo = to
                    }
                },
            ])
    }

    /// A Flatpak sender speaks only for its own app id.
    func checkGtkSender(_ call: MethodCall, appID: String) async throws {
        if case .flatpak(let own)? = try? await identities.caller(of: call), own != appID {
            throw DBusError(.accessDenied, "a Flatpak app sends notifications as itself ('\(own)'), not as '\(appID)'")
        }
    }

    // MARK: What arrives

    /// The hints Notify reads itself; the others are kept as sent.
    static let readHints: Set<String> = [
        "urgency", "category", "desktop-entry", "image-data", "image_data", "icon_data", "image-path", "image_path", "value", "resident",
        "transient", "x-canonical-private-synchronous", "x-dunst-stack-tag", "private-synchronous", "synchronous",
    ]

    /// The app a notification belongs to (SPEC section 14): the sender's
    /// bundle or Flatpak app; else the `desktop-entry` hint; else app_name.
    static func appID(caller: String?, appName: String, hints: VariantDictionary) -> String {
        if let caller { return caller }
        if case .string(let entry)? = hints["desktop-entry"], !entry.isEmpty { return entry }
        return appName.isEmpty ? "unknown" : appName
    }

    /// Notify's arguments as a posting; InvalidArgs saying what is wrong.
    static func posting(
        appName: String, replaces: UInt32, appIcon: String, summary: String, body: String, actions: [String], hints: VariantDictionary,
        timeout: Int32, caller: String?
    ) throws -> NotificationBook.Posting {
        guard actions.count % 2 == 0 else {
            throw TodayError.invalidArgs("actions must come in pairs of key and label; \(actions.count) strings were sent")
        }
        let values = hints.dictionary
        var urgency = TodayNotification.Urgency.normal
        if let value = values["urgency"] {
            guard case .byte(let level) = value, let known = TodayNotification.Urgency(rawValue: level) else {
                throw TodayError.invalidArgs("hint 'urgency' must be a byte (y): 0 low, 1 normal, 2 critical")
            }
            urgency = known
        }
        func string(_ key: String) throws -> String? {
            guard let value = values[key] else { return nil }
            guard case .string(let text) = value else { throw TodayError.invalidArgs("hint '\(key)' must be a string (s)") }
            return text
        }
        func flag(_ key: String) throws -> Bool {
            guard let value = values[key] else { return false }
            guard case .boolean(let on) = value else { throw TodayError.invalidArgs("hint '\(key)' must be a boolean (b)") }
            return on
        }
        let desktopEntry = try string("desktop-entry").flatMap { $0.isEmpty ? nil : $0 }
        let appID = appID(caller: caller, appName: appName, hints: hints)
        var notification = TodayNotification(
            id: 0, appID: appID, appName: appName.isEmpty ? appID : appName, summary: cut(summary, to: longestSummary),
            // Cut before it is parsed, so a huge body costs no more than
            // 64 KiB of parsing; the parser recovers from a cut tag.
            body: NotificationMarkup.reduce(cut(body, to: longestBody)), appIcon: appIcon,
            actions: stride(from: 0, to: actions.count, by: 2).map { .init(key: actions[$0], label: actions[$0 + 1]) }, urgency: urgency,
            category: try string("category") ?? "", time: Date(), source: .freedesktop)
        notification.desktopEntry = desktopEntry
        for key in ["image-data", "image_data", "icon_data"] {
            guard notification.image == nil, let value = values[key] else { continue }
            do throws(NotificationImages.Refused) {
                notification.image = try NotificationImages.image(value, hint: key)
            } catch {
                throw TodayError.invalidArgs(error.description)
            }
        }
        if let path = try string("image-path") ?? string("image_path"), !path.isEmpty { notification.imagePath = NotificationImages.path(path) }
        if let value = values["value"] {
            guard case .int32(let percent) = value, (0...100).contains(percent) else {
                throw TodayError.invalidArgs("hint 'value' must be an int32 (i) from 0 to 100")
            }
            notification.value = percent
        }
        notification.resident = try flag("resident")
        notification.transient = try flag("transient")
        // The stack tag under each name dunst reads it by: volume and
        // brightness scripts written for dunst send `synchronous`.
        notification.stackTag =
            try string("x-canonical-private-synchronous") ?? string("x-dunst-stack-tag") ?? string("private-synchronous") ?? string("synchronous")
        notification.hints = VariantDictionary(hints.value.dictionaryEntries.compactMap { entry in
            guard let key = entry.key.string, !readHints.contains(key) else { return nil }
            return (key, entry.value.unwrapped)
        })
        // The sound hints stay among the hints too (the list shows them).
        var sound: NotificationSound?
        if !values.isEmpty, try !flag("suppress-sound") {
            if let file = try string("sound-file"), !file.isEmpty {
                sound = .file(file)
            } else if let name = try string("sound-name"), !name.isEmpty {
                sound = .name(name)
            }
        }
        return NotificationBook.Posting(notification: notification, replaces: replaces, expireTimeout: timeout, sound: sound)
    }

    /// AddNotification's dictionary as a posting (GNotification's keys).
    static func posting(gtkApp appID: String, id: String, _ notification: VariantDictionary) throws -> NotificationBook.Posting {
        let values = notification.dictionary
        let urgency: TodayNotification.Urgency =
            switch values["priority"]?.string {
            case "low": .low
            case "urgent": .critical
            default: .normal
            }
        var actions: [TodayNotification.Action] = []
        if case .array(_, let buttons)? = values["buttons"] {
            for button in buttons {
                let entries = VariantDictionary(button)?.dictionary ?? [:]
                guard let label = entries["label"]?.string, let action = entries["action"]?.string else { continue }
                var key = action
                var n = 2
                while actions.contains(where: { $0.key == key }) {
                    key = "\(action)#\(n)"
                    n += 1
                }
                actions.append(.init(key: key, label: label, gtkAction: action, gtkTarget: entries["target"]))
            }
        }
        let name = appID.split(separator: ".").last.map(String.init) ?? appID
        var posted = TodayNotification(
            id: 0, appID: appID, appName: name, summary: cut(values["title"]?.string ?? "", to: longestSummary),
            // GNotification's body is text: escaped, as markup of its own.
            body: NotificationMarkup.reduce(NotificationMarkup.escape(cut(values["body"]?.string ?? "", to: longestBody))), actions: actions,
            urgency: urgency,
            category: values["category"]?.string ?? "", time: Date(), source: .gtk)
        posted.appNotificationID = id
        posted.gtkDefaultAction = values["default-action"]?.string
        posted.gtkDefaultTarget = values["default-action-target"]
        // A serialized GIcon: ('themed', <['name', …]>) or ('file', <'path'>).
        if case .structure(let icon)? = values["icon"], icon.count == 2, let kind = icon[0].string {
            switch (kind, icon[1].unwrapped) {
            case ("themed", .array(.string, let names)): posted.appIcon = names.first?.string ?? ""
            case ("file", .string(let path)): posted.imagePath = NotificationImages.path(path)
            default: break
            }
        }
        // GNotification has no expiry: it stays until removed or acted on.
        return NotificationBook.Posting(notification: posted, replaces: 0, expireTimeout: 0)
    }
}
