import DBus
import Foundation
import Synchronization

/// The todayd service on one bus connection: the manager object and one
/// object per installed widget, kept in step with the bundle folders.
public final class TodayService: Sendable {
    public let connection: Connection
    public let directories: Directories
    private let log: Logger
    private let center: ExportedInterface
    private let state = Mutex(State())

    private struct State {
        var widgets: [String: (manifest: WidgetManifest, object: ExportedInterface)] = [:]
        var order: [String] = []
    }

    public init(connection: Connection, directories: Directories, log: Logger) {
        self.connection = connection
        self.directories = directories
        self.log = log
        let holder = Mutex<TodayService?>(nil)
        center = ExportedInterface(
            Today.center,
            properties: ["Version": .string(Today.version), "BundleDirectories": .strings(directories.bundleFolders)],
            methods: [
                "Reload": { _ in
                    holder.withLock { $0 }?.reload()
                    return []
                }
            ],
            immediate: [
                "ListWidgets": { _ in
                    let paths = holder.withLock { $0 }?.widgetIDs.map(Today.widgetPath) ?? []
                    return [.objectPaths(paths)]
                }
            ])
        holder.withLock { $0 = self }
        connection.objects.addObjectManager(at: Today.managerPath)
        connection.objects.export(Today.managerPath, [center])
    }

    /// Widget ids sorted by display name, then id.
    public var widgetIDs: [String] { state.withLock { $0.order } }

    /// Rescans the bundle folders and brings the widget objects in step.
    public func reload() {
        let catalog = BundleCatalog.scan(directories.bundleFolders)
        for problem in catalog.problems { log.warning("skipped bundle: \(problem)") }
        let (added, removed, changed) = state.withLock { state -> ([(WidgetManifest, ExportedInterface)], [String], [(WidgetManifest, ExportedInterface)]) in
            var added: [(WidgetManifest, ExportedInterface)] = []
            var changed: [(WidgetManifest, ExportedInterface)] = []
            let fresh = Dictionary(catalog.widgets.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
            let removed = state.widgets.keys.filter { fresh[$0] == nil }
            for id in removed { state.widgets[id] = nil }
            for manifest in catalog.widgets {
                if let existing = state.widgets[manifest.bundleIdentifier] {
                    if existing.manifest != manifest {
                        state.widgets[manifest.bundleIdentifier] = (manifest, existing.object)
                        changed.append((manifest, existing.object))
                    }
                } else {
                    let object = ExportedInterface(Today.widget, properties: Self.properties(of: manifest))
                    state.widgets[manifest.bundleIdentifier] = (manifest, object)
                    added.append((manifest, object))
                }
            }
            state.order = catalog.widgets.map(\.bundleIdentifier).filter { state.widgets[$0] != nil }
            return (added, removed, changed)
        }
        for id in removed {
            connection.objects.unexport(Today.widgetPath(id))
            log.info("widget removed: \(id)")
        }
        for (manifest, object) in added {
            connection.objects.export(Today.widgetPath(manifest.bundleIdentifier), [object])
            log.info("widget added: \(manifest.bundleIdentifier) from \(manifest.path)")
        }
        for (manifest, object) in changed {
            object.set(Self.properties(of: manifest).map { ($0.key, $0.value) }.filter { Today.widget.property(named: $0.0)?.changeSignal != .const })
        }
    }

    static func properties(of manifest: WidgetManifest) -> [String: Value] {
        let insets = manifest.marginInsets
        return [
            "BundleIdentifier": .string(manifest.bundleIdentifier),
            "ContainerBundleIdentifier": .string(manifest.containerBundleIdentifier),
            "DisplayName": .string(manifest.displayName),
            "IconPath": .string(manifest.iconPath),
            "PreferredHeight": .double(manifest.preferredHeight),
            "MarginInsets": .structure([.double(insets.top), .double(insets.left), .double(insets.bottom), .double(insets.right)]),
            "UpdateInterval": .uint32(manifest.updateInterval),
            "Groups": .strings(manifest.groups),
        ]
    }
}

/// Log lines to standard error; info lines only when verbose.
public struct Logger: Sendable {
    public var verbose: Bool
    public init(verbose: Bool) { self.verbose = verbose }
    public func info(_ message: String) { if verbose { write("todayd: \(message)\n") } }
    public func warning(_ message: String) { write("todayd: \(message)\n") }
    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}
