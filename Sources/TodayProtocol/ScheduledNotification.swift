import DBus
import FoundationEssentials

// What an app hands todayd to be notified of later, the iOS way (SPEC
// section 18): a request's content, its trigger, the app's categories of
// actions, and the response that goes back to the app. todayd, TodayKit
// and todayctl read and write these dictionaries here only.

/// UNNotificationContent as `Schedule` carries it.
public struct ScheduledContent: Sendable, Equatable {
    /// How strongly the notification asks for attention.
    public enum InterruptionLevel: String, Sendable, CaseIterable {
        /// In the list only: no banner.
        case passive
        case active
        /// A banner even during Do Not Disturb.
        case timeSensitive = "time-sensitive"
        /// Critical urgency: a banner that stays until acted on.
        case critical
    }

    public var title = ""
    public var subtitle = ""
    public var body = ""
    /// Groups the app's notifications in the list.
    public var threadID = ""
    /// The app's category (SetCategories) whose actions it shows.
    public var category = ""
    /// Handed back with the response.
    public var userInfo = VariantDictionary([])
    /// A PNG file's bytes.
    public var image: Data?
    /// Opened (as OpenURL) by the default action.
    public var url: String?
    public var interruptionLevel = InterruptionLevel.active
    /// The sound it plays: `default`, `default-critical`, or the name of a
    /// sound file of the app's (in its container's `Library/Sounds/`, or
    /// its bundle); empty for none.
    public var sound = ""

    public init() {}

    /// UNNotificationSound.default and .defaultCritical as `sound` has them.
    public static let defaultSound = "default"
    public static let defaultCriticalSound = "default-critical"

    /// Longest user-info, as D-Bus bytes, and picture.
    public static let longestUserInfo = 64 * 1024
    public static let largestImage = 1024 * 1024

    /// The keys `Schedule` reads.
    public static let keys = ["title", "subtitle", "body", "thread-id", "category", "user-info", "image", "url", "interruption-level", "sound"]

    /// The content as `Schedule` and `PendingRequests` carry it.
    public var dictionary: VariantDictionary {
        var entries: [(String, Value)] = [("title", .string(title))]
        if !subtitle.isEmpty { entries.append(("subtitle", .string(subtitle))) }
        if !body.isEmpty { entries.append(("body", .string(body))) }
        if !threadID.isEmpty { entries.append(("thread-id", .string(threadID))) }
        if !category.isEmpty { entries.append(("category", .string(category))) }
        if !userInfo.entries.isEmpty { entries.append(("user-info", userInfo.value)) }
        if let image { entries.append(("image", .bytes(image))) }
        if let url { entries.append(("url", .string(url))) }
        if interruptionLevel != .active { entries.append(("interruption-level", .string(interruptionLevel.rawValue))) }
        if !sound.isEmpty { entries.append(("sound", .string(sound))) }
        return VariantDictionary(entries)
    }

    /// Reads `Schedule`'s content; the problem, naming the key, where a
    /// value is of the wrong type or out of bounds.
    public init(_ dictionary: VariantDictionary) throws(ScheduleProblem) {
        for (key, value) in dictionary.entries {
            switch key {
            case "title": title = try Self.text(value, key)
            case "subtitle": subtitle = try Self.text(value, key)
            case "body": body = try Self.text(value, key)
            case "thread-id": threadID = try Self.text(value, key)
            case "category": category = try Self.text(value, key)
            case "url":
                let text = try Self.text(value, key)
                if !text.isEmpty { url = text }
            case "user-info":
                guard let info = VariantDictionary(value) else { throw ScheduleProblem("content 'user-info' must be a{sv}, not \(value.type.signature)") }
                let size = (try? info.value.wireBytes().count) ?? .max
                guard size <= Self.longestUserInfo else {
                    throw ScheduleProblem("content 'user-info' is \(size) bytes; at most \(Self.longestUserInfo) are kept")
                }
                userInfo = info
            case "image":
                guard case .bytes(let data) = value else { throw ScheduleProblem("content 'image' must be ay (a PNG file's bytes), not \(value.type.signature)") }
                guard data.count <= Self.largestImage else {
                    throw ScheduleProblem("content 'image' is \(data.count) bytes; at most \(Self.largestImage) are taken")
                }
                guard data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
                    throw ScheduleProblem("content 'image' is not a PNG file; send the bytes of one")
                }
                image = data
            case "interruption-level":
                let text = try Self.text(value, key)
                guard let level = InterruptionLevel(rawValue: text) else {
                    throw ScheduleProblem(
                        "content 'interruption-level' is '\(text)'; it is one of \(InterruptionLevel.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                interruptionLevel = level
            case "sound":
                let text = try Self.text(value, key)
                guard text.utf8.count <= 255, !text.contains("/"), text != ".", text != "..", !text.utf8.contains(0) else {
                    throw ScheduleProblem(
                        "content 'sound' is '\(text.prefix(100))'; it is '\(Self.defaultSound)', '\(Self.defaultCriticalSound)' or the name of a sound file of the app's (no folder)")
                }
                sound = text
            default:
                throw ScheduleProblem("content has no key '\(key)'; the keys are \(Self.keys.joined(separator: ", "))")
            }
        }
        guard !(title.isEmpty && body.isEmpty) else { throw ScheduleProblem("content needs a 'title' or a 'body'") }
    }

    static func text(_ value: Value, _ key: String) throws(ScheduleProblem) -> String {
        guard case .string(let text) = value else { throw ScheduleProblem("content '\(key)' must be a string, not \(value.type.signature)") }
        return text
    }
}

/// What is wrong with a request, a trigger or a category, said to the
/// caller as InvalidArgs.
public struct ScheduleProblem: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// When a request is delivered: UNTimeIntervalNotificationTrigger and
/// UNCalendarNotificationTrigger, or at once.
public enum ScheduledTrigger: Sendable, Equatable {
    case now
    /// `seconds` after it was scheduled; again every `seconds` (60 at
    /// least) where it repeats.
    case interval(seconds: Double, repeats: Bool)
    /// The next local time that matches; every such time where it repeats.
    case calendar(DateMatch, repeats: Bool)

    /// The shortest interval of a repeating trigger, as iOS has it.
    public static let shortestRepeat = 60.0

    public var repeats: Bool {
        switch self {
        case .now: false
        case .interval(_, let repeats), .calendar(_, let repeats): repeats
        }
    }

    /// The trigger as `Schedule` and `PendingRequests` carry it.
    public var dictionary: VariantDictionary {
        switch self {
        case .now: VariantDictionary([])
        case .interval(let seconds, let repeats): VariantDictionary([("after", .double(seconds)), ("repeats", .boolean(repeats))])
        case .calendar(let match, let repeats): VariantDictionary([("date", match.dictionary.value), ("repeats", .boolean(repeats))])
        }
    }

    /// Reads `Schedule`'s trigger: `{}` (now), `{after, repeats}` or
    /// `{date, repeats}`.
    public init(_ dictionary: VariantDictionary) throws(ScheduleProblem) {
        let values = dictionary.dictionary
        for key in values.keys where !["after", "date", "repeats"].contains(key) {
            throw ScheduleProblem("trigger has no key '\(key)'; it takes 'after' (seconds) or 'date' (a{sv}), and 'repeats'")
        }
        var repeats = false
        if let value = values["repeats"] {
            guard case .boolean(let flag) = value else { throw ScheduleProblem("trigger 'repeats' must be b, not \(value.type.signature)") }
            repeats = flag
        }
        switch (values["after"], values["date"]) {
        case (nil, nil):
            guard !repeats else { throw ScheduleProblem("a trigger that repeats needs 'after' or 'date'") }
            self = .now
        case (let after?, nil):
            guard let seconds = Self.number(after), seconds.isFinite, seconds > 0 else {
                throw ScheduleProblem("trigger 'after' must be a number of seconds above 0 (t, u, i or d)")
            }
            guard !repeats || seconds >= Self.shortestRepeat else {
                throw ScheduleProblem("a repeating trigger's 'after' is \(seconds) s; it must be at least \(Int(Self.shortestRepeat)) s")
            }
            guard seconds <= 100 * 366 * 86_400 else { throw ScheduleProblem("trigger 'after' is more than a hundred years") }
            self = .interval(seconds: seconds, repeats: repeats)
        case (nil, let date?):
            guard let entries = VariantDictionary(date) else { throw ScheduleProblem("trigger 'date' must be a{sv}, not \(date.type.signature)") }
            self = .calendar(try DateMatch(entries), repeats: repeats)
        case (_?, _?):
            throw ScheduleProblem("a trigger takes 'after' or 'date', not both")
        }
    }

    static func number(_ value: Value) -> Double? {
        switch value {
        case .double(let d): d
        default: value.int64.map(Double.init) ?? value.uint64.map(Double.init)
        }
    }
}

/// The date components a calendar trigger matches (DateComponents as
/// UNCalendarNotificationTrigger reads them): those given must match; of
/// the time of day, those below the smallest one given are 0 (`hour: 8` is
/// 08:00:00, `weekday: 2` is Monday at midnight) and those above it are
/// free (`minute: 30` is every hour at half past).
public struct DateMatch: Sendable, Equatable {
    public var year: Int?
    public var month: Int?
    public var day: Int?
    /// 1 Sunday to 7 Saturday, as Foundation's Calendar counts.
    public var weekday: Int?
    public var hour: Int?
    public var minute: Int?
    public var second: Int?
    /// An IANA time zone; nil: the local one.
    public var timeZone: String?

    public init(
        year: Int? = nil, month: Int? = nil, day: Int? = nil, weekday: Int? = nil, hour: Int? = nil, minute: Int? = nil, second: Int? = nil,
        timeZone: String? = nil
    ) {
        self.year = year
        self.month = month
        self.day = day
        self.weekday = weekday
        self.hour = hour
        self.minute = minute
        self.second = second
        self.timeZone = timeZone
    }

    static let bounds: [(key: String, range: ClosedRange<Int>)] = [
        ("year", 1970...9999), ("month", 1...12), ("day", 1...31), ("weekday", 1...7), ("hour", 0...23), ("minute", 0...59), ("second", 0...59),
    ]

    public var dictionary: VariantDictionary {
        let values = [year, month, day, weekday, hour, minute, second]
        var entries: [(String, Value)] = zip(Self.bounds, values).compactMap { bound, value in
            value.map { (bound.key, .int32(Int32(clamping: $0))) }
        }
        if let timeZone { entries.append(("time-zone", .string(timeZone))) }
        return VariantDictionary(entries)
    }

    public init(_ dictionary: VariantDictionary) throws(ScheduleProblem) {
        var values: [String: Int] = [:]
        for (key, value) in dictionary.entries {
            if key == "time-zone" {
                guard case .string(let name) = value, TimeZone(identifier: name) != nil else {
                    throw ScheduleProblem("trigger date 'time-zone' must name a time zone of the tz database, such as Europe/Berlin")
                }
                timeZone = name
                continue
            }
            guard let bound = Self.bounds.first(where: { $0.key == key }) else {
                throw ScheduleProblem("trigger date has no key '\(key)'; the keys are \(Self.bounds.map(\.key).joined(separator: ", ")), time-zone")
            }
            guard let number = value.int64, let int = Int(exactly: number), bound.range.contains(int) else {
                throw ScheduleProblem("trigger date '\(key)' must be a whole number from \(bound.range.lowerBound) to \(bound.range.upperBound)")
            }
            values[key] = int
        }
        guard !values.isEmpty else { throw ScheduleProblem("trigger 'date' needs at least one of \(Self.bounds.map(\.key).joined(separator: ", "))") }
        (year, month, day, weekday) = (values["year"], values["month"], values["day"], values["weekday"])
        (hour, minute, second) = (values["hour"], values["minute"], values["second"])
    }

    /// The first instant after `date` whose local time in `zone` (or the
    /// match's own zone) matches; nil where none comes within 400 years.
    /// A local time that does not exist that day (skipped by a change to
    /// daylight saving time) matches the first instant after the gap; one
    /// that exists twice matches its first occurrence only.
    public func nextDate(after date: Date, in zone: TimeZone) -> Date? {
        let zone = timeZone.flatMap(TimeZone.init(identifier:)) ?? zone
        let after = Int64(date.timeIntervalSince1970.rounded(.down))
        let offset = Int64(zone.secondsFromGMT(for: date))
        let firstDay = Self.floorDivide(after + offset, 86_400) - 1
        // Of the time of day: given; else free where a smaller part is
        // given; else 0.
        let seconds = second.map { [$0] } ?? [0]
        let minutes = minute.map { [$0] } ?? (second != nil ? Array(0...59) : [0])
        let hours = hour.map { [$0] } ?? (minute != nil || second != nil ? Array(0...23) : [0])
        // 400 years hold every combination of the Gregorian calendar.
        for dayNumber in firstDay..<(firstDay + 146_097 + 2) {
            let (y, m, d) = Self.civil(dayNumber)
            if let year, y > year { return nil }
            guard year.map({ $0 == y }) ?? true, month.map({ $0 == m }) ?? true, day.map({ $0 == d }) ?? true,
                weekday.map({ $0 == Self.weekday(dayNumber) }) ?? true
            else { continue }
            for h in hours {
                for mi in minutes {
                    for s in seconds {
                        let wall = dayNumber * 86_400 + Int64(h * 3600 + mi * 60 + s)
                        let instant = Self.instant(wall: wall, in: zone)
                        if instant > after { return Date(timeIntervalSince1970: Double(instant)) }
                    }
                }
            }
        }
        return nil
    }

    /// The instant whose local time in `zone` is `wall` (seconds as if the
    /// zone were UTC): the first of two, or where it falls in a gap, the
    /// end of the gap.
    static func instant(wall: Int64, in zone: TimeZone) -> Int64 {
        func offset(_ instant: Int64) -> Int64 { Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant)))) }
        let before = offset(wall - 86_400)
        let after = offset(wall + 86_400)
        var found: Int64?
        for candidate in Set([before, after]) {
            let instant = wall - candidate
            if offset(instant) == candidate { found = min(found ?? instant, instant) }
        }
        if let found { return found }
        // A gap: the clocks jumped from `before` to `after` in between.
        var low = wall - max(before, after)
        var high = wall - min(before, after)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if offset(middle) == before { low = middle } else { high = middle }
        }
        return high
    }

    /// The day number (days since 1970-01-01) as year, month, day of the
    /// proleptic Gregorian calendar (Howard Hinnant's civil_from_days).
    static func civil(_ days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    /// 1 Sunday to 7 Saturday (1970-01-01 was a Thursday).
    static func weekday(_ days: Int64) -> Int {
        Int((days + 4) % 7 + 7) % 7 + 1
    }

    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }
}

/// UNNotificationCategory: the actions an app's notifications of that
/// category show.
public struct ScheduledCategory: Sendable, Equatable {
    public struct Action: Sendable, Equatable {
        public var id: String
        public var title: String
        /// Brings the app forward.
        public var foreground = false
        public var destructive = false
        /// Asks for text (UNTextInputNotificationAction).
        public var textInput = false
        public var placeholder = ""

        public init(id: String, title: String, foreground: Bool = false, destructive: Bool = false, textInput: Bool = false, placeholder: String = "") {
            self.id = id
            self.title = title
            self.foreground = foreground
            self.destructive = destructive
            self.textInput = textInput
            self.placeholder = placeholder
        }

        public var dictionary: VariantDictionary {
            var entries: [(String, Value)] = [("id", .string(id)), ("title", .string(title))]
            if foreground { entries.append(("foreground", .boolean(true))) }
            if destructive { entries.append(("destructive", .boolean(true))) }
            if textInput { entries.append(("text-input", .boolean(true))) }
            if !placeholder.isEmpty { entries.append(("placeholder", .string(placeholder))) }
            return VariantDictionary(entries)
        }
    }

    public var id: String
    public var actions: [Action]

    public init(id: String, actions: [Action]) {
        self.id = id
        self.actions = actions
    }

    /// The action ids the center keeps for itself.
    public static let reservedActions: Set<String> = ["default", "inline-reply"]

    public var dictionary: VariantDictionary {
        VariantDictionary([("id", .string(id)), ("actions", .array(.dictionary(key: .string, value: .variant), actions.map(\.dictionary.value)))])
    }

    /// Reads one of SetCategories' dictionaries.
    public init(_ dictionary: VariantDictionary) throws(ScheduleProblem) {
        let values = dictionary.dictionary
        guard case .string(let id)? = values["id"], !id.isEmpty else { throw ScheduleProblem("a category needs an 'id' (s)") }
        self.id = id
        actions = []
        var texts = 0
        for element in values["actions"]?.elements ?? [] {
            guard let entries = VariantDictionary(element)?.dictionary, case .string(let actionID)? = entries["id"], !actionID.isEmpty,
                case .string(let title)? = entries["title"]
            else { throw ScheduleProblem("category '\(id)': each action needs an 'id' and a 'title' (s)") }
            guard !Self.reservedActions.contains(actionID), !actions.contains(where: { $0.id == actionID }) else {
                throw ScheduleProblem("category '\(id)': action id '\(actionID)' is taken (given twice, or one of \(Self.reservedActions.sorted()))")
            }
            var action = Action(id: actionID, title: title)
            action.foreground = entries["foreground"]?.bool ?? false
            action.destructive = entries["destructive"]?.bool ?? false
            action.textInput = entries["text-input"]?.bool ?? false
            action.placeholder = entries["placeholder"]?.string ?? ""
            if action.textInput { texts += 1 }
            actions.append(action)
        }
        guard texts <= 1 else { throw ScheduleProblem("category '\(id)' has \(texts) text-input actions; a notification has one reply field") }
        guard actions.count <= 8 else { throw ScheduleProblem("category '\(id)' has \(actions.count) actions; at most 8 are shown") }
    }
}

/// What the app receives through org.freedesktop.Application.ActivateAction
/// when the user answers one of its notifications.
public struct NotificationResponse: Sendable, Equatable {
    /// The action name the app is called with.
    public static let actionName = "notification-response"

    public var requestID: String
    /// `default` for the notification itself, else the category action's id.
    public var actionID: String
    /// What the user typed, for a text-input action.
    public var userText: String?
    public var userInfo: VariantDictionary

    public init(requestID: String, actionID: String, userText: String? = nil, userInfo: VariantDictionary = VariantDictionary([])) {
        self.requestID = requestID
        self.actionID = actionID
        self.userText = userText
        self.userInfo = userInfo
    }

    /// ActivateAction's parameter.
    public var dictionary: VariantDictionary {
        var entries: [(String, Value)] = [("request-id", .string(requestID)), ("action-id", .string(actionID)), ("user-info", userInfo.value)]
        if let userText { entries.append(("user-text", .string(userText))) }
        return VariantDictionary(entries)
    }

    public init?(_ dictionary: VariantDictionary) {
        let values = dictionary.dictionary
        guard let requestID = values["request-id"]?.string, let actionID = values["action-id"]?.string else { return nil }
        self.init(
            requestID: requestID, actionID: actionID, userText: values["user-text"]?.string,
            userInfo: values["user-info"].flatMap(VariantDictionary.init) ?? VariantDictionary([]))
    }
}
