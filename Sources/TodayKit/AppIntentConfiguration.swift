import DBus
import Foundation
import PropertyList
import Synchronization
import TodayProtocol

// WidgetKit's configurable widgets (SPEC section 16): a widget's settings
// are a WidgetConfigurationIntent whose @Parameter properties todayd fills
// from the instance's configuration, and an AppIntentTimelineProvider gets
// them with each request. The manifest's TodayParameters declares the same
// keys (`todayctl lint` checks the manifest; the property's name is the key
// unless `@Parameter(key:)` says otherwise).

/// WidgetFamily: small, medium or large.
public typealias WidgetFamily = TodayProtocol.WidgetFamily

/// What a @Parameter property can hold.
public protocol WidgetParameterValue: Sendable {
    /// The value a configuration holds, or nil where it is of another type.
    init?(configurationValue value: PlistValue)
}

extension String: WidgetParameterValue {
    public init?(configurationValue value: PlistValue) {
        guard let text = value.string else { return nil }
        self = text
    }
}

extension Int: WidgetParameterValue {
    public init?(configurationValue value: PlistValue) {
        guard let number = value.int64.flatMap(Int.init(exactly:)) else { return nil }
        self = number
    }
}

extension Bool: WidgetParameterValue {
    public init?(configurationValue value: PlistValue) {
        guard let flag = value.bool else { return nil }
        self = flag
    }
}

extension Optional: WidgetParameterValue where Wrapped: WidgetParameterValue {
    public init?(configurationValue value: PlistValue) {
        guard let wrapped = Wrapped(configurationValue: value) else { return nil }
        self = .some(wrapped)
    }
}

/// A @Parameter, whatever its type: what loading an intent needs.
protocol AnyWidgetParameter {
    var key: String? { get }
    func load(_ value: PlistValue)
}

/// @Parameter: one setting of a WidgetConfigurationIntent.
///
///     struct DepartureSettings: WidgetConfigurationIntent {
///         @Parameter(title: "Line") var line: String = "4"
///         @Parameter(title: "Show platform") var showPlatform = false
///     }
@propertyWrapper
public struct Parameter<Value: WidgetParameterValue>: Sendable, AnyWidgetParameter {
    /// Shared by the copies of an intent, so that loading one fills the
    /// value every copy reads.
    private let box: Box
    public let title: String
    let key: String?

    private final class Box: Sendable {
        let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
    }

    public init(wrappedValue: Value, title: String, key: String? = nil) {
        box = Box(wrappedValue)
        self.title = title
        self.key = key
    }

    public var wrappedValue: Value {
        get { box.value.withLock { $0 } }
        nonmutating set { box.value.withLock { $0 = newValue } }
    }

    func load(_ value: PlistValue) {
        guard let loaded = Value(configurationValue: value) else { return }
        box.value.withLock { $0 = loaded }
    }
}

/// WidgetConfigurationIntent: the settings of a configurable widget.
public protocol WidgetConfigurationIntent: Sendable {
    init()
}

extension WidgetConfigurationIntent {
    /// The intent with each @Parameter set from `configuration` (by its
    /// key: the property's name, or the key it was given); a value of
    /// another type leaves the property's default.
    public static func loaded(from configuration: PlistDictionary) -> Self {
        let intent = Self()
        for child in Mirror(reflecting: intent).children {
            guard let parameter = child.value as? any AnyWidgetParameter, let label = child.label else { continue }
            let key = parameter.key ?? (label.hasPrefix("_") ? String(label.dropFirst()) : label)
            if let value = configuration[key] { parameter.load(value) }
        }
        return intent
    }

    /// The settings of the instance this provider run serves
    /// (TODAY_CONFIGURATION): what a button's intent reads to act on its
    /// own instance.
    public static func current() -> Self {
        let text = ProcessInfo.processInfo.environment["TODAY_CONFIGURATION"] ?? "{}"
        let value = try? Plist.read(Data(text.utf8), allowJSON: true)
        return loaded(from: value?.dictionary ?? [:])
    }
}

/// A dynamic choice's value and what the form shows for it
/// (DynamicOptionsProvider's results).
public struct ParameterChoice: Sendable, Equatable {
    public var value: String
    public var title: String

    public init(_ value: String, title: String? = nil) {
        self.value = value
        self.title = title ?? value
    }
}

extension TimelineProviderContext {
    /// The run todayd started: TODAY_FAMILY, TODAY_PREVIEW.
    static func current() -> TimelineProviderContext {
        let environment = ProcessInfo.processInfo.environment
        var context = TimelineProviderContext(isPreview: environment["TODAY_PREVIEW"] == "1")
        context.family = environment["TODAY_FAMILY"].flatMap(WidgetFamily.init(rawValue:)) ?? .medium
        return context
    }
}

/// AppIntentTimelineProvider: a TimelineProvider whose requests carry the
/// instance's settings.
///
///     @main struct Departures: AppIntentTimelineProvider {
///         func placeholder(in context: Context) -> Entry { Entry(date: Date(), line: "—") }
///         func snapshot(for configuration: DepartureSettings, in context: Context) async -> Entry { … }
///         func timeline(for configuration: DepartureSettings, in context: Context) async -> Timeline<Entry> { … }
///     }
public protocol AppIntentTimelineProvider {
    associatedtype Entry: TimelineEntry
    associatedtype Intent: WidgetConfigurationIntent
    typealias Context = TimelineProviderContext

    init()
    /// An entry to show before any content exists.
    func placeholder(in context: Context) -> Entry
    /// The entry for the gallery (`context.isPreview`) and for now, quickly.
    func snapshot(for configuration: Intent, in context: Context) async -> Entry
    /// The entries from now on and when to ask again.
    func timeline(for configuration: Intent, in context: Context) async -> Timeline<Entry>
    /// The values of a dynamic choice (`perform-options KEY`).
    func choices(for parameter: String) async -> [ParameterChoice]
    /// The intents the entries' buttons and toggles run.
    static var intents: [any WidgetIntent.Type] { get }
    /// Runs when the executable is started with other arguments.
    func run(arguments: [String]) async -> Int32
}

extension AppIntentTimelineProvider {
    public static var intents: [any WidgetIntent.Type] { [] }

    public func choices(for parameter: String) async -> [ParameterChoice] { [] }

    public func run(arguments: [String]) async -> Int32 {
        FileHandle.standardError.write(Data("usage: \(CommandLine.arguments.first ?? "widget") perform-update (todayd runs this)\n".utf8))
        return 2
    }

    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let context = Context.current()
        let provider = Self()
        switch arguments.first {
        case "perform-options" where arguments.count == 2:
            let choices = await provider.choices(for: arguments[1])
            let list: [PlistValue] = choices.map { .dictionary(["value": .string($0.value), "title": .string($0.title)]) }
            exit(writeAnswer(["choices": .array(list)]))
        case "perform-action" where !intents.isEmpty:
            _ = FileHandle.standardInput.readDataToEndOfFile()
            if let problem = await performIntent(arguments, among: intents) { exit(answerFailed(problem)) }
        case "perform-update" where arguments.count == 1:
            _ = FileHandle.standardInput.readDataToEndOfFile()
        default:
            exit(await provider.run(arguments: arguments))
        }
        let configuration = Intent.current()
        if context.isPreview {
            let entry = await provider.snapshot(for: configuration, in: context)
            exit(writeAnswer(["result": .string(UpdateResult.newData.rawValue), "snapshot": .dictionary(entry.snapshot.dictionary)]))
        }
        let timeline = await provider.timeline(for: configuration, in: context)
        // No entries is not a timeline: keep what is shown.
        exit(writeAnswer(timeline.entries.isEmpty ? ["result": .string(UpdateResult.noData.rawValue)] : timeline.answer))
    }
}

/// WidgetInfo: one placed instance of a kind, as the app sees it.
public struct WidgetInfo: Sendable, Equatable {
    /// The kind: the widget's bundle id.
    public var kind: String
    public var family: WidgetFamily
    /// The instance's settings, each parameter with its value or default.
    public var configuration: PlistDictionary
    /// The instance's object, which names it.
    public var instance: String

    /// The settings as the widget's intent type.
    public func widgetConfigurationIntent<Intent: WidgetConfigurationIntent>(_ type: Intent.Type = Intent.self) -> Intent {
        Intent.loaded(from: configuration)
    }
}

extension WidgetCenter {
    /// What is placed of `kind`, for the widget or its container app.
    public func currentConfigurations(ofKind kind: String) async throws -> [WidgetInfo] {
        let reply = try TodayBus.shared.center(Today.Center.getCurrentConfigurations, try TodayBus.bundleID(kind))
        return (reply.body.first?.elements ?? []).compactMap { item in
            guard case .structure(let fields) = item, fields.count == 3, case .objectPath(let path) = fields[0] else { return nil }
            let configuration = ((try? ValueMapping.plist(fields[2]))?.dictionary) ?? [:]
            return WidgetInfo(
                kind: kind, family: fields[1].string.flatMap(WidgetFamily.init(rawValue:)) ?? .medium, configuration: configuration,
                instance: path.rawValue)
        }
    }

    /// WidgetCenter.getCurrentConfigurations, with a completion handler.
    public func getCurrentConfigurations(ofKind kind: String, _ completion: @escaping @Sendable (Result<[WidgetInfo], any Error>) -> Void) {
        Task {
            do {
                completion(.success(try await currentConfigurations(ofKind: kind)))
            } catch {
                completion(.failure(error))
            }
        }
    }
}
