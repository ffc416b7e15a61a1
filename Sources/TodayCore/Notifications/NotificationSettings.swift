import DBus
import FoundationEssentials
import PropertyList
import TodayProtocol

/// The user's notification settings (SPEC section 14): Do Not Disturb, its
/// daily schedule and the policies per app, kept in
/// `$XDG_CONFIG_HOME/todayd/notifications.plist`. Plain values: what a
/// policy does to a notification is `NotificationBook.post`'s.
struct NotificationSettings: Equatable, Sendable {
    /// What an app's notifications may do; the app `""` is every app's default.
    struct Policy: Equatable, Sendable {
        var banners = true
        /// Kept in the list (else shown and gone, as a transient one).
        var list = true
        var sounds = true
        /// In place of the urgency the app asks for.
        var urgency: TodayNotification.Urgency?
        /// How long its notifications stay open, in milliseconds (0: until
        /// dismissed), in place of the time the app asks for (dunst's
        /// rule `timeout`, mako's `default-timeout` with `ignore-timeout`);
        /// nil: as the app asks.
        var timeout: Int32? = nil
    }

    var doNotDisturb = false
    /// When Do Not Disturb goes off by itself (iOS's "for 1 hour", Plasma's
    /// "until tomorrow morning"), in whole seconds; nil: when turned off.
    /// Set only while `doNotDisturb` is.
    var doNotDisturbUntil: Date?
    /// Daily from, to, `HH:MM` local time; empty: none.
    var scheduleFrom = ""
    var scheduleTo = ""
    var policies: [String: Policy] = [:]
    /// The player of notification sounds and its options, before the
    /// file (`SoundCommand`); empty: the first of pw-play, paplay and mpv.
    var soundCommand: [String] = []
    /// The sound theme names are looked up in (`SoundTheme`); empty:
    /// `freedesktop`.
    var soundTheme = ""
    /// A program and its arguments run for each notification posted
    /// (`NotifyCommand`); empty: none.
    var notifyCommand: [String] = []
    /// Where the banners show (`BannerPosition`).
    var bannerPosition = BannerPosition.topRight
    /// At most this many banners at once (`BannerLimit`, mako's
    /// `max-visible`, dunst's `notification_limit`), 1 to SPEC's 3.
    var bannerLimit = Self.mostBanners
    static let mostBanners = 3
    /// At most this many notifications in the list (`ListLimit`, dunst's
    /// `history_length`, mako's `max-history`), 1 to `mostListed`.
    var listLimit = NotificationBook.defaultCapacity
    static let mostListed = 10_000
    /// The output the banners show on, by its name (`BannerOutput`); empty:
    /// the compositor's choice.
    var bannerOutput = ""
    /// Seconds without input after which the banners hold expiry until
    /// the user is back (`IdleThreshold`, dunst's `idle_threshold`); 0:
    /// never.
    var idleThreshold = Self.defaultIdleThreshold
    static let defaultIdleThreshold: UInt32 = 120
    /// A notification the same as an open one of its app takes its place
    /// and counts it (`StackDuplicates`, dunst's `stack_duplicates`).
    var stackDuplicates = false
    /// The user's rules (`Rules`), in the file's order.
    var rules: [NotificationRule] = []
    /// What the file holds besides what is read into these settings:
    /// `Rules` as written (a rule left out for a mistake stays for the
    /// user to fix), keys of a later todayd, the user's own. Written back
    /// as they are.
    var kept = PlistDictionary()

    /// The keys read into the settings' own fields.
    static let readKeys: Set<String> = [
        "DoNotDisturb", "DoNotDisturbUntil", "DoNotDisturbFrom", "DoNotDisturbTo", "AppPolicies", "SoundCommand", "SoundTheme", "NotifyCommand",
        "BannerPosition", "BannerOutput", "StackDuplicates", "IdleThreshold", "ListLimit", "BannerLimit",
    ]

    /// The policy of `appID`: its own, else the default one, else all allowed.
    func policy(for appID: String) -> Policy {
        policies[appID] ?? policies[""] ?? Policy()
    }

    /// Whether `name` can be an output's name: at most 255 bytes, no
    /// control characters (empty: none).
    static func isOutputName(_ name: String) -> Bool {
        name.utf8.count < 256 && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Minutes since midnight of `text` (`HH:MM`), or nil.
    static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }

    /// A Do Not Disturb schedule is set (`isQuiet` then needs the minute).
    var hasSchedule: Bool { !scheduleFrom.isEmpty && !scheduleTo.isEmpty }

    /// Whether banners are held back at `minute` of the local day (0 to
    /// 1439): Do Not Disturb is on, or the minute is inside the schedule
    /// (which may run past midnight: 22:00 to 07:00).
    func isQuiet(atMinute minute: Int) -> Bool {
        if doNotDisturb { return true }
        guard hasSchedule, let from = Self.minutes(scheduleFrom), let to = Self.minutes(scheduleTo), from != to else { return false }
        return from < to ? (from..<to).contains(minute) : (minute >= from || minute < to)
    }

    /// Do Not Disturb on until `until` (DoNotDisturbUntil's `t`, µs since
    /// the epoch), or, for 0, on until turned off where it is on; InvalidArgs
    /// for a time already past.
    mutating func setDoNotDisturb(until microseconds: UInt64, now: Date) throws {
        guard microseconds != 0 else {
            doNotDisturbUntil = nil
            return
        }
        let until: Date
        do {
            until = try ValueMapping.date(microseconds: microseconds)
        } catch {
            throw TodayError.invalidArgs("DoNotDisturbUntil: \(error)")
        }
        guard until > now else {
            throw TodayError.invalidArgs(
                "DoNotDisturbUntil must be later than now (microseconds since 1970, whole seconds count), or 0 for until turned off; \(microseconds) has passed")
        }
        doNotDisturb = true
        doNotDisturbUntil = until
    }

    /// When Do Not Disturb, on, goes off by itself; nil where it is off
    /// or has no end.
    var doNotDisturbEnd: Date? { doNotDisturb ? doNotDisturbUntil : nil }

    /// DoNotDisturbUntil's `t`: 0 where Do Not Disturb has no end.
    var doNotDisturbUntilValue: Value { .uint64(doNotDisturbEnd.map(ValueMapping.microseconds) ?? 0) }

    /// The schedule from DoNotDisturbSchedule's `(ss)`; InvalidArgs saying what is wrong.
    static func schedule(_ value: Value) throws -> (from: String, to: String) {
        guard case .structure(let fields) = value, fields.count == 2, let from = fields[0].string, let to = fields[1].string else {
            throw TodayError.invalidArgs("DoNotDisturbSchedule is (ss): from and to, HH:MM")
        }
        if from.isEmpty && to.isEmpty { return ("", "") }
        guard minutes(from) != nil, minutes(to) != nil else {
            throw TodayError.invalidArgs("DoNotDisturbSchedule needs two times of the form HH:MM (00:00 to 23:59), or (\"\", \"\") for none; got (\(from), \(to))")
        }
        return (from, to)
    }

    /// SetAppPolicy's dictionary as a policy; nil for an empty one (remove
    /// the app's policy); InvalidArgs naming the key that is wrong.
    static func policy(_ entries: [String: Value]) throws -> Policy? {
        guard !entries.isEmpty else { return nil }
        var policy = Policy()
        for (key, value) in entries {
            switch (key, value) {
            case ("banners", .boolean(let on)): policy.banners = on
            case ("list", .boolean(let on)): policy.list = on
            case ("sounds", .boolean(let on)): policy.sounds = on
            case ("urgency", .byte(let level)):
                guard let urgency = TodayNotification.Urgency(rawValue: level) else {
                    throw TodayError.invalidArgs("policy key 'urgency' must be 0, 1 or 2, not \(level)")
                }
                policy.urgency = urgency
            case ("timeout", .int32(let milliseconds)):
                guard milliseconds >= 0 else {
                    throw TodayError.invalidArgs("policy key 'timeout' is milliseconds, 0 for until dismissed, not \(milliseconds); leave it out for the time the app asks")
                }
                policy.timeout = milliseconds
            case ("banners", _), ("list", _), ("sounds", _):
                throw TodayError.invalidArgs("policy key '\(key)' must be a boolean (b)")
            case ("urgency", _):
                throw TodayError.invalidArgs("policy key 'urgency' must be a byte (y)")
            case ("timeout", _):
                throw TodayError.invalidArgs("policy key 'timeout' must be an int32 (i) of milliseconds")
            default:
                throw TodayError.invalidArgs("no policy key '\(key)': banners, list, sounds (b), urgency (y) and timeout (i) are")
            }
        }
        return policy
    }

    static func entries(_ policy: Policy) -> [(String, Value)] {
        var entries: [(String, Value)] = [("banners", .boolean(policy.banners)), ("list", .boolean(policy.list)), ("sounds", .boolean(policy.sounds))]
        if let urgency = policy.urgency { entries.append(("urgency", .byte(urgency.rawValue))) }
        if let timeout = policy.timeout { entries.append(("timeout", .int32(timeout))) }
        return entries
    }

    /// AppPolicies' `a{sa{sv}}`.
    var policiesValue: Value {
        .dictionary(
            key: .string, value: .dictionary(key: .string, value: .variant),
            policies.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .vardict(Self.entries($0.value))) })
    }

    // MARK: The file

    var plist: PlistDictionary {
        var apps = PlistDictionary()
        for (app, policy) in policies.sorted(by: { $0.key < $1.key }) {
            var entry: PlistDictionary = ["banners": .boolean(policy.banners), "list": .boolean(policy.list), "sounds": .boolean(policy.sounds)]
            if let urgency = policy.urgency { entry["urgency"] = .integer(Int64(urgency.rawValue)) }
            if let timeout = policy.timeout { entry["timeout"] = .integer(Int64(timeout)) }
            apps[app] = .dictionary(entry)
        }
        var plist = kept
        plist["DoNotDisturb"] = .boolean(doNotDisturb)
        plist["DoNotDisturbFrom"] = .string(scheduleFrom)
        plist["DoNotDisturbTo"] = .string(scheduleTo)
        plist["AppPolicies"] = .dictionary(apps)
        // Written where set: a file without them means the defaults.
        if !soundCommand.isEmpty { plist["SoundCommand"] = .array(soundCommand.map(PlistValue.string)) }
        if !soundTheme.isEmpty { plist["SoundTheme"] = .string(soundTheme) }
        if !notifyCommand.isEmpty { plist["NotifyCommand"] = .array(notifyCommand.map(PlistValue.string)) }
        if bannerPosition != .topRight { plist["BannerPosition"] = .string(bannerPosition.rawValue) }
        if stackDuplicates { plist["StackDuplicates"] = .boolean(true) }
        if !bannerOutput.isEmpty { plist["BannerOutput"] = .string(bannerOutput) }
        if bannerLimit != Self.mostBanners { plist["BannerLimit"] = .integer(Int64(bannerLimit)) }
        if listLimit != NotificationBook.defaultCapacity { plist["ListLimit"] = .integer(Int64(listLimit)) }
        if idleThreshold != Self.defaultIdleThreshold { plist["IdleThreshold"] = .integer(Int64(idleThreshold)) }
        if let end = doNotDisturbEnd { plist["DoNotDisturbUntil"] = .date(end) }
        return plist
    }

    /// The settings a file holds; what it holds wrong is named in `problems`.
    init(plist: PlistDictionary, problems: inout [String]) {
        for (key, value) in plist where !Self.readKeys.contains(key) { kept[key] = value }
        if let written = plist["Rules"] {
            if let list = written.array {
                rules = list.enumerated().compactMap { NotificationRule($1, number: $0 + 1, problems: &problems) }
            } else {
                problems.append("Rules must be a list of rules, each a dictionary with Match; no rule applies")
            }
        }
        doNotDisturb = plist["DoNotDisturb"]?.bool ?? false
        if let until = plist["DoNotDisturbUntil"], doNotDisturb {
            if let date = until.date {
                doNotDisturbUntil = date
            } else {
                problems.append("DoNotDisturbUntil must be a date (<date>2026-12-07T18:00:00Z</date>); Do Not Disturb stays on until turned off")
            }
        }
        scheduleFrom = plist["DoNotDisturbFrom"]?.string ?? ""
        scheduleTo = plist["DoNotDisturbTo"]?.string ?? ""
        if (!scheduleFrom.isEmpty || !scheduleTo.isEmpty), Self.minutes(scheduleFrom) == nil || Self.minutes(scheduleTo) == nil {
            problems.append("DoNotDisturbFrom and DoNotDisturbTo must be HH:MM; the schedule is off")
            scheduleFrom = ""
            scheduleTo = ""
        }
        soundCommand = Self.command(
            plist["SoundCommand"], problems: &problems,
            "SoundCommand must be a list of strings, the program first (such as pw-play); sounds play with the first player found")
        notifyCommand = Self.command(
            plist["NotifyCommand"], problems: &problems,
            "NotifyCommand must be a list of strings, the program first (such as /home/me/bin/on-notify); no command runs")
        if let theme = plist["SoundTheme"] {
            if let name = theme.string, !name.contains("/") {
                soundTheme = name
            } else {
                problems.append("SoundTheme must be the name of a sound theme (a folder of sounds/), such as freedesktop; freedesktop it is")
            }
        }
        if let written = plist["StackDuplicates"] {
            if let on = written.bool {
                stackDuplicates = on
            } else {
                problems.append("StackDuplicates must be true or false (<true/>); duplicates are not stacked")
            }
        }
        if let written = plist["BannerLimit"] {
            if let limit = written.int64.flatMap({ Int(exactly: $0) }), (1...Self.mostBanners).contains(limit) {
                bannerLimit = limit
            } else {
                problems.append("BannerLimit must be 1, 2 or 3 (<integer>1</integer>); up to 3 banners show at once")
            }
        }
        if let written = plist["ListLimit"] {
            if let limit = written.int64.flatMap({ Int(exactly: $0) }), (1...Self.mostListed).contains(limit) {
                listLimit = limit
            } else {
                problems.append(
                    "ListLimit must be a number of notifications from 1 to \(Self.mostListed) (<integer>100</integer>); the list keeps \(NotificationBook.defaultCapacity)")
            }
        }
        if let written = plist["BannerOutput"] {
            if let name = written.string, Self.isOutputName(name) {
                bannerOutput = name
            } else {
                problems.append("BannerOutput must be an output's name, such as DP-1 (swaymsg -t get_outputs, xrandr); the banners show where the compositor puts them")
            }
        }
        if let written = plist["IdleThreshold"] {
            if let seconds = written.int64.flatMap({ UInt32(exactly: $0) }) {
                idleThreshold = seconds
            } else {
                problems.append("IdleThreshold must be a number of seconds (<integer>300</integer>; 0 for never); the banners hold after \(Self.defaultIdleThreshold)")
            }
        }
        if let written = plist["BannerPosition"] {
            if let position = written.string.flatMap(BannerPosition.init(rawValue:)) {
                bannerPosition = position
            } else {
                problems.append("BannerPosition must be \(BannerPosition.choices); the banners show at the top-right")
            }
        }
        for (app, value) in plist["AppPolicies"]?.dictionary ?? [:] {
            guard let entry = value.dictionary else {
                problems.append("AppPolicies.\(app) is not a dictionary; left out")
                continue
            }
            var policy = Policy()
            policy.banners = entry["banners"]?.bool ?? true
            policy.list = entry["list"]?.bool ?? true
            policy.sounds = entry["sounds"]?.bool ?? true
            if let urgency = entry["urgency"] {
                policy.urgency = urgency.int64.flatMap { UInt8(exactly: $0) }.flatMap(TodayNotification.Urgency.init(rawValue:))
                if policy.urgency == nil {
                    problems.append("AppPolicies.\(app).urgency must be 0 (low), 1 (normal) or 2 (critical); its notifications keep the urgency the app asks")
                }
            }
            if let timeout = entry["timeout"] {
                if let milliseconds = timeout.int64.flatMap({ Int32(exactly: $0) }), milliseconds >= 0 {
                    policy.timeout = milliseconds
                } else {
                    problems.append("AppPolicies.\(app).timeout must be milliseconds (0 for until dismissed); its notifications expire as the app asks")
                }
            }
            policies[app] = policy
        }
    }

    init() {}

    /// A command as the file lists it: the program, then its arguments.
    /// An empty list is none, as no list is; anything else is `problem`.
    private static func command(_ value: PlistValue?, problems: inout [String], _ problem: String) -> [String] {
        guard let value, value.array?.isEmpty != true else { return [] }
        let words = value.array?.compactMap(\.string) ?? []
        guard words.count == value.array?.count, let program = words.first, !program.isEmpty else {
            problems.append(problem)
            return []
        }
        return words
    }
}
