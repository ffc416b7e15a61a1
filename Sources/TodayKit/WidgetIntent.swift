import Foundation
import PropertyList
import TodayProtocol

// Buttons and toggles that run the widget's own code (SPEC section 10), in
// the spirit of App Intents: an intent is a type with an id, a title and
// `perform()`; a snapshot offers it as `.button(intent:)` or
// `.toggle(intent:isOn:)`; when the user presses it, todayd runs the
// widget's executable with `perform-action ID`, TodayKit performs the
// intent and then answers with the widget's fresh content.

/// AppIntent, for widgets: what a button does.
///
///     struct MarkAsRead: WidgetIntent {
///         static let title = "Mark as read"
///         func perform() async throws { GroupDefaults(suiteName: "group.example")?.set(true, forKey: "read") }
///     }
public protocol WidgetIntent: Sendable {
    /// The action id in the snapshot: 1 to 64 of `[A-Za-z0-9._-]`; the
    /// type's name unless given.
    static var id: String { get }
    /// The button's label.
    static var title: String { get }
    init()
    /// Does what the button says. Throwing makes the action `failed`, and
    /// todayd shows the reason in LastFailure.
    func perform() async throws
    /// Whether the intent is a toggle's (a SetValueIntent).
    static var isToggle: Bool { get }
    /// A toggle's `value`; nothing for a button.
    mutating func setValue(_ value: Bool)
}

extension WidgetIntent {
    public static var id: String { String(describing: Self.self) }
    public static var isToggle: Bool { false }
    public mutating func setValue(_ value: Bool) {}

    /// Makes one, gives a toggle's the state asked for, and performs it.
    static func performNew(state: Bool?) async throws {
        var intent = Self()
        if let state { intent.setValue(state) }
        try await intent.perform()
    }
}

/// SetValueIntent, for widgets: what a toggle does, given the state the
/// user asked for in `value` before `perform()` runs.
public protocol SetValueIntent: WidgetIntent {
    var value: Bool { get set }
}

extension SetValueIntent {
    public static var isToggle: Bool { true }
    public mutating func setValue(_ value: Bool) { self.value = value }
}

/// A button or toggle of a snapshot, made from the intent it runs.
public typealias Action = Snapshot.Action

extension Snapshot.Action {
    /// Button(intent:).
    public static func button<Intent: WidgetIntent>(
        intent: Intent, iconName: String? = nil, accessibilityLabel: String? = nil
    ) -> Snapshot.Action {
        Snapshot.Action(id: Intent.id, title: Intent.title, kind: .button, iconName: iconName, accessibilityLabel: accessibilityLabel)
    }

    /// Toggle(isOn:intent:).
    public static func toggle<Intent: SetValueIntent>(
        intent: Intent, isOn: Bool, iconName: String? = nil, accessibilityLabel: String? = nil
    ) -> Snapshot.Action {
        Snapshot.Action(id: Intent.id, title: Intent.title, kind: .toggle(isOn: isOn), iconName: iconName, accessibilityLabel: accessibilityLabel)
    }
}

/// Runs the intent `perform-action ID` names, as todayd asks
/// (TODAY_ACTION_ID, and TODAY_ACTION_STATE for a toggle); the reason it
/// could not, or nil once it has run.
func performIntent(_ arguments: [String], among intents: [any WidgetIntent.Type]) async -> String? {
    guard arguments.count == 2, arguments[0] == "perform-action" else { return "usage: perform-action ID (todayd runs this)" }
    let id = arguments[1]
    guard let type = intents.first(where: { $0.id == id }) else {
        return "no intent '\(id)': the widget's `intents` list has \(intents.map { $0.id }.joined(separator: ", "))"
    }
    let state = ProcessInfo.processInfo.environment["TODAY_ACTION_STATE"].flatMap(Bool.init)
    if type.isToggle, state == nil { return "'\(id)' is a toggle, and TODAY_ACTION_STATE is not true or false" }
    do {
        try await type.performNew(state: state)
        return nil
    } catch {
        return "\(type.title): \(error)"
    }
}



/// Writes a `failed` answer with the reason on standard error.
func answerFailed(_ reason: String) -> Int32 {
    FileHandle.standardError.write(Data("\(reason)\n".utf8))
    guard let answer = try? Plist.write(.dictionary(["result": .string("failed")]), format: .xml) else { return 1 }
    FileHandle.standardOutput.write(answer)
    return 0
}
