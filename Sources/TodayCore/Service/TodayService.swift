import DBus
import FoundationEssentials
import Glibc
import Synchronization
import TodayProtocol

/// The todayd service on one bus connection, composed of its parts: who
/// callers are (`Identities`), the app groups (`GroupService`), URL
/// dispatch (`URLService`), the widgets (`WidgetService`) and the bundle
/// catalog that keeps them in step with the bundle folders
/// (`CatalogService`). Each owns its state and its objects; the manager
/// object's Center interface binds their methods. The one place they are
/// made and connected.
public final class TodayService: Sendable {
    public let connection: Connection
    public let directories: Directories
    public let identities: Identities
    let log: Logger
    let groups: GroupService
    let urls: URLService
    let widgets: WidgetService
    let catalog: CatalogService
    /// The notification server; nil with `--no-notifications`.
    let notifications: NotificationService?
    private let center: ExportedInterface

    public init(
        connection: Connection, directories: Directories, log: Logger, environment: [String: String] = [:],
        busAddress: String? = nil, userID: UInt32 = getuid(), procRoot: String = "/proc", clock: ServiceClock = .system,
        confinement: ProviderRun.Confinement = .none, notifications serveNotifications: Bool = true
    ) {
        self.connection = connection
        self.directories = directories
        self.log = log
        let providers = RunningProviders()
        identities = Identities(userID: userID, procRoot: procRoot, providers: providers)
        groups = GroupService(connection: connection, identities: identities, directories: directories, log: log)
        urls = URLService(connection: connection, identities: identities, environment: environment, busAddress: busAddress, log: log)
        widgets = WidgetService(
            connection: connection, directories: directories, identities: identities, providers: providers, groups: groups, urls: urls,
            log: log, environment: environment, busAddress: busAddress, confinement: confinement, clock: clock)
        catalog = CatalogService(directories: directories, widgets: widgets, groups: groups, urls: urls, log: log)
        notifications =
            serveNotifications
            ? NotificationService(
                connection: connection, directories: directories, identities: identities, urls: urls, log: log, clock: clock,
                appOf: { [widgets] bundle in
                    // A widget notifies as its container app.
                    guard let id = BundleID(rawValue: bundle), let widget = try? widgets.widget(id) else { return bundle }
                    return widget.data.withLock { $0.manifest.containerBundleIdentifier.rawValue }
                },
                iconOf: { [widgets] app in
                    // The app's icon, as its widgets' cards show it.
                    let manifests = widgets.all.map { $0.data.withLock { $0.manifest } }
                    return manifests.first { $0.containerBundleIdentifier.rawValue == app && !$0.iconPath.isEmpty }?.iconPath
                }, environment: environment)
            : nil
        center = Self.centerObject(
            bundleFolders: directories.bundleFolders, widgets: widgets, groups: groups, urls: urls, catalog: catalog, identities: identities,
            log: log, notificationServer: serveNotifications ? "queued" : "off",
            reload: { [catalog, notifications] in Self.reloadAll(catalog: catalog, notifications: notifications) })
        widgets.layoutObserver.withLock { [center] observer in
            observer = { paths in center.set(Today.Center.layout.name, .objectPaths(paths)) }
        }
        connection.objects.setGate(
            identities.gate(on: connection, fireAndForget: serveNotifications ? [Notifications.freedesktopPath, Notifications.gtkPath] : []))
        connection.objects.addObjectManager(at: Today.managerPath)
        connection.objects.export(Today.managerPath, [center] + (notifications.map { [$0.center] } ?? []))
    }

    /// Starts what runs in the background: forgetting connections that
    /// leave the bus, and the scheduler.
    public func start() async throws {
        try await connection.subscribe(
            MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged)
        ) { [identities, notifications] message in
            let args = message.body.compactMap(\.string)
            if args.count == 3, args[0].hasPrefix(":"), args[2].isEmpty {
                identities.forget(args[0])
                notifications?.left(args[0])
            }
            if args.count == 3, args[0] == Notifications.bannersName.rawValue, !args[2].isEmpty {
                notifications?.bannersAppeared()
            }
        }
        widgets.start()
        notifications?.start()
    }

    /// Says who serves org.freedesktop.Notifications (Center.NotificationServer).
    public func setNotificationServer(_ state: String) {
        center.set(Today.Center.notificationServer.name, .string(state))
    }

    /// Stops the scheduler and the providers, and waits (a few seconds at
    /// most) until what is being written is on disk.
    public func stop() async {
        await widgets.stop()
        notifications?.stop()
    }

    /// Rescans the bundle folders and brings every part in step.
    public func reload() {
        catalog.reload()
    }

    /// What SIGHUP and `Reload()` (`todayctl reload`) do: the user's
    /// notifications.plist read again and the bundle folders rescanned,
    /// which reads layout.plist again where it changed
    /// (`WidgetService.takeInEdit`). The watcher otherwise follows both
    /// files, but cannot see a change behind a symbolic link into another
    /// folder, nor anything without inotify.
    public func reloadAll() {
        Self.reloadAll(catalog: catalog, notifications: notifications)
    }

    static func reloadAll(catalog: CatalogService, notifications: NotificationService?) {
        notifications?.readSettingsAgain()
        catalog.reload()
    }

    /// Widget ids sorted by display name, then id.
    public var widgetIDs: [BundleID] { widgets.ids }

    /// The desktop entries and mimeapps.list files URL dispatch reads.
    var mimeIndex: MimeIndexCache { urls.mimeIndex }
}
