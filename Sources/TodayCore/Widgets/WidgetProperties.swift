import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

/// One property of a widget object: its declaration (SPEC section 4) and
/// how its value follows from the widget's state. GetAll's first values,
/// the publish after an update and after a timeline switch all come from
/// the rows below.
struct WidgetPropertyRow: Sendable {
    /// What moves the value.
    enum Source: Sendable {
        /// The bundle's manifest (a rescan), or the widget's record outside updates.
        case manifest
        /// The timeline's current entry: a switch, an update with new content, a toggle.
        case entry
        /// The timeline as a whole: an update with new content.
        case timeline
        /// Every update's outcome.
        case outcome
    }

    let property: Property
    let source: Source
    let value: @Sendable (WidgetService.Widget.Data, Date) -> Value

    init(_ property: Property, _ source: Source, _ value: @escaping @Sendable (WidgetService.Widget.Data, Date) -> Value) {
        self.property = property
        self.source = source
        self.value = value
    }
}

extension WidgetService {
    fileprivate typealias Members = Today.Widget

    /// Every property of `Today.widget`, in its order.
    static let widgetProperties: [WidgetPropertyRow] = [
        WidgetPropertyRow(Members.bundleIdentifier, .manifest) { data, _ in .string(data.manifest.bundleIdentifier.rawValue) },
        WidgetPropertyRow(Members.containerBundleIdentifier, .manifest) { data, _ in .string(data.manifest.containerBundleIdentifier.rawValue) },
        WidgetPropertyRow(Members.displayName, .manifest) { data, _ in .string(data.manifest.displayName) },
        WidgetPropertyRow(Members.localizedDisplayNames, .manifest) { data, _ in
            .dictionary(
                key: .string, value: .string,
                data.manifest.localizedDisplayNames.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .string($0.value)) })
        },
        WidgetPropertyRow(Members.iconPath, .manifest) { data, _ in .string(data.manifest.iconPath) },
        WidgetPropertyRow(Members.hasContent, .manifest) { data, _ in .boolean(data.record.hasContent) },
        WidgetPropertyRow(Members.preferredHeight, .manifest) { data, _ in .double(data.manifest.preferredHeight) },
        WidgetPropertyRow(Members.marginInsets, .manifest) { data, _ in
            let insets = data.manifest.marginInsets
            return .structure([.double(insets.top), .double(insets.left), .double(insets.bottom), .double(insets.right)])
        },
        WidgetPropertyRow(Members.snapshot, .entry) { data, _ in ValueMapping.dbus(data.snapshot) },
        WidgetPropertyRow(Members.currentEntryDate, .entry) { data, _ in
            .uint64(data.timeline.current.map { ValueMapping.microseconds($0.date) } ?? 0)
        },
        WidgetPropertyRow(Members.nextEntryDate, .entry) { data, _ in .uint64(data.timeline.nextDate.map(ValueMapping.microseconds) ?? 0) },
        WidgetPropertyRow(Members.relevance, .entry) { data, _ in .double(data.timeline.current?.relevance ?? 0) },
        WidgetPropertyRow(Members.reloadPolicy, .timeline) { data, _ in .string(data.timeline.policy.name) },
        WidgetPropertyRow(Members.sandboxed, .manifest) { data, _ in .boolean(data.sandboxed) },
        WidgetPropertyRow(Members.lastResult, .outcome) { data, _ in .string(data.record.lastResult?.rawValue ?? "") },
        WidgetPropertyRow(Members.lastFailure, .outcome) { data, _ in .string(data.record.lastFailure?.description ?? "") },
        WidgetPropertyRow(Members.lastUpdated, .outcome) { data, _ in .uint64(data.record.lastUpdated) },
        WidgetPropertyRow(Members.updateInterval, .manifest) { data, _ in .uint32(data.manifest.updateInterval) },
        WidgetPropertyRow(Members.nextScheduledUpdate, .outcome) { data, _ in
            .uint64(data.record.schedule.next.map(ValueMapping.microseconds) ?? 0)
        },
        WidgetPropertyRow(Members.scheduledUpdatesLeftToday, .outcome) { data, now in .uint32(data.record.schedule.left(at: now)) },
        WidgetPropertyRow(Members.groups, .manifest) { data, _ in .strings(data.manifest.groups.map(\.rawValue)) },
        WidgetPropertyRow(Members.parameters, .manifest) { data, _ in
            .array(.dictionary(key: .string, value: .variant), data.manifest.parameters.map(\.dbusValue))
        },
        WidgetPropertyRow(Members.supportedFamilies, .manifest) { data, _ in .strings(data.manifest.families.map(\.rawValue)) },
    ]

    /// The values of the rows from `sources`, in declaration order.
    static func values(of data: Widget.Data, at now: Date, from sources: Set<WidgetPropertyRow.Source>) -> [(String, Value)] {
        widgetProperties.compactMap { row in sources.contains(row.source) ? (row.property.name, row.value(data, now)) : nil }
    }

    static func properties(of data: Widget.Data, at now: Date) -> [String: Value] {
        Dictionary(uniqueKeysWithValues: widgetProperties.map { ($0.property.name, $0.value(data, now)) })
    }

    /// Announces a widget's current state (PropertiesChanged for what changed).
    func publish(_ widget: Widget) {
        let now = self.now()
        let values = widget.data.withLock { data in
            Self.widgetProperties.compactMap { row in
                row.property.changeSignal == .const ? nil : (row.property.name, row.value(data, now))
            }
        }
        widget.object.set(values)
        scheduler.poke()
    }

    /// The properties that follow the timeline's current entry.
    static func entryProperties(of data: Widget.Data, at now: Date) -> [(String, Value)] {
        values(of: data, at: now, from: [.entry])
    }
}
