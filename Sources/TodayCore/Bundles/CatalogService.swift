import DBus
import FoundationEssentials
import Synchronization
import TodayProtocol

/// The bundle catalog (SPEC section 3): scans the bundle folders and hands
/// each part what it needs of the scan (the widgets their manifests, the
/// groups their entitlements, URL dispatch the apps), and keeps the
/// bundles' desktop entries in step (section 6).
final class CatalogService: Sendable {
    let directories: Directories
    let log: Logger
    private let widgets: WidgetService
    private let groups: GroupService
    private let urls: URLService
    /// Every installed bundle's id, apps' and widgets', from the last scan.
    private let bundleIDs = Mutex<Set<BundleID>>([])

    init(directories: Directories, widgets: WidgetService, groups: GroupService, urls: URLService, log: Logger) {
        self.directories = directories
        self.widgets = widgets
        self.groups = groups
        self.urls = urls
        self.log = log
    }

    /// Whether `id` is an installed bundle's.
    func isInstalled(_ id: String) -> Bool {
        guard let id = BundleID(rawValue: id) else { return false }
        return bundleIDs.withLock { $0.contains(id) }
    }

    /// Rescans the bundle folders and brings every part in step.
    func reload() {
        let catalog = BundleCatalog.scan(directories.bundleFolders)
        for problem in catalog.problems { log.warning("skipped bundle: \(problem)") }
        bundleIDs.withLock { $0 = catalog.bundleIDs }
        urls.update(apps: catalog.apps)
        // Groups first: a widget object that appears finds its groups there.
        groups.update(from: catalog)
        widgets.update(from: catalog)
        let applications = directories.dataHome + "/applications"
        if BundleDesktopEntries.sync(catalog.apps, folder: applications, log: log) {
            // Refresh mimeinfo.cache so xdg-open finds the handlers.
            if let tool = urls.mimeIndex.configuration.findProgram("update-desktop-database") {
                try? URLDispatch.launch([tool, "-q", applications], environment: urls.environment)
            }
        }
    }
}
