import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

/// The bundle catalog and the widget objects kept in step with it.
extension TodayService {
    /// Rescans the bundle folders and brings the widget objects in step.
    public func reload() {
        let catalog = BundleCatalog.scan(directories.bundleFolders)
        for problem in catalog.problems { log.warning("skipped bundle: \(problem)") }
        let now = self.now()
        var added: [Widget] = []
        var removed: [BundleID] = []
        var changed: [Widget] = []
        state.withLock { state in
            let fresh = Dictionary(catalog.widgets.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
            removed = state.widgets.keys.filter { fresh[$0] == nil }
            for id in removed { state.widgets[id] = nil }
            for manifest in catalog.widgets {
                let id = manifest.bundleIdentifier
                if let existing = state.widgets[id] {
                    let differs = existing.data.withLock { data in
                        guard data.manifest != manifest else { return false }
                        data.manifest = manifest
                        data.sandboxed = manifest.providerBusName == nil && confinement.sandboxed
                        data.provider = nil
                        data.record.schedule.plan(at: now, reload: data.reload, hasContent: data.record.hasContent, outcome: nil, scheduled: false)
                        return true
                    }
                    if differs { changed.append(existing) }
                } else {
                    let record = store.record(id) { log.warning($0) }
                    let shownSince = Date(timeIntervalSince1970: TimeInterval(record.lastUpdated / 1_000_000))
                    let timeline = store.timeline(id, shownSince: shownSince, at: now) { log.warning($0) }
                    var data = Widget.Data(manifest: manifest, record: record, timeline: timeline)
                    data.sandboxed = manifest.providerBusName == nil && confinement.sandboxed
                    data.record.schedule.plan(at: now, reload: data.reload, hasContent: record.hasContent, outcome: nil, scheduled: false)
                    let object = widgetObject(id, properties: Self.properties(of: data, at: now))
                    let widget = Widget(id: id, object: object, data: data)
                    state.widgets[id] = widget
                    added.append(widget)
                }
            }
            state.order = catalog.widgets.map(\.bundleIdentifier).filter { state.widgets[$0] != nil }
            state.bundleIDs = catalog.bundleIDs
            state.apps = catalog.apps
        }
        groups.update(from: catalog)
        let applications = directories.dataHome + "/applications"
        if BundleDesktopEntries.sync(catalog.apps, folder: applications, log: log) {
            // Refresh mimeinfo.cache so xdg-open finds the handlers.
            if let tool = mimeIndex.configuration.findProgram("update-desktop-database") {
                try? URLDispatch.launch([tool, "-q", applications], environment: environment)
            }
        }
        for id in removed {
            connection.objects.unexport(Today.widgetPath(id))
            log.debug("widget removed: \(id)")
        }
        for widget in added {
            connection.objects.export(Today.widgetPath(widget.id), [widget.object])
            log.debug("widget added: \(widget.id) from \(widget.data.withLock { $0.manifest.path })")
        }
        for widget in changed { publish(widget) }
        scheduleChanged()
    }
}
