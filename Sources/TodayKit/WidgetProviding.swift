import Foundation
import PropertyList
import TodayCore

/// NCUpdateResult.
public enum UpdateResult: String, Sendable {
    case newData = "new-data"
    case noData = "no-data"
    case failed
}

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
    public var items: [Item] = []
    public var accessibilityLabel: String?
    /// Further keys, passed to panels as they are.
    public var extra: PlistDictionary = [:]

    public struct Item: Sendable, Equatable {
        public var title: String
        public var subtitle: String?
        public var url: URL?
        public init(title: String, subtitle: String? = nil, url: URL? = nil) {
            self.title = title
            self.subtitle = subtitle
            self.url = url
        }
    }

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, image: Data? = nil, imagePath: String? = nil,
        url: URL? = nil, items: [Item] = [], accessibilityLabel: String? = nil, extra: PlistDictionary = [:]
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.image = image
        self.imagePath = imagePath
        self.url = url
        self.items = items
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
                    return .dictionary(entry)
                })
        }
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
            return Item(title: title, subtitle: entry["subtitle"]?.string, url: entry["url"]?.string.flatMap(URL.init(string:)))
        }
        accessibilityLabel = d["accessibility-label"]?.string
        var rest = d
        for key in ["title", "subtitle", "body", "image", "image-path", "url", "items", "accessibility-label"] { rest[key] = nil }
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
    /// Runs when the executable is started with other arguments.
    func run(arguments: [String]) async -> Int32
}

extension WidgetProviding {
    public func run(arguments: [String]) async -> Int32 {
        FileHandle.standardError.write(Data("usage: \(CommandLine.arguments.first ?? "widget") perform-update (todayd runs this)\n".utf8))
        return 2
    }

    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments == ["perform-update"] else { exit(await Self().run(arguments: arguments)) }
        exit(await Self().answer(input: FileHandle.standardInput.readDataToEndOfFile()))
    }

    /// One update: the previous snapshot in, the answer on standard output.
    func answer(input: Data) async -> Int32 {
        var previous = Snapshot()
        if !input.isEmpty, let value = try? Plist.read(input), let dictionary = value.dictionary {
            previous = Snapshot(dictionary: dictionary)
        }
        let (result, snapshot) = await performUpdate(previous: previous)
        var answer: PlistDictionary = ["result": .string(result.rawValue)]
        if result == .newData { answer["snapshot"] = .dictionary(snapshot.dictionary) }
        do {
            FileHandle.standardOutput.write(try Plist.write(.dictionary(answer), format: .xml))
            return 0
        } catch {
            FileHandle.standardError.write(Data("cannot write the answer: \(error)\n".utf8))
            return 1
        }
    }
}
