import DBus
import FoundationEssentials
import PropertyList
import TodayProtocol

/// What the Today view shows for one widget (SPEC section 13), from the
/// widget's D-Bus properties: plain Swift, tested without a display.
public struct TodayCard: Equatable, Sendable {
    public struct Item: Equatable, Sendable {
        public var title: String
        public var subtitle: String?
        public var url: String?
        /// The action the item's row runs, when it names one.
        public var action: String?
    }

    public struct Action: Equatable, Sendable {
        public var id: String
        public var title: String
        public var isToggle: Bool
        public var state: Bool
        public var iconName: String?
        public var accessibilityLabel: String?
    }

    public enum Image: Equatable, Sendable {
        case bytes(Data)
        case path(String)
    }

    public var id: String
    public var name: String
    public var iconPath: String?
    /// What the card's header shows beside the name.
    public var icon: AppIcon
    /// The container app's bundle id.
    public var containerID: String
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var image: Image?
    public var items: [Item]
    public var actions: [Action]
    public var url: String?
    /// What a screen reader says for the card.
    public var accessibilityLabel: String
    public var hasContent: Bool
    /// Nil until the first update.
    public var lastResult: UpdateResult?
    public var lastFailure: String
    /// µs since the epoch; 0: never.
    public var lastUpdated: UInt64
    public var preferredHeight: Double
    /// Top, left, bottom, right.
    public var margins: (Double, Double, Double, Double)

    public static func == (a: TodayCard, b: TodayCard) -> Bool {
        a.id == b.id && a.name == b.name && a.iconPath == b.iconPath && a.icon == b.icon && a.containerID == b.containerID && a.title == b.title && a.subtitle == b.subtitle
            && a.body == b.body && a.image == b.image && a.items == b.items && a.actions == b.actions && a.url == b.url
            && a.accessibilityLabel == b.accessibilityLabel && a.hasContent == b.hasContent && a.lastResult == b.lastResult
            && a.lastFailure == b.lastFailure && a.lastUpdated == b.lastUpdated && a.preferredHeight == b.preferredHeight
            && a.margins == b.margins
    }

    /// The card for widget `id` with D-Bus properties `values`;
    /// `entryIcon` finds the icon a container app's desktop entry names,
    /// for apps without `IconPath`.
    public init(id: String, properties values: [String: Value], entryIcon: (String) -> String? = { _ in nil }) {
        self.id = id
        name = values["DisplayName"]?.string ?? id
        iconPath = values["IconPath"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        containerID = values["ContainerBundleIdentifier"]?.string ?? ""
        icon = AppIcon(iconPath: iconPath, entryIcon: iconPath == nil ? entryIcon(containerID) : nil)
        let snapshot = ((try? values["Snapshot"].map(ValueMapping.plist)?.dictionary) ?? nil) ?? [:]
        title = snapshot["title"]?.string
        subtitle = snapshot["subtitle"]?.string
        body = snapshot["body"]?.string
        if let data = snapshot["image"]?.data {
            image = .bytes(data)
        } else if let path = snapshot["image-path"]?.string {
            image = .path(path)
        }
        items = (snapshot["items"]?.array ?? []).compactMap { item in
            guard let title = item["title"]?.string else { return nil }
            return Item(title: title, subtitle: item["subtitle"]?.string, url: item["url"]?.string, action: item["action"]?.string)
        }
        actions = (snapshot["actions"]?.array ?? []).compactMap { action in
            guard let id = action["id"]?.string else { return nil }
            return Action(
                id: id, title: action["title"]?.string ?? id, isToggle: action["kind"]?.string == "toggle",
                state: action["state"]?.bool ?? false, iconName: action["icon-name"]?.string,
                accessibilityLabel: action["accessibility-label"]?.string)
        }
        url = snapshot["url"]?.string
        accessibilityLabel = snapshot["accessibility-label"]?.string ?? ([name, title, subtitle].compactMap { $0 }.joined(separator: ", "))
        hasContent = values["HasContent"]?.bool ?? true
        lastResult = values["LastResult"]?.string.flatMap(UpdateResult.init(rawValue:))
        lastFailure = values["LastFailure"]?.string ?? ""
        lastUpdated = values["LastUpdated"]?.uint64 ?? 0
        preferredHeight = values["PreferredHeight"]?.double ?? 0
        if case .structure(let fields)? = values["MarginInsets"], fields.count == 4 {
            margins = (fields[0].double ?? 0, fields[1].double ?? 0, fields[2].double ?? 0, fields[3].double ?? 0)
        } else {
            margins = (0, 0, 0, 0)
        }
    }

    /// "updated just now", "updated 5 min ago", "updated 3 h ago",
    /// "updated 2 days ago", "never updated".
    public func updated(at now: Date) -> String { Self.updated(lastUpdated, at: now) }

    /// The same for a `LastUpdated` of `microseconds`, as every client writes it.
    public static func updated(_ microseconds: UInt64, at now: Date) -> String {
        guard microseconds > 0 else { return "never updated" }
        let seconds = max(0, now.timeIntervalSince1970 - Double(microseconds) / 1_000_000)
        switch seconds {
        case ..<60: return "updated just now"
        case ..<3600: return "updated \(Int(seconds / 60)) min ago"
        case ..<86_400: return "updated \(Int(seconds / 3600)) h ago"
        default:
            let days = Int(seconds / 86_400)
            return "updated \(days) day\(days == 1 ? "" : "s") ago"
        }
    }

    /// Why the last update failed, for the card; nil after a success.
    public var failure: String? { lastResult == .failed ? "Last update failed: \(lastFailure)" : nil }

    /// Whether the card is shown at all: a widget without content is not.
    public var isShown: Bool { hasContent }
}
