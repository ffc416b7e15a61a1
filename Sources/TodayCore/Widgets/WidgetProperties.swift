import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// What a widget object shows, computed from its state, and its
/// PropertiesChanged announcements.
extension TodayService {
    static func properties(of data: Widget.Data, at now: Date) -> [String: Value] {
        let manifest = data.manifest
        let insets = manifest.marginInsets
        let record = data.record
        return [
            "BundleIdentifier": .string(manifest.bundleIdentifier),
            "ContainerBundleIdentifier": .string(manifest.containerBundleIdentifier),
            "DisplayName": .string(manifest.displayName),
            "LocalizedDisplayNames": .dictionary(
                key: .string, value: .string,
                manifest.localizedDisplayNames.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .string($0.value)) }),
            "IconPath": .string(manifest.iconPath),
            "HasContent": .boolean(record.hasContent),
            "PreferredHeight": .double(manifest.preferredHeight),
            "MarginInsets": .structure([.double(insets.top), .double(insets.left), .double(insets.bottom), .double(insets.right)]),
            "Snapshot": ValueMapping.dbus(data.snapshot),
            "CurrentEntryDate": .uint64(data.timeline.current.map { ValueMapping.microseconds($0.date) } ?? 0),
            "NextEntryDate": .uint64(data.timeline.nextDate.map(ValueMapping.microseconds) ?? 0),
            "Relevance": .double(data.timeline.current?.relevance ?? 0),
            "ReloadPolicy": .string(data.timeline.policy.name),
            "Sandboxed": .boolean(data.sandboxed),
            "LastResult": .string(record.lastResult?.rawValue ?? ""),
            "LastFailure": .string(record.lastFailure?.description ?? ""),
            "LastUpdated": .uint64(record.lastUpdated),
            "UpdateInterval": .uint32(manifest.updateInterval),
            "NextScheduledUpdate": .uint64(record.schedule.next.map(ValueMapping.microseconds) ?? 0),
            "ScheduledUpdatesLeftToday": .uint32(record.schedule.left(at: now)),
            "Groups": .strings(manifest.groups),
        ]
    }

    /// Announces a widget's current state (PropertiesChanged for what changed).
    func publish(_ widget: Widget) {
        let now = self.now()
        let values = widget.data.withLock { Self.properties(of: $0, at: now) }
        widget.object.set(
            Today.widget.properties.compactMap { property in
                guard property.changeSignal != .const, let value = values[property.name] else { return nil }
                return (property.name, value)
            })
        scheduleChanged()
    }

    /// What is due next may have changed: the scheduler looks again.
    func scheduleChanged() {
        state.withLock { $0.timer }?.poke()
    }

    /// The properties that follow the timeline's current entry.
    static func entryProperties(of data: Widget.Data) -> [(String, Value)] {
        [
            ("Snapshot", ValueMapping.dbus(data.snapshot)),
            ("CurrentEntryDate", .uint64(data.timeline.current.map { ValueMapping.microseconds($0.date) } ?? 0)),
            ("NextEntryDate", .uint64(data.timeline.nextDate.map(ValueMapping.microseconds) ?? 0)),
            ("Relevance", .double(data.timeline.current?.relevance ?? 0)),
        ]
    }

    /// Announces what an update changes, without recomputing the rest.
    func publishUpdate(_ widget: Widget, snapshotChanged: Bool) {
        let now = self.now()
        let changes = widget.data.withLock { data -> [(String, Value)] in
            let record = data.record
            var changes: [(String, Value)] = [
                ("LastResult", .string(record.lastResult?.rawValue ?? "")), ("LastFailure", .string(record.lastFailure?.description ?? "")),
                ("LastUpdated", .uint64(record.lastUpdated)),
                ("NextScheduledUpdate", .uint64(record.schedule.next.map(ValueMapping.microseconds) ?? 0)),
                ("ScheduledUpdatesLeftToday", .uint32(record.schedule.left(at: now))),
            ]
            if snapshotChanged { changes += Self.entryProperties(of: data) + [("ReloadPolicy", .string(data.timeline.policy.name))] }
            return changes
        }
        widget.object.set(changes)
        scheduleChanged()
    }

}
