import DBus
import FoundationEssentials
import PropertyListValues

/// One notification as a client shows it (SPEC sections 14 and 15): the
/// Today view's row, a banner, `todayctl notifications list` and a bar's
/// tooltip, read from the dictionary `ListNotifications` gives. Plain Swift,
/// tested without a bus.
public struct NotificationEntry: Equatable, Sendable {
    public var id: UInt32
    public var appID: String
    public var appName: String
    public var appIcon: String
    public var summary: String
    /// In the specification's markup subset.
    public var body: String
    /// Key and label, in the sender's order.
    public var actions: [(key: String, label: String)]
    public var urgency: TodayNotification.Urgency
    public var category: String
    /// µs since the epoch.
    public var time: UInt64
    public var isOpen: Bool
    public var imagePath: String?
    public var value: Int32?
    public var resident: Bool
    public var source: String
    /// A scheduled notification's thread (SPEC section 18): its app's
    /// notifications of one thread are a group of their own.
    public var threadID: String
    /// What the reply field says while empty, where the sender chose it.
    public var replyPlaceholder: String
    /// The same notifications sent before it that it stands for (0: none).
    public var duplicates: UInt32

    public static func == (a: NotificationEntry, b: NotificationEntry) -> Bool {
        a.id == b.id && a.appID == b.appID && a.appName == b.appName && a.appIcon == b.appIcon && a.summary == b.summary
            && a.body == b.body && a.actions.elementsEqual(b.actions, by: { $0 == $1 }) && a.urgency == b.urgency
            && a.category == b.category && a.time == b.time && a.isOpen == b.isOpen && a.imagePath == b.imagePath
            && a.value == b.value && a.resident == b.resident && a.source == b.source && a.threadID == b.threadID
            && a.replyPlaceholder == b.replyPlaceholder && a.duplicates == b.duplicates
    }

    /// The entry a notification's dictionary describes; nil without an id.
    public init?(_ values: [String: Value]) {
        guard let id = values["id"]?.int64.flatMap(UInt32.init(exactly:)), id != 0 else { return nil }
        self.id = id
        appID = values["app-id"]?.string ?? ""
        appName = values["app-name"]?.string ?? ""
        appIcon = values["app-icon"]?.string ?? ""
        summary = values["summary"]?.string ?? ""
        body = values["body"]?.string ?? ""
        actions = (values["actions"]?.elements ?? []).compactMap { pair in
            guard case .structure(let fields) = pair.unwrapped, fields.count == 2, let key = fields[0].string, let label = fields[1].string
            else { return nil }
            return (key, label)
        }
        urgency = values["urgency"]?.int64.flatMap { UInt8(exactly: $0) }.flatMap(TodayNotification.Urgency.init(rawValue:)) ?? .normal
        category = values["category"]?.string ?? ""
        time = values["time"]?.uint64 ?? 0
        isOpen = values["open"]?.bool ?? false
        imagePath = values["image-path"]?.string
        value = values["value"]?.int64.flatMap(Int32.init(exactly:))
        resident = values["resident"]?.bool ?? false
        source = values["source"]?.string ?? ""
        let hints = values["hints"].flatMap(VariantDictionary.init)?.dictionary ?? [:]
        threadID = hints["thread-id"]?.string ?? ""
        replyPlaceholder = hints["placeholder"]?.string ?? ""
        duplicates = values["duplicates"]?.int64.flatMap(UInt32.init(exactly:)) ?? 0
    }

    /// The entries of a `ListNotifications` reply (`aa{sv}`), newest first.
    public static func list(_ reply: Value) -> [NotificationEntry] {
        (reply.elements ?? []).compactMap { $0.stringDictionary.flatMap(NotificationEntry.init) }
    }

    /// The summary, with how many came where it stands for duplicates
    /// (StackDuplicates), as dunst's "(3)".
    public var countedSummary: String { duplicates > 0 ? "\(summary) (\(UInt64(duplicates) + 1))" : summary }

    /// The name a person knows the app by: its `app_name`, else its app id.
    public var appTitle: String { appName.isEmpty ? appID : appName }

    /// The body without markup, as a line of text shows it: tags dropped,
    /// the five XML entities read.
    public var plainBody: String { Self.plain(body) }

    public static func plain(_ markup: String) -> String {
        var out = ""
        var inTag = false
        for character in markup {
            switch character {
            case "<": inTag = true
            case ">" where inTag: inTag = false
            default: if !inTag { out.append(character) }
            }
        }
        for (entity, text) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'"), ("&amp;", "&")] {
            out = out.replacingScalars(entity, with: text)
        }
        return out
    }

    /// How long ago it came, as the list and a banner say it: `now`,
    /// `5 min ago`, `3 h ago`, `2 days ago`.
    public func age(at now: Date) -> String {
        let seconds = max(0, now.timeIntervalSince1970 - Double(time) / 1_000_000)
        switch seconds {
        case ..<60: return "now"
        case ..<3600: return "\(Int(seconds / 60)) min ago"
        case ..<86_400: return "\(Int(seconds / 3600)) h ago"
        default:
            let days = Int(seconds / 86_400)
            return "\(days) day\(days == 1 ? "" : "s") ago"
        }
    }

    /// The buttons a person presses: every action but `default` (a click
    /// on the notification itself) and `inline-reply` (the reply field).
    public var buttons: [(key: String, label: String)] {
        actions.filter { $0.key != "default" && $0.key != "inline-reply" }
    }

    /// The reply field's placeholder, where the notification takes a
    /// reply: the one its sender chose, else the action's label.
    public var replyLabel: String? {
        guard let action = actions.first(where: { $0.key == "inline-reply" }) else { return nil }
        if !replyPlaceholder.isEmpty { return replyPlaceholder }
        return action.label.isEmpty ? "Reply" : action.label
    }

    /// A group of the list: an app's notifications, or those of one of
    /// its threads.
    public struct Group: Sendable {
        public var appID: String
        public var threadID: String
        public var entries: [NotificationEntry]
        /// Tells the group from the others of the list.
        public var key: String { threadID.isEmpty ? appID : appID + "\n" + threadID }
    }

    /// `entries` (newest first) grouped as the list shows them: by app, a
    /// thread of an app's scheduled notifications as a group of its own;
    /// the group with the newest notification first, each newest first.
    public static func groups(_ entries: [NotificationEntry]) -> [Group] {
        var order: [String] = []
        var byKey: [String: Group] = [:]
        for entry in entries {
            let key = Group(appID: entry.appID, threadID: entry.threadID, entries: []).key
            if byKey[key] == nil {
                order.append(key)
                byKey[key] = Group(appID: entry.appID, threadID: entry.threadID, entries: [])
            }
            byKey[key]?.entries.append(entry)
        }
        return order.compactMap { byKey[$0] }
    }

    public var plist: PlistValue {
        var d: PlistDictionary = [
            "id": .unsigned(UInt64(id)), "app-id": .string(appID), "app-name": .string(appName), "app-icon": .string(appIcon),
            "summary": .string(summary), "body": .string(body),
            "actions": .array(actions.map { .dictionary(["key": .string($0.key), "label": .string($0.label)]) }),
            "urgency": .string(urgency.name), "category": .string(category), "time": .unsigned(time), "open": .boolean(isOpen),
            "resident": .boolean(resident), "source": .string(source),
        ]
        if let imagePath { d["image-path"] = .string(imagePath) }
        if let value { d["value"] = .integer(Int64(value)) }
        if !threadID.isEmpty { d["thread-id"] = .string(threadID) }
        if duplicates > 0 { d["duplicates"] = .unsigned(UInt64(duplicates)) }
        return .dictionary(d)
    }
}

extension TodayNotification.Urgency {
    /// `low`, `normal`, `critical`: as notify-send and the command line
    /// spell them.
    public var name: String {
        switch self {
        case .low: "low"
        case .normal: "normal"
        case .critical: "critical"
        }
    }

    public init?(name: String) {
        switch name {
        case "low", "0": self = .low
        case "normal", "1": self = .normal
        case "critical", "2": self = .critical
        default: return nil
        }
    }
}

/// The notification center as a bar module shows it (SPEC section 15): how
/// many are in the list, how many are unseen, Do Not Disturb, and the
/// latest, for the tooltip.
public struct NotificationCount: Equatable, Sendable {
    public var count: UInt32
    public var unseen: UInt32
    public var doNotDisturb: Bool
    /// When Do Not Disturb goes off by itself, as the tooltip says it
    /// (`18:00`); empty where it has no end.
    public var doNotDisturbUntil: String
    /// Newest first; the tooltip shows the first few.
    public var latest: [NotificationEntry]

    public init(count: UInt32, unseen: UInt32, doNotDisturb: Bool, doNotDisturbUntil: String = "", latest: [NotificationEntry]) {
        self.count = count
        self.unseen = unseen
        self.doNotDisturb = doNotDisturb
        self.doNotDisturbUntil = doNotDisturbUntil
        self.latest = latest
    }

    /// The module's classes: `none` (an empty list) or `unseen` (some
    /// added since the list was last seen), and `dnd` while Do Not
    /// Disturb is on. A list that has been seen has no class of its own.
    public var classes: [String] {
        var classes: [String] = []
        if count == 0 { classes.append("none") } else if unseen > 0 { classes.append("unseen") }
        if doNotDisturb { classes.append("dnd") }
        return classes
    }

    /// Waybar's `alt`, for `format-icons`: `none`, `unseen` or `seen`,
    /// `dnd-` in front while Do Not Disturb is on.
    public var alt: String {
        (doNotDisturb ? "dnd-" : "") + (count == 0 ? "none" : unseen > 0 ? "unseen" : "seen")
    }

    /// The text: the count, marked while Do Not Disturb is on.
    public var text: String { "\(count)" + (doNotDisturb ? " (DND)" : "") }

    public static let tooltipLines = 5

    public var tooltip: String {
        var lines: [String] = []
        lines.append(
            count == 0 ? "No notifications" : "\(count) notification\(count == 1 ? "" : "s")" + (unseen > 0 ? ", \(unseen) unseen" : ""))
        if doNotDisturb { lines.append("Do Not Disturb is on" + (doNotDisturbUntil.isEmpty ? "" : " until \(doNotDisturbUntil)")) }
        for entry in latest.prefix(Self.tooltipLines) {
            lines.append("\(entry.appTitle): \(entry.countedSummary)")
        }
        return lines.joined(separator: "\n")
    }
}
