import DBus
import FoundationEssentials
import PropertyList
import TodayProtocol

/// One widget as every client shows it (SPEC section 13): the Today view's
/// card, `todayctl show`'s and a bar module's, read from the widget's D-Bus
/// properties. Plain Swift, tested without a display.
public struct TodayCard: Equatable, Sendable {
    public enum Image: Equatable, Sendable {
        case bytes(Data)
        case path(String)
    }

    /// The instance: the widget's id for its own instance, `id/n` for an
    /// added one (SPEC section 16).
    public var id: String
    public var name: String
    /// The container app's `CFBundleIconFile`, nil when none.
    public var iconPath: String?
    /// What the card's header shows beside the name.
    public var icon: AppIcon
    /// The container app's bundle id.
    public var containerID: String
    public var snapshot: Snapshot
    public var hasContent: Bool
    /// Nil until the first update.
    public var lastResult: UpdateResult?
    public var lastFailure: String
    /// µs since the epoch; 0: never.
    public var lastUpdated: UInt64
    /// Seconds between scheduled updates; 0: only on request.
    public var updateInterval: UInt32
    /// When the content changes to the timeline's next entry, µs; 0: none.
    public var nextEntryDate: UInt64
    public var preferredHeight: Double
    /// Top, left, bottom, right.
    public var margins: (Double, Double, Double, Double)
    /// The kind's parameters and families (SPEC section 16), for Edit.
    public var parameters: [WidgetParameter] = []
    public var families: [WidgetFamily] = [.medium]
    /// The instance's settings: its Instance interface's, for an added
    /// one; the defaults and the first family for a kind's own.
    public var configuration = PlistDictionary()
    public var family = WidgetFamily.medium

    public static func == (a: TodayCard, b: TodayCard) -> Bool {
        a.id == b.id && a.name == b.name && a.iconPath == b.iconPath && a.icon == b.icon && a.containerID == b.containerID
            && a.snapshot == b.snapshot && a.hasContent == b.hasContent && a.lastResult == b.lastResult
            && a.lastFailure == b.lastFailure && a.lastUpdated == b.lastUpdated && a.updateInterval == b.updateInterval
            && a.nextEntryDate == b.nextEntryDate && a.preferredHeight == b.preferredHeight && a.margins == b.margins
            && a.parameters == b.parameters && a.families == b.families && a.configuration == b.configuration && a.family == b.family
    }

    /// The object the card shows.
    public var path: ObjectPath { WidgetInstanceID(id)?.path ?? Today.widgetPath(id) }

    /// The card for widget `id` with D-Bus properties `values`;
    /// `entryIcon` finds the icon a container app's desktop entry names,
    /// for apps without `IconPath`.
    public init(id: String, properties values: [String: Value], entryIcon: (String) -> String? = { _ in nil }) {
        typealias W = Today.Widget
        func string(_ property: Property) -> String? { values[property.name]?.string }
        self.id = id
        name = string(W.displayName) ?? id
        iconPath = string(W.iconPath).flatMap { $0.isEmpty ? nil : $0 }
        containerID = string(W.containerBundleIdentifier) ?? ""
        icon = AppIcon(iconPath: iconPath, entryIcon: iconPath == nil ? entryIcon(containerID) : nil)
        snapshot = Snapshot(((try? values[W.snapshot.name].map(ValueMapping.plist)?.dictionary) ?? nil) ?? [:])
        hasContent = values[W.hasContent.name]?.bool ?? true
        lastResult = string(W.lastResult).flatMap(UpdateResult.init(rawValue:))
        lastFailure = string(W.lastFailure) ?? ""
        lastUpdated = values[W.lastUpdated.name]?.uint64 ?? 0
        if case .uint32(let interval)? = values[W.updateInterval.name] { updateInterval = interval } else { updateInterval = 0 }
        nextEntryDate = values[W.nextEntryDate.name]?.uint64 ?? 0
        preferredHeight = values[W.preferredHeight.name]?.double ?? 0
        if case .structure(let fields)? = values[W.marginInsets.name], fields.count == 4 {
            margins = (fields[0].double ?? 0, fields[1].double ?? 0, fields[2].double ?? 0, fields[3].double ?? 0)
        } else {
            margins = (0, 0, 0, 0)
        }
        parameters = (values[W.parameters.name]?.elements ?? []).compactMap(WidgetParameter.init(dbusValue:))
        let families = (values[W.supportedFamilies.name]?.elements ?? []).compactMap { $0.string.flatMap(WidgetFamily.init(rawValue:)) }
        if !families.isEmpty { self.families = families }
        family = self.families.first ?? .medium
        configuration = WidgetConfiguration.complete([:], with: parameters)
    }

    /// Takes an added instance's Instance properties (Configuration, Family).
    public mutating func take(instance values: [String: Value]) {
        if let given = values[Today.Instance.configuration.name].flatMap({ try? ValueMapping.plist($0).dictionary }) {
            configuration = WidgetConfiguration.complete(given, with: parameters)
        }
        if let chosen = values[Today.Instance.family.name]?.string.flatMap(WidgetFamily.init(rawValue:)) { family = chosen }
    }

    public var title: String? { snapshot.title }
    public var subtitle: String? { snapshot.subtitle }
    public var body: String? { snapshot.body }
    public var items: [Snapshot.Item] { snapshot.items }
    public var actions: [Snapshot.Action] { snapshot.actions }
    /// What a tap opens.
    public var url: String? { snapshot.url?.absoluteString }

    /// The picture: the snapshot's bytes, else its image file.
    public var image: Image? {
        if let data = snapshot.image { return .bytes(data) }
        return snapshot.imagePath.map(Image.path)
    }

    /// What a screen reader says for the card.
    public var accessibilityLabel: String {
        snapshot.accessibilityLabel ?? [name, title, subtitle].compactMap { $0 }.joined(separator: ", ")
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
