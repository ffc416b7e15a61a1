import Glibc
import PropertyList
import TodayProtocol

/// A rule of the user's, in notifications.plist's `Rules`: the
/// notifications it matches get its settings over their app's policy.
/// dunst's rules, mako's criteria and SwayNotificationCenter's
/// notification-visibility do this: a music player's "now playing" kept
/// out of the list, a build's "failed" made critical, a chat's messages
/// kept open until read.
///
///     <dict>
///         <key>Match</key>
///         <dict><key>app-name</key><string>Spotify</string></dict>
///         <key>list</key><false/>
///     </dict>
struct NotificationRule: Equatable, Sendable {
    /// What a notification must have, every one of them: its fields
    /// against shell patterns (`fnmatch`, as dunst's rules match), its
    /// urgency as the app asked.
    struct Match: Equatable, Sendable {
        var appID: String?
        var appName: String?
        var summary: String?
        var body: String?
        var category: String?
        var urgency: TodayNotification.Urgency?
    }

    var match: Match
    /// What it sets; nil: as the app's policy says.
    var banners: Bool?
    var list: Bool?
    var sounds: Bool?
    var urgency: TodayNotification.Urgency?
    var timeout: Int32?

    func matches(_ notification: TodayNotification) -> Bool {
        func fits(_ pattern: String?, _ text: String) -> Bool { pattern.map { fnmatch($0, text, 0) == 0 } ?? true }
        return fits(match.appID, notification.appID) && fits(match.appName, notification.appName) && fits(match.summary, notification.summary)
            && fits(match.body, notification.body) && fits(match.category, notification.category)
            && (match.urgency.map { $0 == notification.urgency } ?? true)
    }

    func apply(to policy: inout NotificationSettings.Policy) {
        if let banners { policy.banners = banners }
        if let list { policy.list = list }
        if let sounds { policy.sounds = sounds }
        if let urgency { policy.urgency = urgency }
        if let timeout { policy.timeout = timeout }
    }

    static let matchKeys = ["app-id", "app-name", "summary", "body", "category", "urgency"]
    static let settingKeys = ["banners", "list", "sounds", "urgency", "timeout"]

    /// The rule `entry` (the `number`th of the file's, from 1) says, or nil
    /// with what is wrong with it in `problems`: a rule half understood
    /// would do what its writer did not ask.
    init?(_ entry: PlistValue, number: Int, problems: inout [String]) {
        let name = "Rules item \(number)"
        guard let rule = entry.dictionary else {
            problems.append("\(name) is not a dictionary; left out")
            return nil
        }
        var wrong: [String] = []
        func urgencyNamed(_ value: PlistValue) -> TodayNotification.Urgency? {
            if let name = value.string { return TodayNotification.Urgency(name: name) }
            return value.int64.flatMap { UInt8(exactly: $0) }.flatMap(TodayNotification.Urgency.init(rawValue:))
        }
        match = Match()
        if let given = rule["Match"]?.dictionary, !given.isEmpty {
            for (key, value) in given {
                switch key {
                case "urgency":
                    match.urgency = urgencyNamed(value)
                    if match.urgency == nil { wrong.append("Match.urgency must be low, normal or critical") }
                case "app-id", "app-name", "summary", "body", "category":
                    guard let pattern = value.string else {
                        wrong.append("Match.\(key) must be a string (a shell pattern, such as *failed*)")
                        continue
                    }
                    switch key {
                    case "app-id": match.appID = pattern
                    case "app-name": match.appName = pattern
                    case "summary": match.summary = pattern
                    case "body": match.body = pattern
                    default: match.category = pattern
                    }
                default:
                    wrong.append("Match has no key '\(key)' (\(Self.matchKeys.joined(separator: ", ")) are)")
                }
            }
        } else {
            wrong.append("Match must be a dictionary of what to match (\(Self.matchKeys.joined(separator: ", "))); for every app, set the default policy")
        }
        for (key, value) in rule where key != "Match" {
            switch key {
            case "banners", "list", "sounds":
                guard let flag = value.bool else {
                    wrong.append("\(key) must be true or false")
                    continue
                }
                switch key {
                case "banners": banners = flag
                case "list": list = flag
                default: sounds = flag
                }
            case "urgency":
                urgency = urgencyNamed(value)
                if urgency == nil { wrong.append("urgency must be low, normal or critical") }
            case "timeout":
                guard let milliseconds = value.int64.flatMap({ Int32(exactly: $0) }), milliseconds >= 0 else {
                    wrong.append("timeout must be milliseconds (0 for until dismissed)")
                    continue
                }
                timeout = milliseconds
            default:
                wrong.append("there is no setting '\(key)' (\(Self.settingKeys.joined(separator: ", ")) are)")
            }
        }
        guard wrong.isEmpty else {
            problems.append("\(name): \(wrong.joined(separator: "; ")); the rule is left out")
            return nil
        }
    }
}

extension NotificationSettings {
    /// What `notification` may do: its app's policy, then each rule that
    /// matches it, in the file's order (a later one wins).
    func policy(for notification: TodayNotification) -> Policy {
        var policy = policy(for: notification.appID)
        for rule in rules where rule.matches(notification) { rule.apply(to: &policy) }
        return policy
    }
}
