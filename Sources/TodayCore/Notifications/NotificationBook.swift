import DBus
import FoundationEssentials
import Glibc
import TodayProtocol

/// The notification list as value code (SPEC section 14): events in
/// (a notification posted, closed, dismissed, an action chosen, time
/// passing), effects out (signals to send, files to write, apps to call),
/// with the clock passed in. `NotificationService` carries the effects out;
/// tests drive it without a bus or a clock.
struct NotificationBook: Sendable {
    /// NotificationClosed's reasons.
    enum CloseReason: UInt32, Sendable {
        case expired = 1, dismissed = 2, recalled = 3, other = 4
    }

    /// What the service must do after an event, in order.
    enum Effect: Equatable, Sendable {
        /// NotificationClosed(id, reason).
        case closed(UInt32, CloseReason)
        /// Write the notification's file (before the reply).
        case store(UInt32)
        /// Remove the notification's file.
        case forget(UInt32)
        /// Remove the picture todayd kept for a notification that is gone.
        case dropImage(String)
        /// NotificationsChanged(changed, removed), with Count and Unseen.
        case listChanged(changed: [UInt32], removed: [UInt32])
        /// Keep that the notifications posted up to this time are seen
        /// (MarkSeen): Unseen is the same after a restart.
        case seen(upTo: Date)
        /// ActivationToken(id, token), then ActionInvoked(id, key).
        case invoked(UInt32, key: String, token: String?)
        /// NotificationReplied(id, text).
        case replied(UInt32, String)
        /// org.freedesktop.Application.ActivateAction(name, [target]) on the
        /// app `appID`, with the activation token of the click that chose it.
        case activateAction(appID: String, name: String, target: Value?, token: String?)
        /// org.freedesktop.Application.Activate on the app `appID`, or its start.
        case activateApp(appID: String, token: String?)
        /// The Inhibited property.
        case inhibited(Bool)
        /// Show it as a banner (SPEC section 15): it passed Do Not
        /// Disturb, the inhibitions and its app's policy.
        case banner(UInt32)
        /// Play the sound it asked for: it passed Do Not Disturb, the
        /// inhibitions and its app's sound policy.
        case sound(NotificationSound)
        /// A scheduled notification answered: ActivateAction
        /// ("notification-response") on its app, started where it is not
        /// running (SPEC section 18).
        case respond(appID: String, NotificationResponse, token: String?)
        /// Open the URL as OpenURL does (section 6).
        case openURL(String, token: String?)
    }

    /// Whether a notification may show as a banner beyond its app's policy.
    enum BannerRule: Sendable {
        /// Unless Do Not Disturb or an inhibition holds it back (critical
        /// ones pass both).
        case usual
        /// As `usual`, and through Do Not Disturb (a time-sensitive one).
        case throughDoNotDisturb
        /// Never: in the list only (a passive one).
        case never
    }

    /// A notification to post, as its interface handed it over.
    struct Posting: Sendable {
        var notification: TodayNotification
        /// `replaces_id`, or 0.
        var replaces: UInt32 = 0
        /// Milliseconds: -1 the default by urgency, 0 never.
        var expireTimeout: Int32 = -1
        var banner = BannerRule.usual
        /// The sound it asks for (`sound-file`, `sound-name`), nil for none
        /// (or `suppress-sound`).
        var sound: NotificationSound?
    }

    enum Refusal: Error, Equatable {
        /// More than `ratePerSecond` from one app in a second.
        case tooMany(appID: String)
        case noSuchNotification(UInt32)
        case noSuchAction(UInt32, String)
    }

    /// At most this many in the list unless the user says (SPEC section 14).
    static let defaultCapacity = 1_000
    /// At most this many in the list (the user's ListLimit); the oldest
    /// leave (reason 4 if open).
    var capacity = defaultCapacity
    /// The user's settings: an app's policy changes what its notifications do.
    var settings = NotificationSettings()
    /// Notifications one app may post in a second, by default.
    static let defaultRate = 100
    /// Notifications one app may post in a second.
    var ratePerSecond = defaultRate
    /// The last id given: never given again.
    /// When the service's expiry timer is set to look next; kept with the
    /// book, so that a Notify decides under the same lock as the look
    /// whether its expiry comes sooner (and only then wakes the timer: a
    /// flood of notifications must not wake it at each one).
    var expiryLooksAt: Date = .distantFuture
    /// Ids up to this one are kept as given (`last-id` on disk): the
    /// service reserves them a block at a time before it gives them, so
    /// that a Notify writes no id of its own.
    var idsReserved: UInt32 = 0
    /// The next block is being reserved.
    var reservingIDs = false
    private(set) var lastID: UInt32 = 0
    /// The list, by id, and newest first.
    private(set) var byID: [UInt32: TodayNotification] = [:] {
        didSet { generation &+= 1 }
    }
    private(set) var order: [UInt32] = [] {
        didSet { generation &+= 1 }
    }
    /// Changes with every change of the list: what was made of the list
    /// (ListNotifications' reply) is good while it stays the same.
    private(set) var generation: UInt64 = 0
    /// Posted since the last MarkSeen.
    private(set) var unseen: Set<UInt32> = []
    /// Inhibitions by cookie: the connection that asked.
    private(set) var inhibitions: [UInt32: String] = [:]
    /// The connections holding expiry (HoldExpiry: the pointer is on the
    /// banners): while one does, nothing expires.
    private(set) var expiryHolds: Set<String> = []
    private var lastCookie: UInt32 = 0
    /// Per app: the second counted and how many came in it.
    private var rates: [String: (second: Int64, count: Int)] = [:]

    /// The list kept: `kept`, of which those posted after `seenUpTo` are
    /// unseen (all of them where the user never marked the list seen).
    init(lastID: UInt32 = 0, kept: [TodayNotification] = [], seenUpTo: Date? = nil) {
        self.lastID = lastID
        for notification in kept.sorted(by: { $0.time > $1.time || ($0.time == $1.time && $0.id > $1.id) }) where byID[notification.id] == nil {
            byID[notification.id] = notification
            order.append(notification.id)
            self.lastID = max(self.lastID, notification.id)
            if seenUpTo.map({ notification.time > $0 }) ?? true { unseen.insert(notification.id) }
        }
    }

    var list: [TodayNotification] { order.compactMap { byID[$0] } }
    var count: Int { order.count }
    var isInhibited: Bool { !inhibitions.isEmpty }

    /// When a notification is next due to expire.
    var nextExpiry: Date? {
        guard expiryHolds.isEmpty else { return nil }
        return byID.values.lazy.filter(\.isOpen).compactMap(\.expires).min()
    }

    /// How long a notification of `urgency` stays open by default.
    static func defaultTimeout(_ urgency: TodayNotification.Urgency) -> Double? {
        switch urgency {
        case .low: 5
        case .normal: 10
        case .critical: nil
        }
    }

    /// The next id: never 0, never one given before.
    private mutating func nextID() -> UInt32 {
        lastID = lastID == .max ? 1 : lastID + 1
        while byID[lastID] != nil { lastID += 1 }
        return lastID
    }

    /// Counts a notification of `appID` at `now` against its app's rate:
    /// `tooMany` past `ratePerSecond` in one second. Asked before a
    /// notification is read (its markup parsed, its image scaled), so that
    /// what a flood sends beyond the rate costs next to nothing.
    mutating func admit(_ appID: String, at now: Date) throws(Refusal) {
        let second = Int64(now.timeIntervalSince1970.rounded(.down))
        // One look for an app seen before: its count is changed in place.
        let index = rates.index(forKey: appID)
        let rate = index.map { rates.values[$0] }
        let counted = rate?.second == second ? rate?.count ?? 0 : 0
        guard counted < ratePerSecond else { throw .tooMany(appID: appID) }
        if let index {
            rates.values[index] = (second, counted + 1)
        } else {
            rates[appID] = (second, counted + 1)
        }
        if rates.count > 4 * capacity { rates = rates.filter { $0.value.second == second } }
    }

    /// Posts `posting` at `now` (admitted first: `admit`): a new
    /// notification, or one that replaces another in place (same id, moved
    /// to the top, no NotificationClosed). Returns its id.
    ///
    /// `minute` is the minute of the local day at `now` (0 to 1439), for
    /// Do Not Disturb's schedule; by default, from the C library's time
    /// zone.
    mutating func post(_ posting: consuming Posting, at now: Date, minute: Int? = nil) throws(Refusal) -> (id: UInt32, effects: [Effect]) {
        let (id, effects, _) = try postUndoably(consume posting, at: now, minute: minute)
        return (id, effects)
    }

    /// What one post changed in the list, so that it can be taken back
    /// (`takeBack`) where its record could not be kept: the caller then
    /// hears of an error, not of an id, and the list is as if it had not
    /// come.
    struct Undo: Sendable {
        /// The notification as posted.
        let posted: TodayNotification
        /// What was under its id before (nil: the id was new).
        let replaced: TodayNotification?
        /// Its id was unseen before it came.
        let wasUnseen: Bool
        /// What it took out of the list (the oldest past the capacity, or
        /// the one a transient one replaced), each with whether it was unseen.
        let removed: [(notification: TodayNotification, unseen: Bool)]
    }

    /// `post`, and what takes it back.
    mutating func postUndoably(_ posting: consuming Posting, at now: Date, minute: Int? = nil) throws(Refusal) -> (id: UInt32, effects: [Effect], undo: Undo) {
        let (rule, replaces, askedTimeout, sound) = (posting.banner, posting.replaces, posting.expireTimeout, posting.sound)
        // Taken from the posting, which ends here: where the caller handed
        // its posting over, the notification is its fields' one owner, and
        // the changes below make no copy of them.
        var notification = (consume posting).notification
        let policy = settings.policy(for: notification)
        // A passive one (`never`) neither shows nor sounds.
        let alerts =
            rule != .never
            && alerts(
                urgency: policy.urgency ?? notification.urgency, atMinute: minute ?? (settings.hasSchedule ? Self.localMinute(now) : 0),
                throughDoNotDisturb: rule == .throughDoNotDisturb)
        let banner = alerts && policy.banners
        let playing = alerts && policy.sounds ? sound : nil
        if let urgency = policy.urgency { notification.urgency = urgency }
        // The user's time for the app's notifications, over the app's.
        let expireTimeout = policy.timeout ?? askedTimeout
        // An app kept out of the list: shown and gone, as a transient one.
        if !policy.list { notification.transient = true }

        // What it replaces: the id asked for, where todayd gave it and it is
        // still in the list; else the same app's notification with the same
        // stack tag, or the same GNotification id.
        var replaced: UInt32?
        var stacked: UInt32?
        if replaces != 0, byID[replaces] != nil {
            replaced = replaces
        } else if let tag = notification.stackTag {
            replaced = order.first { byID[$0]?.appID == notification.appID && byID[$0]?.stackTag == tag }
        } else if let appNotificationID = notification.appNotificationID {
            replaced = order.first { id in
                byID[id].map { $0.source == notification.source && $0.appID == notification.appID && $0.appNotificationID == appNotificationID } ?? false
            }
        }
        // Or, stacking duplicates, the same app's open notification that
        // says the same: it closes (reason 1, as dunst's does) and this
        // one counts it.
        if replaced == nil, settings.stackDuplicates, !notification.transient, let same = openDuplicate(of: notification) {
            notification.duplicates = (byID[same]?.duplicates ?? 0) &+ 1
            stacked = same
        }
        notification.id = replaced ?? nextID()
        // Times as the store keeps them (microseconds), so that the list
        // after a restart is the list before it.
        notification.time = ValueMapping.storable(now)
        notification.isOpen = true
        let seconds: Double? =
            switch expireTimeout {
            case 0: nil
            case ..<0: Self.defaultTimeout(notification.urgency)
            default: Double(expireTimeout) / 1000
            }
        notification.expires = seconds.map { ValueMapping.storable(now.addingTimeInterval($0), rounding: .down) }

        // A post's effects: what it keeps, what it takes out, the list's
        // change and a banner, made at their size rather than grown.
        var effects: [Effect] = []
        effects.reserveCapacity(8)
        let id = notification.id
        let before = byID[id]
        let wasUnseen = unseen.contains(id)
        var removed: [(notification: TodayNotification, unseen: Bool)] = []
        /// Takes `id` out as `remove` does, keeping what it was.
        func take(_ id: UInt32, reason: CloseReason?) {
            if let gone = byID[id] { removed.append((gone, unseen.contains(id))) }
            remove(id, reason: reason, into: &effects)
        }
        if notification.transient {
            // Shown, never kept: it closes when its time runs out, and a
            // transient replacement takes the one it replaces out of the list.
            if let replaced { take(replaced, reason: nil) }
            byID[id] = notification
            if banner { effects.append(.banner(id)) }
            if let playing { effects.append(.sound(playing)) }
            return (id, effects, Undo(posted: notification, replaced: before, wasUnseen: wasUnseen, removed: removed))
        }
        if let replaced, let old = byID[replaced]?.imageFile, old != notification.imageFile { effects.append(.dropImage(old)) }
        if replaced != nil { order.removeAll { $0 == id } }
        var evicted: [UInt32] = []
        if let stacked {
            take(stacked, reason: .expired)
            evicted.append(stacked)
        }
        byID[id] = notification
        order.insert(id, at: 0)
        if !wasUnseen { unseen.insert(id) }
        effects.append(.store(id))
        while order.count > capacity, let oldest = order.last {
            take(oldest, reason: .other)
            evicted.append(oldest)
        }
        effects.append(.listChanged(changed: [id], removed: evicted))
        if banner { effects.append(.banner(id)) }
        if let playing { effects.append(.sound(playing)) }
        return (id, effects, Undo(posted: notification, replaced: before, wasUnseen: wasUnseen, removed: removed))
    }

    /// The open notification of `notification`'s app, from the same
    /// source, that says the same (summary, body, icon, urgency, actions):
    /// what a notification stacks on.
    private func openDuplicate(of notification: TodayNotification) -> UInt32? {
        order.first { id in
            guard let other = byID[id], other.isOpen, other.appID == notification.appID else { return false }
            return other.source == notification.source && other.summary == notification.summary && other.body == notification.body
                && other.appIcon == notification.appIcon && other.urgency == notification.urgency
                && other.actions.map(\.key) == notification.actions.map(\.key) && other.actions.map(\.label) == notification.actions.map(\.label)
        }
    }

    /// Takes back what a post did (`Undo`), as far as later changes left
    /// it: a notification posted since under the same id stays, and one
    /// taken out comes back only where its id is free.
    mutating func takeBack(_ undo: Undo) {
        let id = undo.posted.id
        if byID[id] == undo.posted {
            byID[id] = nil
            if let at = order.firstIndex(of: id) { order.remove(at: at) }
            if !undo.wasUnseen { unseen.remove(id) }
            if let replaced = undo.replaced { putBack(replaced, unseen: undo.wasUnseen) }
        }
        for (notification, wasUnseen) in undo.removed where byID[notification.id] == nil {
            putBack(notification, unseen: wasUnseen)
        }
    }

    /// Puts `notification` back into the list where its time places it
    /// (newest first).
    private mutating func putBack(_ notification: TodayNotification, unseen wasUnseen: Bool) {
        byID[notification.id] = notification
        if !notification.transient {
            let at =
                order.firstIndex { other in
                    guard let other = byID[other] else { return false }
                    return other.time < notification.time || (other.time == notification.time && other.id < notification.id)
                } ?? order.count
            order.insert(notification.id, at: at)
        }
        if wasUnseen { unseen.insert(notification.id) }
    }

    /// Whether a notification of `urgency` shows as a banner: its app's
    /// policy allows banners, and Do Not Disturb (on, or scheduled at
    /// `minute`) and the inhibitions hold back all but critical ones.
    /// A time-sensitive one (`throughDoNotDisturb`) passes Do Not
    /// Disturb but not the inhibitions.
    func showsBanner(urgency: TodayNotification.Urgency, policy: NotificationSettings.Policy, atMinute minute: Int, throughDoNotDisturb: Bool = false) -> Bool {
        policy.banners && alerts(urgency: urgency, atMinute: minute, throughDoNotDisturb: throughDoNotDisturb)
    }

    /// Whether a notification of `urgency` alerts the user (a banner, its
    /// sound) as far as Do Not Disturb (on, or scheduled at `minute`) and
    /// the inhibitions go: critical ones always; time-sensitive ones
    /// (`throughDoNotDisturb`) through Do Not Disturb but not through the
    /// inhibitions.
    func alerts(urgency: TodayNotification.Urgency, atMinute minute: Int, throughDoNotDisturb: Bool = false) -> Bool {
        urgency == .critical || !((settings.isQuiet(atMinute: minute) && !throughDoNotDisturb) || isInhibited)
    }

    /// The minute of the local day at `date`, in the C library's time zone
    /// (TZ, /etc/localtime).
    static func localMinute(_ date: Date) -> Int {
        var seconds = time_t(Int64(exactly: date.timeIntervalSince1970.rounded(.down)) ?? 0)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return Int(parts.tm_hour) * 60 + Int(parts.tm_min)
    }

    /// Takes `ids` out of the list; sends NotificationClosed with `reason`
    /// for each still open (nil: none).
    private mutating func remove(_ ids: [UInt32], reason: CloseReason?) -> [Effect] {
        var effects: [Effect] = []
        for id in ids { remove(id, reason: reason, into: &effects) }
        return effects
    }

    /// Takes `id` out, adding what that does to `effects` (a post's own
    /// list, made at its size, rather than one more list to join to it).
    private mutating func remove(_ id: UInt32, reason: CloseReason?, into effects: inout [Effect]) {
        guard let notification = byID.removeValue(forKey: id) else { return }
        if notification.isOpen, let reason { effects.append(.closed(id, reason)) }
        // Only transient ones are kept out of the list; the oldest,
        // which leave most often, are found first from the end.
        let wasListed = !notification.transient
        if wasListed, let at = order.lastIndex(of: id) { order.remove(at: at) }
        unseen.remove(id)
        if wasListed { effects.append(.forget(id)) }
        if let file = notification.imageFile { effects.append(.dropImage(file)) }
    }

    /// CloseNotification: the sender recalls it (reason 3), and it leaves
    /// the list. An id not in the list is no error (the specification's
    /// servers answer it quietly).
    mutating func recall(_ id: UInt32) -> [Effect] {
        guard byID[id] != nil else { return [] }
        let listed = order.contains(id)
        let effects = remove([id], reason: .recalled)
        return effects + (listed ? [.listChanged(changed: [], removed: [id])] : [])
    }

    /// The user dismissed it (reason 2, where still open): it leaves the list.
    mutating func dismiss(_ id: UInt32) throws(Refusal) -> [Effect] {
        guard byID[id] != nil else { throw .noSuchNotification(id) }
        let listed = order.contains(id)
        let effects = remove([id], reason: .dismissed)
        return effects + (listed ? [.listChanged(changed: [], removed: [id])] : [])
    }

    /// Every notification of `appID` (`""`: all) dismissed.
    mutating func dismissAll(_ appID: String) -> [Effect] {
        let ids = byID.values.filter { appID.isEmpty || $0.appID == appID }.map(\.id).sorted()
        guard !ids.isEmpty else { return [] }
        let listed = ids.filter { order.contains($0) }
        return remove(ids, reason: .dismissed) + (listed.isEmpty ? [] : [.listChanged(changed: [], removed: listed)])
    }

    /// Time passes: those whose time ran out close (reason 1) and stay in
    /// the list, closed; transient ones leave.
    mutating func expire(at now: Date) -> [Effect] {
        var effects: [Effect] = []
        var changed: [UInt32] = []
        var removed: [UInt32] = []
        // Expiry is kept to the microsecond at or before it: due within
        // the microsecond `now` is in.
        guard expiryHolds.isEmpty else { return [] }
        let now = ValueMapping.storable(now, rounding: .up)
        let due = byID.filter { $0.value.isOpen && ($0.value.expires.map { $0 <= now } ?? false) }
        for (id, notification) in due.sorted(by: { $0.key < $1.key }) {
            if notification.transient {
                remove(id, reason: .expired, into: &effects)
                removed.append(id)
                continue
            }
            byID[id]?.isOpen = false
            effects += [.closed(id, .expired), .store(id)]
            changed.append(id)
        }
        if !changed.isEmpty || !removed.isEmpty { effects.append(.listChanged(changed: changed, removed: [])) }
        return effects
    }

    /// The user chose action `key` (`default`: the notification itself),
    /// open or closed: ActivationToken and ActionInvoked go to its sender,
    /// a GNotification's action to its app; then it leaves the list unless
    /// resident (and a resident one stays open).
    mutating func invoke(_ id: UInt32, key: String, token: String?) throws(Refusal) -> [Effect] {
        guard let notification = byID[id] else { throw .noSuchNotification(id) }
        let action = notification.actions.first { $0.key == key }
        guard action != nil || key == "default" else { throw .noSuchAction(id, key) }
        var effects: [Effect] = [.invoked(id, key: key, token: token)]
        switch notification.source {
        case .todaykit:
            // The default action opens the content's URL where it has one;
            // else the app hears which action it was.
            if key == "default", let url = notification.hints.dictionary[Self.urlHint]?.string {
                effects.append(.openURL(url, token: token))
            } else {
                effects.append(.respond(appID: notification.appID, notification.response(to: key, text: nil), token: token))
            }
        case .gtk:
            if let name = action?.gtkAction ?? (key == "default" ? notification.gtkDefaultAction : nil) {
                effects.append(
                    .activateAction(appID: notification.appID, name: name, target: action?.gtkTarget ?? notification.gtkDefaultTarget, token: token))
            } else if key == "default" {
                effects.append(.activateApp(appID: notification.appID, token: token))
            }
        case .freedesktop:
            // `default` with no such action starts or activates the app.
            if key == "default", action == nil { effects.append(.activateApp(appID: notification.desktopEntry ?? notification.appID, token: token)) }
        }
        if notification.resident { return effects }
        let listed = order.contains(id)
        remove(id, reason: .dismissed, into: &effects)
        if listed { effects.append(.listChanged(changed: [], removed: [id])) }
        return effects
    }

    /// An inline reply: NotificationReplied, then as an action.
    mutating func reply(_ id: UInt32, text: String) throws(Refusal) -> [Effect] {
        guard let notification = byID[id] else { throw .noSuchNotification(id) }
        guard notification.actions.contains(where: { $0.key == "inline-reply" }) else { throw .noSuchAction(id, "inline-reply") }
        var effects: [Effect] = [.replied(id, text)]
        if notification.source == .todaykit {
            effects.append(.respond(appID: notification.appID, notification.response(to: "inline-reply", text: text), token: nil))
        }
        if !notification.resident {
            let listed = order.contains(id)
            remove(id, reason: .dismissed, into: &effects)
            if listed { effects.append(.listChanged(changed: [], removed: [id])) }
        }
        return effects
    }

    /// The user has seen the list: what was posted up to the newest in it.
    /// A notification is unseen from its post (its `time`) until then, so
    /// that time is what is kept.
    mutating func markSeen() -> [Effect] {
        guard !unseen.isEmpty, let newest = byID.values.lazy.map(\.time).max() else { return [] }
        unseen = []
        return [.seen(upTo: newest), .listChanged(changed: [], removed: [])]
    }

    // MARK: Inhibitions

    /// Inhibit from connection `sender`: returns its cookie.
    mutating func inhibit(by sender: String) -> (cookie: UInt32, effects: [Effect]) {
        let was = isInhibited
        lastCookie = lastCookie == .max ? 1 : lastCookie + 1
        inhibitions[lastCookie] = sender
        return (lastCookie, was ? [] : [.inhibited(true)])
    }

    /// UnInhibit; a cookie of another connection, or none, changes nothing.
    mutating func uninhibit(_ cookie: UInt32, by sender: String) -> [Effect] {
        guard inhibitions[cookie] == sender else { return [] }
        inhibitions[cookie] = nil
        return isInhibited ? [] : [.inhibited(false)]
    }

    /// A connection left the bus: its inhibitions and its hold of
    /// expiry end.
    mutating func left(_ sender: String, at now: Date) -> [Effect] {
        let was = isInhibited
        inhibitions = inhibitions.filter { $0.value != sender }
        holdExpiry(false, by: sender, at: now)
        return was && !isInhibited ? [.inhibited(false)] : []
    }

    // MARK: Holding expiry

    /// What a notification whose time came while expiry was held gets
    /// once it is let go, in seconds: time to move the pointer off a
    /// banner without its going at once.
    static let graceAfterHold: Double = 3

    /// HoldExpiry from connection `sender`: while any connection holds it
    /// (the pointer on the banners, as GNOME Shell keeps a banner under the
    /// pointer), no notification expires. Let go by the last, those whose
    /// time came or comes within `graceAfterHold` close that long after.
    mutating func holdExpiry(_ hold: Bool, by sender: String, at now: Date) {
        if hold {
            expiryHolds.insert(sender)
            return
        }
        guard expiryHolds.remove(sender) != nil, expiryHolds.isEmpty else { return }
        let grace = ValueMapping.storable(now.addingTimeInterval(Self.graceAfterHold), rounding: .down)
        for (id, notification) in byID where notification.isOpen {
            if let expires = notification.expires, expires < grace { byID[id]?.expires = grace }
        }
    }

    // MARK: Scheduled notifications

    /// The hints a scheduled notification keeps for its response: the
    /// content's URL and user-info, the id of the category's text-input
    /// action (shown as `inline-reply`), and the time it was delivered for.
    static let urlHint = "url"
    static let userInfoHint = "user-info"
    static let textInputHint = "text-input-action"
    static let deliveredForHint = "delivered-for"

    /// Whether `appID`'s request `requestID` was delivered for `time`
    /// already: a delivery that todayd was killed before recording is not
    /// made twice.
    func hasDelivered(_ requestID: String, of appID: String, for time: Date) -> Bool {
        let micros = ValueMapping.microseconds(time)
        return byID.values.contains { notification in
            notification.source == .todaykit && notification.appID == appID && notification.appNotificationID == requestID
                && notification.hints.dictionary[Self.deliveredForHint]?.uint64 == micros
        }
    }

    /// The notifications `appID`'s requests of `requestIDs` delivered.
    func delivered(_ requestIDs: Set<String>, of appID: String) -> [UInt32] {
        order.filter { id in
            guard let notification = byID[id] else { return false }
            return notification.source == .todaykit && notification.appID == appID && notification.appNotificationID.map(requestIDs.contains) == true
        }
    }

    /// At start: those whose time ran out while todayd was down close now,
    /// and those past the capacity (a ListLimit lowered meanwhile) leave.
    mutating func catchUp(at now: Date) -> [Effect] {
        expire(at: now) + trim()
    }

    /// Takes the user's settings in: their ListLimit is the capacity, and
    /// what is past it leaves.
    mutating func use(_ settings: NotificationSettings) -> [Effect] {
        self.settings = settings
        capacity = settings.listLimit
        return trim()
    }

    /// The oldest past the capacity leave the list (reason 4 where open),
    /// as a post past it takes the oldest out.
    mutating func trim() -> [Effect] {
        guard order.count > capacity else { return [] }
        let excess = Array(order[capacity...])
        return remove(excess, reason: .other) + [.listChanged(changed: [], removed: excess)]
    }
}

extension TodayNotification {
    /// What a scheduled notification's app hears when action `key` is
    /// chosen: `default`, the category's action id, or for the reply
    /// field the id of the category's text-input action.
    func response(to key: String, text: String?) -> NotificationResponse {
        let hints = hints.dictionary
        let action = key == "inline-reply" ? hints[NotificationBook.textInputHint]?.string ?? key : key
        return NotificationResponse(
            requestID: appNotificationID ?? "", actionID: action, userText: text,
            userInfo: hints[NotificationBook.userInfoHint].flatMap(VariantDictionary.init) ?? VariantDictionary([]))
    }
}
