import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

/// The widgets (SPEC sections 2, 4, 8 to 10): one object per installed
/// widget extension, its provider runs, their snapshots and timelines,
/// the schedule and the records on disk. Updates, actions, properties and
/// the scheduler's walk are in the files beside this one; the records'
/// writes are `RecordWriter`'s, the timer `WidgetScheduler`'s.
final class WidgetService: Sendable {
    let connection: Connection
    let directories: Directories
    let identities: Identities
    let groups: GroupService
    let urls: URLService
    let log: Logger
    let store: WidgetStore
    let records: RecordWriter
    let scheduler: WidgetScheduler
    let providers: RunningProviders
    let slots = ProviderSlots(count: 64)
    /// The session's environment, which providers inherit.
    let environment: [String: String]
    let busAddress: String?
    /// How exec providers are confined.
    let confinement: ProviderRun.Confinement
    /// The clock; tests pass their own.
    let clock: ServiceClock
    private let state = Mutex(State())

    private struct State {
        var widgets: [BundleID: Widget] = [:]
        /// Sorted by display name, then id.
        var order: [BundleID] = []
        var stopping = false
        /// Update calls each connection has waiting for an answer.
        var pendingCalls: [String: Int] = [:]
    }

    init(
        connection: Connection, directories: Directories, identities: Identities, providers: RunningProviders, groups: GroupService,
        urls: URLService, log: Logger, environment: [String: String], busAddress: String?, confinement: ProviderRun.Confinement,
        clock: ServiceClock
    ) {
        self.connection = connection
        self.directories = directories
        self.identities = identities
        self.providers = providers
        self.groups = groups
        self.urls = urls
        self.log = log
        self.environment = environment
        self.busAddress = busAddress
        self.confinement = confinement
        self.clock = clock
        store = WidgetStore(directories: directories)
        records = RecordWriter(store: store, log: log)
        scheduler = WidgetScheduler(clock: clock, log: log)
    }

    /// What time it is, by the service's clock.
    func now() -> Date { clock.now }

    /// Starts the scheduler.
    func start() {
        scheduler.start { [weak self] in self?.runDueUpdates() }
    }

    /// Stops the scheduler and the providers, and waits (a few seconds at
    /// most) until what is being written is on disk. Updates cut short are
    /// not recorded as failures.
    func stop() async {
        let widgets = state.withLock { state in
            state.stopping = true
            return Array(state.widgets.values)
        }
        scheduler.stop()
        providers.killAll()
        let running = widgets.flatMap { widget in widget.data.withLock { Array($0.lifecycle.runs.values) } }
        let finished = Task {
            for update in running { _ = await update.result() }
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(3))
            finished.cancel()
        }
        _ = await finished.value
        deadline.cancel()
        records.flush()
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Widget ids sorted by display name, then id.
    var ids: [BundleID] { state.withLock { $0.order } }

    /// Every widget, in no order.
    var all: [Widget] { state.withLock { Array($0.widgets.values) } }

    func widget(_ id: BundleID) throws -> Widget {
        guard let widget = state.withLock({ $0.widgets[id] }) else { throw TodayError.noSuchWidget(id.rawValue) }
        return widget
    }

    /// The widget `id`, or nil after answering `done` with NoSuchWidget.
    func widget<T>(_ id: BundleID, else done: (Result<T, any Error>) -> Void) -> Widget? {
        guard let widget = state.withLock({ $0.widgets[id] }) else {
            done(.failure(TodayError.noSuchWidget(id.rawValue)))
            return nil
        }
        return widget
    }

    /// The widgets with content, in order.
    var idsWithContent: [BundleID] {
        state.withLock { state in
            state.order.filter { id in state.widgets[id]?.data.withLock { $0.record.hasContent } ?? false }
        }
    }

    // MARK: Calls waiting for an update

    /// Update calls one connection may have waiting at once; past it,
    /// LimitsExceeded, so one client cannot pile up work for everyone.
    static let maximumPendingCalls = 64

    func limitingCalls<T: Sendable>(of sender: String, _ body: () async throws -> T) async throws -> T {
        try admit(sender)
        defer { release(sender) }
        return try await body()
    }

    /// Counts a call of `sender` that waits for an update, or refuses it.
    func admit(_ sender: String) throws {
        let admitted = state.withLock { state -> Bool in
            let count = state.pendingCalls[sender, default: 0]
            guard count < Self.maximumPendingCalls else { return false }
            state.pendingCalls[sender] = count + 1
            return true
        }
        guard admitted else {
            throw DBusError(.limitsExceeded, "this connection already waits for \(Self.maximumPendingCalls) updates; wait for their answers first")
        }
    }

    func release(_ sender: String) {
        state.withLock { state in
            let count = state.pendingCalls[sender, default: 1] - 1
            state.pendingCalls[sender] = count > 0 ? count : nil
        }
    }

    // MARK: The catalog

    /// Brings the widget objects in step with a scan of the bundle folders.
    func update(from catalog: BundleCatalog) {
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
        scheduler.poke()
    }

    /// The user tapped a widget: its snapshot's `url`, or else its app.
    func activate(_ id: BundleID, platformData: VariantDictionary) async throws -> String {
        let widget = try widget(id)
        let (url, containerID) = widget.data.withLock { ($0.snapshot[Snapshot.Key.url.rawValue]?.string, $0.manifest.containerBundleIdentifier) }
        if let url, !url.isEmpty { return try await urls.open(url, platformData: platformData) }
        return try await urls.activateApp(containerID, for: id, platformData: platformData)
    }
}
