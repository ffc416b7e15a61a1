import DBus
import Foundation
import Synchronization
import TodayProtocol

// UserNotifications, so that an app's local notifications port as its
// widget does (SPEC section 18): the app schedules a request and may exit;
// todayd delivers it on time and hands the user's answer back to the app,
// starting it where it is not running, through the delegate of
// UNUserNotificationCenter while the app runs its TodayApplication.
//
//     let content = UNMutableNotificationContent()
//     content.title = "Line 4 to Central"
//     content.body = "Leaves in a minute"
//     content.userInfo = ["line": "4"]
//     let trigger = UNTimeIntervalNotificationTrigger(timeInterval: 240, repeats: false)
//     try await UNUserNotificationCenter.current().add(
//         UNNotificationRequest(identifier: "tram-4", content: content, trigger: trigger))

/// The action id of a response to the notification itself.
public let UNNotificationDefaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
/// The action id of a dismissal (todayd does not report dismissals to the app).
public let UNNotificationDismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

/// How strongly a notification asks for attention.
public enum UNNotificationInterruptionLevel: Sendable {
    /// In the list only, no banner.
    case passive
    case active
    /// A banner even during Do Not Disturb.
    case timeSensitive
    /// A banner that stays until acted on.
    case critical

    var level: ScheduledContent.InterruptionLevel {
        switch self {
        case .passive: .passive
        case .active: .active
        case .timeSensitive: .timeSensitive
        case .critical: .critical
        }
    }
}

/// The sound a notification plays, where the user's policy for the app
/// allows sounds and Do Not Disturb lets it through: the sound theme's
/// message sound, its warning sound for a critical one, or a sound file of
/// the app's, looked for in its container's `Library/Sounds/` and then in
/// its bundle (the default sound where neither has it).
public struct UNNotificationSound: Sendable, Equatable {
    /// `default`, `default-critical` or a file's name, as Schedule carries it.
    let name: String

    public static let `default` = UNNotificationSound(name: ScheduledContent.defaultSound)
    public static let defaultCritical = UNNotificationSound(name: ScheduledContent.defaultCriticalSound)

    /// A sound file of the app's, by its name (`chime.wav`).
    public init(named name: UNNotificationSoundName) {
        self.name = name.rawValue
    }

    /// A sound file of the app's for a critical notification (its
    /// interruption level is what makes it critical).
    public static func criticalSoundNamed(_ name: UNNotificationSoundName) -> UNNotificationSound {
        UNNotificationSound(named: name)
    }

    private init(name: String) { self.name = name }
}

/// The name of a sound file of the app's.
public struct UNNotificationSoundName: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A picture shown with the notification: a PNG file, read when the
/// request is added.
public struct UNNotificationAttachment: Sendable {
    public let identifier: String
    public let url: URL

    /// Throws where the file cannot be read or is not a PNG.
    public init(identifier: String, url: URL, options: [String: any Sendable]? = nil) throws {
        let data = try Data(contentsOf: url)
        guard data.starts(with: [0x89, 0x50, 0x4E, 0x47]) else { throw TodayKitError.service("\(url.path) is not a PNG file") }
        self.identifier = identifier
        self.url = url
    }
}

/// What a notification says (UNNotificationContent): the copy a request
/// keeps. Read-only; UNMutableNotificationContent is the one apps fill in.
public class UNNotificationContent: @unchecked Sendable {
    // @unchecked: every field is read and written under `fields`' lock,
    // and a subclass adds no stored state.
    struct Fields: Sendable {
        var title = ""
        var subtitle = ""
        var body = ""
        var threadIdentifier = ""
        var categoryIdentifier = ""
        var userInfo: [String: any Sendable] = [:]
        var attachments: [UNNotificationAttachment] = []
        var sound: UNNotificationSound?
        var interruptionLevel = UNNotificationInterruptionLevel.active
        var url: URL?
    }
    let fields: Mutex<Fields>

    init(_ fields: Fields) {
        self.fields = Mutex(fields)
    }

    public convenience init() { self.init(Fields()) }

    public fileprivate(set) var title: String {
        get { fields.withLock { $0.title } }
        set { fields.withLock { $0.title = newValue } }
    }
    public fileprivate(set) var subtitle: String {
        get { fields.withLock { $0.subtitle } }
        set { fields.withLock { $0.subtitle = newValue } }
    }
    public fileprivate(set) var body: String {
        get { fields.withLock { $0.body } }
        set { fields.withLock { $0.body = newValue } }
    }
    /// Groups the app's notifications in the list.
    public fileprivate(set) var threadIdentifier: String {
        get { fields.withLock { $0.threadIdentifier } }
        set { fields.withLock { $0.threadIdentifier = newValue } }
    }
    /// The category (setNotificationCategories) whose actions it shows.
    public fileprivate(set) var categoryIdentifier: String {
        get { fields.withLock { $0.categoryIdentifier } }
        set { fields.withLock { $0.categoryIdentifier = newValue } }
    }
    /// Handed back with the response: strings, numbers, booleans, data,
    /// dates, and arrays and dictionaries of them.
    public fileprivate(set) var userInfo: [String: any Sendable] {
        get { fields.withLock { $0.userInfo } }
        set { fields.withLock { $0.userInfo = newValue } }
    }
    /// The first PNG is shown as the notification's picture.
    public fileprivate(set) var attachments: [UNNotificationAttachment] {
        get { fields.withLock { $0.attachments } }
        set { fields.withLock { $0.attachments = newValue } }
    }
    public fileprivate(set) var sound: UNNotificationSound? {
        get { fields.withLock { $0.sound } }
        set { fields.withLock { $0.sound = newValue } }
    }
    public fileprivate(set) var interruptionLevel: UNNotificationInterruptionLevel {
        get { fields.withLock { $0.interruptionLevel } }
        set { fields.withLock { $0.interruptionLevel = newValue } }
    }
    /// todayd's own: opened (as a tap on a widget opens its URL) by the
    /// notification's default action, in place of a response.
    public fileprivate(set) var url: URL? {
        get { fields.withLock { $0.url } }
        set { fields.withLock { $0.url = newValue } }
    }

    /// The content as Schedule carries it.
    func scheduled() throws -> ScheduledContent {
        let fields = fields.withLock { $0 }
        var content = ScheduledContent()
        content.title = fields.title
        content.subtitle = fields.subtitle
        content.body = fields.body
        content.threadID = fields.threadIdentifier
        content.category = fields.categoryIdentifier
        content.userInfo = UserInfo.dbus(fields.userInfo)
        content.url = fields.url?.absoluteString
        content.interruptionLevel = fields.interruptionLevel.level
        content.sound = fields.sound?.name ?? ""
        if let attachment = fields.attachments.first { content.image = try Data(contentsOf: attachment.url) }
        return content
    }

    /// The content PendingRequests gave back.
    convenience init(_ content: ScheduledContent) {
        var fields = Fields()
        fields.title = content.title
        fields.subtitle = content.subtitle
        fields.body = content.body
        fields.threadIdentifier = content.threadID
        fields.categoryIdentifier = content.category
        fields.userInfo = UserInfo.swift(content.userInfo)
        fields.url = content.url.flatMap(URL.init(string:))
        fields.sound =
            switch content.sound {
            case "": nil
            case ScheduledContent.defaultSound: .default
            case ScheduledContent.defaultCriticalSound: .defaultCritical
            default: UNNotificationSound(named: UNNotificationSoundName(content.sound))
            }
        fields.interruptionLevel =
            switch content.interruptionLevel {
            case .passive: .passive
            case .active: .active
            case .timeSensitive: .timeSensitive
            case .critical: .critical
            }
        self.init(fields)
    }
}

/// The content an app fills in before adding a request.
public final class UNMutableNotificationContent: UNNotificationContent, @unchecked Sendable {
    public override var title: String {
        get { super.title }
        set { super.title = newValue }
    }
    public override var subtitle: String {
        get { super.subtitle }
        set { super.subtitle = newValue }
    }
    public override var body: String {
        get { super.body }
        set { super.body = newValue }
    }
    public override var threadIdentifier: String {
        get { super.threadIdentifier }
        set { super.threadIdentifier = newValue }
    }
    public override var categoryIdentifier: String {
        get { super.categoryIdentifier }
        set { super.categoryIdentifier = newValue }
    }
    public override var userInfo: [String: any Sendable] {
        get { super.userInfo }
        set { super.userInfo = newValue }
    }
    public override var attachments: [UNNotificationAttachment] {
        get { super.attachments }
        set { super.attachments = newValue }
    }
    public override var sound: UNNotificationSound? {
        get { super.sound }
        set { super.sound = newValue }
    }
    public override var interruptionLevel: UNNotificationInterruptionLevel {
        get { super.interruptionLevel }
        set { super.interruptionLevel = newValue }
    }
    public override var url: URL? {
        get { super.url }
        set { super.url = newValue }
    }
}

/// When a request is delivered.
public class UNNotificationTrigger: @unchecked Sendable {
    // @unchecked: immutable, and so are its subclasses.
    public let repeats: Bool

    init(repeats: Bool) {
        self.repeats = repeats
    }

    var scheduled: ScheduledTrigger { .now }

    /// A trigger PendingRequests gave back.
    static func from(_ trigger: ScheduledTrigger) -> UNNotificationTrigger? {
        switch trigger {
        case .now: nil
        case .interval(let seconds, let repeats): UNTimeIntervalNotificationTrigger(timeInterval: seconds, repeats: repeats)
        case .calendar(let match, let repeats): UNCalendarNotificationTrigger(match: match, repeats: repeats)
        }
    }
}

/// Some seconds after it is added; again every as many (60 at least)
/// where it repeats.
public final class UNTimeIntervalNotificationTrigger: UNNotificationTrigger, @unchecked Sendable {
    public let timeInterval: TimeInterval
    private let added = Date()

    public init(timeInterval: TimeInterval, repeats: Bool) {
        self.timeInterval = timeInterval
        super.init(repeats: repeats)
    }

    override var scheduled: ScheduledTrigger { .interval(seconds: timeInterval, repeats: repeats) }

    public func nextTriggerDate() -> Date? { added.addingTimeInterval(timeInterval) }
}

/// At the next local time that matches the date components (hour,
/// minute, weekday, day, month, …); every such time where it repeats.
public final class UNCalendarNotificationTrigger: UNNotificationTrigger, @unchecked Sendable {
    public let dateComponents: DateComponents

    public init(dateMatching dateComponents: DateComponents, repeats: Bool) {
        self.dateComponents = dateComponents
        super.init(repeats: repeats)
    }

    convenience init(match: DateMatch, repeats: Bool) {
        var components = DateComponents()
        (components.year, components.month, components.day, components.weekday) = (match.year, match.month, match.day, match.weekday)
        (components.hour, components.minute, components.second) = (match.hour, match.minute, match.second)
        components.timeZone = match.timeZone.flatMap(TimeZone.init(identifier:))
        self.init(dateMatching: components, repeats: repeats)
    }

    var match: DateMatch {
        let c = dateComponents
        return DateMatch(
            year: c.year, month: c.month, day: c.day, weekday: c.weekday, hour: c.hour, minute: c.minute, second: c.second,
            timeZone: c.timeZone?.identifier)
    }

    override var scheduled: ScheduledTrigger { .calendar(match, repeats: repeats) }

    /// The next time it matches, as todayd computes it.
    public func nextTriggerDate() -> Date? { match.nextDate(after: Date(), in: .current) }
}

/// What to deliver and when; a request of the same identifier replaces
/// the app's pending or delivered one.
public final class UNNotificationRequest: Sendable {
    public let identifier: String
    public let content: UNNotificationContent
    /// nil: at once.
    public let trigger: UNNotificationTrigger?

    public init(identifier: String, content: UNNotificationContent, trigger: UNNotificationTrigger?) {
        self.identifier = identifier
        // A copy: later changes to a mutable content change nothing here.
        self.content = UNNotificationContent(content.fields.withLock { $0 })
        self.trigger = trigger
    }
}

/// UNNotificationActionOptions.
public struct UNNotificationActionOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let authenticationRequired = UNNotificationActionOptions(rawValue: 1 << 0)
    public static let destructive = UNNotificationActionOptions(rawValue: 1 << 1)
    public static let foreground = UNNotificationActionOptions(rawValue: 1 << 2)
}

/// A button on the app's notifications of a category.
public class UNNotificationAction: @unchecked Sendable {
    // @unchecked: immutable, and so is its subclass.
    public let identifier: String
    public let title: String
    public let options: UNNotificationActionOptions

    public init(identifier: String, title: String, options: UNNotificationActionOptions = []) {
        self.identifier = identifier
        self.title = title
        self.options = options
    }

    var scheduled: ScheduledCategory.Action {
        ScheduledCategory.Action(id: identifier, title: title, foreground: options.contains(.foreground), destructive: options.contains(.destructive))
    }
}

/// An action that asks for text: the notification's reply field.
public final class UNTextInputNotificationAction: UNNotificationAction, @unchecked Sendable {
    public let textInputButtonTitle: String
    public let textInputPlaceholder: String

    public init(
        identifier: String, title: String, options: UNNotificationActionOptions = [], textInputButtonTitle: String, textInputPlaceholder: String
    ) {
        self.textInputButtonTitle = textInputButtonTitle
        self.textInputPlaceholder = textInputPlaceholder
        super.init(identifier: identifier, title: title, options: options)
    }

    override var scheduled: ScheduledCategory.Action {
        var action = super.scheduled
        action.textInput = true
        action.placeholder = textInputPlaceholder
        return action
    }
}

/// UNNotificationCategoryOptions (accepted; todayd shows every category alike).
public struct UNNotificationCategoryOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let customDismissAction = UNNotificationCategoryOptions(rawValue: 1 << 0)
}

/// The actions of the app's notifications of one category.
public final class UNNotificationCategory: Hashable, Sendable {
    public let identifier: String
    public let actions: [UNNotificationAction]

    public init(identifier: String, actions: [UNNotificationAction], intentIdentifiers: [String], options: UNNotificationCategoryOptions = []) {
        self.identifier = identifier
        self.actions = actions
    }

    public static func == (a: UNNotificationCategory, b: UNNotificationCategory) -> Bool { a.identifier == b.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }
}

/// A notification delivered: its request and when.
public final class UNNotification: Sendable {
    public let date: Date
    public let request: UNNotificationRequest

    init(date: Date, request: UNNotificationRequest) {
        self.date = date
        self.request = request
    }
}

/// The user's answer to a notification.
public class UNNotificationResponse: @unchecked Sendable {
    // @unchecked: immutable, and so is its subclass.
    public let notification: UNNotification
    /// UNNotificationDefaultActionIdentifier, or the category action's id.
    public let actionIdentifier: String

    init(notification: UNNotification, actionIdentifier: String) {
        self.notification = notification
        self.actionIdentifier = actionIdentifier
    }

    /// The response todayd handed over, as the app reads it.
    static func from(_ response: NotificationResponse) -> UNNotificationResponse {
        var fields = UNNotificationContent.Fields()
        fields.userInfo = UserInfo.swift(response.userInfo)
        let request = UNNotificationRequest(identifier: response.requestID, content: UNNotificationContent(fields), trigger: nil)
        let notification = UNNotification(date: Date(), request: request)
        let action = response.actionID == "default" ? UNNotificationDefaultActionIdentifier : response.actionID
        if let text = response.userText {
            return UNTextInputNotificationResponse(notification: notification, actionIdentifier: action, userText: text)
        }
        return UNNotificationResponse(notification: notification, actionIdentifier: action)
    }
}

/// The answer of a text-input action.
public final class UNTextInputNotificationResponse: UNNotificationResponse, @unchecked Sendable {
    public let userText: String

    init(notification: UNNotification, actionIdentifier: String, userText: String) {
        self.userText = userText
        super.init(notification: notification, actionIdentifier: actionIdentifier)
    }
}

/// Receives the user's answers. Implement either form: the completion
/// handler's calls the async one unless it is implemented itself.
public protocol UNUserNotificationCenterDelegate: AnyObject, Sendable {
    func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void)
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async
}

extension UNUserNotificationCenterDelegate {
    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping @Sendable () -> Void
    ) {
        Task {
            await userNotificationCenter(center, didReceive: response)
            completionHandler()
        }
    }

    public func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {}
}

/// UNAuthorizationOptions (accepted: the user allows or silences an app in
/// the notification center's per-app policies instead).
public struct UNAuthorizationOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let badge = UNAuthorizationOptions(rawValue: 1 << 0)
    public static let sound = UNAuthorizationOptions(rawValue: 1 << 1)
    public static let alert = UNAuthorizationOptions(rawValue: 1 << 2)
}

/// The app's way to todayd's scheduled notifications.
public final class UNUserNotificationCenter: Sendable {
    private static let shared = UNUserNotificationCenter()
    private struct WeakDelegate: @unchecked Sendable {
        // @unchecked: read and written only under `delegateBox`'s lock.
        weak var delegate: (any UNUserNotificationCenterDelegate)?
    }
    private let delegateBox = Mutex(WeakDelegate())

    public static func current() -> UNUserNotificationCenter { shared }

    /// Receives the user's answers while the app runs its TodayApplication
    /// (kept weakly, as Apple's is).
    public var delegate: (any UNUserNotificationCenterDelegate)? {
        get { delegateBox.withLock { $0.delegate } }
        set { delegateBox.withLock { $0.delegate = newValue } }
    }

    /// Always granted: the user decides per app in the notification center.
    public func requestAuthorization(options: UNAuthorizationOptions = [], completionHandler: @escaping @Sendable (Bool, (any Error)?) -> Void) {
        completionHandler(true, nil)
    }

    public func requestAuthorization(options: UNAuthorizationOptions = []) async throws -> Bool { true }

    /// Schedules `request`; the handler hears why where todayd refused it.
    public func add(_ request: UNNotificationRequest, withCompletionHandler completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        do {
            try schedule(request)
            completionHandler?(nil)
        } catch {
            completionHandler?(error)
        }
    }

    public func add(_ request: UNNotificationRequest) async throws {
        try schedule(request)
    }

    private func schedule(_ request: UNNotificationRequest) throws {
        let content = try request.content.scheduled()
        try call(
            Notifications.Center.schedule, request.identifier, content.dictionary, (request.trigger?.scheduled ?? .now).dictionary)
    }

    public func getPendingNotificationRequests(completionHandler: @escaping @Sendable ([UNNotificationRequest]) -> Void) {
        completionHandler(pending())
    }

    public func pendingNotificationRequests() async -> [UNNotificationRequest] { pending() }

    private func pending() -> [UNNotificationRequest] {
        do {
            let reply = try call(Notifications.Center.pendingRequests)
            let list = try reply.value(VariantDictionaries.self, answering: "PendingRequests")
            return list.dictionaries.compactMap { dictionary in
                let values = dictionary.dictionary
                guard let id = values["id"]?.string, let contentValue = values["content"].flatMap(VariantDictionary.init),
                    let content = try? ScheduledContent(contentValue), let triggerValue = values["trigger"].flatMap(VariantDictionary.init),
                    let trigger = try? ScheduledTrigger(triggerValue)
                else { return nil }
                return UNNotificationRequest(identifier: id, content: UNNotificationContent(content), trigger: UNNotificationTrigger.from(trigger))
            }
        } catch {
            report("getPendingNotificationRequests", error)
            return []
        }
    }

    public func removePendingNotificationRequests(withIdentifiers identifiers: [String]) {
        do { try call(Notifications.Center.removePending, identifiers) } catch { report("removePendingNotificationRequests", error) }
    }

    public func removeAllPendingNotificationRequests() {
        removePendingNotificationRequests(withIdentifiers: pending().map(\.identifier))
    }

    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {
        do { try call(Notifications.Center.removeDelivered, identifiers) } catch { report("removeDeliveredNotifications", error) }
    }

    public func setNotificationCategories(_ categories: Set<UNNotificationCategory>) {
        let list = categories.sorted { $0.identifier < $1.identifier }.map { category in
            ScheduledCategory(id: category.identifier, actions: category.actions.map(\.scheduled)).dictionary
        }
        do { try call(Notifications.Center.setCategories, VariantDictionaries(list)) } catch { report("setNotificationCategories", error) }
    }

    @discardableResult
    private func call<each Input: DBusArgument>(_ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input) throws -> Message {
        let connection = try TodayBus.shared.registeredConnection()
        return try connection.callBlocking(Today.busName, path: Today.managerPath, interface: Notifications.today.name, method, repeat each inputs)
    }

    /// Hands a response todayd sent to the delegate; returns once the
    /// delegate has called its completion handler.
    func receive(_ response: NotificationResponse) async {
        guard let delegate else {
            FileHandle.standardError.write(Data("TodayKit: a notification response arrived, but UNUserNotificationCenter has no delegate\n".utf8))
            return
        }
        let answer = UNNotificationResponse.from(response)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            delegate.userNotificationCenter(self, didReceive: answer) { done.resume() }
        }
    }
}

/// user-info between Swift values and D-Bus's a{sv}.
enum UserInfo {
    static func dbus(_ info: [String: any Sendable]) -> VariantDictionary {
        VariantDictionary(
            info.compactMap { key, element in
                guard let converted = value(element) else {
                    FileHandle.standardError.write(Data("TodayKit: userInfo['\(key)'] (\(type(of: element))) cannot be sent and is left out\n".utf8))
                    return nil
                }
                return (key, converted)
            }.sorted { $0.0 < $1.0 })
    }

    static func value(_ value: any Sendable) -> Value? {
        switch value {
        case let text as String: return .string(text)
        case let flag as Bool: return .boolean(flag)
        case let number as Int: return .int64(Int64(number))
        case let number as Int32: return .int32(number)
        case let number as Int64: return .int64(number)
        case let number as UInt32: return .uint32(number)
        case let number as UInt64: return .uint64(number)
        case let number as Double: return .double(number)
        case let data as Data: return .bytes(data)
        case let date as Date: return .double(date.timeIntervalSince1970)
        case let url as URL: return .string(url.absoluteString)
        case let strings as [String]: return .array(.string, strings.map { .string($0) })
        case let list as [any Sendable]: return .array(.variant, list.compactMap { Self.value($0).map { .variant($0) } })
        case let dictionary as [String: any Sendable]: return dbus(dictionary).value
        default: return nil
        }
    }

    static func swift(_ info: VariantDictionary) -> [String: any Sendable] {
        var result: [String: any Sendable] = [:]
        for (key, value) in info.entries { result[key] = swift(value) }
        return result
    }

    static func swift(_ value: Value) -> any Sendable {
        switch value.unwrapped {
        case .string(let text): return text
        case .boolean(let flag): return flag
        case .double(let number): return number
        case .bytes(let data): return data
        case .array(.string, let strings): return strings.compactMap(\.string)
        case .array(.variant, let values): return values.map { swift($0) }
        case let other:
            if let dictionary = VariantDictionary(other) { return swift(dictionary) }
            if let number = other.int64, let int = Int(exactly: number) { return int }
            return "\(other)"
        }
    }
}
