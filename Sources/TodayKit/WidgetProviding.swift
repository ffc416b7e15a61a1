import Foundation
import PropertyList
import TodayProtocol

/// NCUpdateResult: todayd's own result type (`.newData`, `.noData`,
/// `.failed`, written as SPEC section 4 says).
public typealias UpdateResult = TodayProtocol.UpdateResult

/// What a widget shows: the keys panels understand (SPEC section 2), and
/// any others, which pass through to them.
public struct Snapshot: Sendable, Equatable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// PNG or JPEG, at most 1 MiB.
    public var image: Data?
    public var imagePath: String?
    /// What a tap opens.
    public var url: URL?
    public var items: [Item]
    /// Buttons and toggles (at most 8), each running a WidgetIntent.
    public var actions: [Action]
    public var accessibilityLabel: String?
    /// Further keys, passed to panels as they are.
    public var extra: PlistDictionary

    public struct Item: Sendable, Equatable {
        public var title: String
        public var subtitle: String?
        public var url: URL?
        /// The id of one of the snapshot's actions, which the row runs.
        public var action: String?
        public init(title: String, subtitle: String? = nil, url: URL? = nil, action: String? = nil) {
            self.title = title
            self.subtitle = subtitle
            self.url = url
            self.action = action
        }
    }

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, image: Data? = nil, imagePath: String? = nil,
        url: URL? = nil, items: [Item] = [], actions: [Action] = [], accessibilityLabel: String? = nil, extra: PlistDictionary = [:]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.image = image
        self.imagePath = imagePath
        self.url = url
        self.items = items
        self.actions = actions
        self.accessibilityLabel = accessibilityLabel
        self.extra = extra
    }

    /// The snapshot as todayd stores it.
    public var dictionary: PlistDictionary {
        var d = extra
        if let title { d["title"] = .string(title) }
        if let subtitle { d["subtitle"] = .string(subtitle) }
        if let body { d["body"] = .string(body) }
        if let image { d["image"] = .data(image) }
        if let imagePath { d["image-path"] = .string(imagePath) }
        if let url { d["url"] = .string(url.absoluteString) }
        if !items.isEmpty {
            d["items"] = .array(
                items.map { item in
                    var entry: PlistDictionary = ["title": .string(item.title)]
                    if let subtitle = item.subtitle { entry["subtitle"] = .string(subtitle) }
                    if let url = item.url { entry["url"] = .string(url.absoluteString) }
                    if let action = item.action { entry["action"] = .string(action) }
                    return .dictionary(entry)
                })
        }
        if !actions.isEmpty { d["actions"] = .array(actions.map(\.plist)) }
        if let accessibilityLabel { d["accessibility-label"] = .string(accessibilityLabel) }
        return d
    }

    public init(dictionary d: PlistDictionary) {
        title = d["title"]?.string
        subtitle = d["subtitle"]?.string
        body = d["body"]?.string
        image = d["image"]?.data
        imagePath = d["image-path"]?.string
        url = d["url"]?.string.flatMap(URL.init(string:))
        items = (d["items"]?.array ?? []).compactMap { value in
            guard let entry = value.dictionary, let title = entry["title"]?.string else { return nil }
            return Item(
                title: title, subtitle: entry["subtitle"]?.string, url: entry["url"]?.string.flatMap(URL.init(string:)),
                action: entry["action"]?.string)
        }
        actions = (d["actions"]?.array ?? []).compactMap(Action.init)
        accessibilityLabel = d["accessibility-label"]?.string
        var rest = d
        for key in ["title", "subtitle", "body", "image", "image-path", "url", "items", "actions", "accessibility-label"] { rest[key] = nil }
        extra = rest
    }
}

/// NCWidgetProviding: a widget's provider. todayd runs the widget's
/// executable with `perform-update`; `main()` reads the previous snapshot,
/// calls `performUpdate`, and answers todayd.
///
///     @main struct LatestPost: WidgetProviding {
///         func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
///             (.newData, Snapshot(title: "Hello"))
///         }
///     }
public protocol WidgetProviding {
    init()
    /// widgetPerformUpdate(completionHandler:): fresh content, or `.noData`
    /// to keep the previous snapshot, or `.failed`.
    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot)
    /// The intents the snapshot's buttons and toggles run: `perform-action
    /// ID` performs the one with that id, then the update runs and its
    /// snapshot is the answer.
    static var intents: [any WidgetIntent.Type] { get }
    /// Runs when the executable is started with other arguments.
    func run(arguments: [String]) async -> Int32
}

extension WidgetProviding {
    public static var intents: [any WidgetIntent.Type] { [] }

    public func run(arguments: [String]) async -> Int32 {
        FileHandle.standardError.write(Data("usage: \(CommandLine.arguments.first ?? "widget") perform-update (todayd runs this)\n".utf8))
        return 2
    }

    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "perform-action", !intents.isEmpty {
            let input = FileHandle.standardInput.readDataToEndOfFile()
            if let problem = await performIntent(arguments, among: intents) { exit(answerFailed(problem)) }
            exit(await Self().answer(input: input, afterAction: true))
        }
        guard arguments == ["perform-update"] else { exit(await Self().run(arguments: arguments)) }
        exit(await Self().answer(input: FileHandle.standardInput.readDataToEndOfFile()))
    }

    /// One update: the previous snapshot in, the answer on standard output.
    /// After an action the snapshot is sent even when it did not change,
    /// so that a toggle's state comes back from the widget itself.
    func answer(input: Data, afterAction: Bool = false) async -> Int32 {
        var previous = Snapshot()
        if !input.isEmpty, let value = try? Plist.read(input), let dictionary = value.dictionary {
            previous = Snapshot(dictionary: dictionary)
        }
        let (result, snapshot) = await performUpdate(previous: previous)
        var answer: PlistDictionary = ["result": .string(result.rawValue)]
        if result == .newData || (afterAction && result == .noData) {
            answer = ["result": .string(UpdateResult.newData.rawValue), "snapshot": .dictionary(snapshot.dictionary)]
        }
        do {
            FileHandle.standardOutput.write(try Plist.write(.dictionary(answer), format: .xml))
            return 0
        } catch {
            FileHandle.standardError.write(Data("cannot write the answer: \(error)\n".utf8))
            return 1
        }
    }
}
