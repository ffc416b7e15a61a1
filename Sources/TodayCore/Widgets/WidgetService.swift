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
    let layoutStore: LayoutStore
    /// When layout.plist, gone, counts as removed.
    let layoutRemoval = RemovalGrace(WidgetService.removalGrace)
    /// Hears Layout each time it changes (the Center object's property).
    let layoutObserver = Mutex<(@Sendable ([ObjectPath]) -> Void)?>(nil)
    let providers: RunningProviders
    let slots = ProviderSlots(count: 64)
    /// The session's environment, which providers inherit.
    let environment: [String: String]
    let busAddress: String?
    /// How exec providers are confined.
    let confinement: ProviderRun.Confinement
    /// The clock; tests pass their own.
    let clock: ServiceClock
    let state = Mutex(State())

    struct State {
        /// Every instance of every installed kind.
        var widgets: [WidgetInstanceID: Widget] = [:]
        /// The installed kinds, sorted by display name, then id.
        var order: [BundleID] = []
        /// The user's layout, as stored.
        var layout = WidgetLayout()
        /// Each instance by its object's path, for SetLayout and
        /// RemoveWidget, which name instances by path.
        var paths: [ObjectPath: WidgetInstanceID] = [:]
        /// The last Layout announced.
        var announcedLayout: [WidgetInstanceID]?
        /// layout.plist as it was when `layout` was last written to it or
        /// read from it: a change of the file that leaves it so is
        /// todayd's own, and is not read back. Nil where `layout` came from
        /// no file (none there, or none yet).
        var writtenLayout: FileIdentity?
        /// The last scan of the bundle folders, which a layout read again
        /// from its file is laid over.
        var catalog: BundleCatalog?
        /// GetPreview's answers, by kind, family and configuration; a
        /// rescan that changes a manifest forgets them.
        var previews: [String: PlistDictionary] = [:]
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
        layoutStore = LayoutStore(directories: directories)
        let layout = layoutStore.read { log.warning($0) }
        state.withLock { $0.layout = layout }
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

    /// Widget kinds sorted by display name, then id.
    var ids: [BundleID] { state.withLock { $0.order } }

    /// Every instance, in no order.
    var all: [Widget] { state.withLock { Array($0.widgets.values) } }

    /// A kind's default instance: the widget as SPEC section 2 knows it.
    func widget(_ id: BundleID) throws -> Widget {
        try widget(WidgetInstanceID(kind: id))
    }

    func widget(_ id: WidgetInstanceID) throws -> Widget {
        guard let widget = state.withLock({ $0.widgets[id] }) else { throw TodayError.noSuchWidget(id.description) }
        return widget
    }

    /// The instance `id`, or nil after answering `done` with NoSuchWidget.
    func widget<T>(_ id: WidgetInstanceID, else done: (Result<T, any Error>) -> Void) -> Widget? {
        guard let widget = state.withLock({ $0.widgets[id] }) else {
            done(.failure(TodayError.noSuchWidget(id.description)))
            return nil
        }
        return widget
    }

    /// Every instance of `kind`, the default one first.
    func instances(of kind: BundleID) -> [Widget] {
        state.withLock { state in state.widgets.values.filter { $0.id.kind == kind }.sorted { $0.id < $1.id } }
    }

    /// The instances with content, in layout order, then those with
    /// content that are not placed.
    var idsWithContent: [WidgetInstanceID] {
        state.withLock { state in
            state.layout.instances(of: state.order).filter { id in state.widgets[id]?.data.withLock { $0.record.hasContent } ?? false }
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

    /// Brings the widget objects in step with a scan of the bundle folders:
    /// each kind's default instance and the layout's added instances.
    func update(from catalog: BundleCatalog) {
        let now = self.now()
        var added: [Widget] = []
        var removed: [WidgetInstanceID] = []
        var changed: [Widget] = []
        var layoutToSave: WidgetLayout?
        var configured: [Widget] = []
        state.withLock { state in
            state.catalog = catalog
            // A rescan that finds a new kind writes the layout down: an
            // edit not read yet is taken in first, not written over.
            _ = takeInEdit(&state)
            let fresh = Dictionary(catalog.widgets.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
            let kinds = catalog.widgets.map(\.bundleIdentifier).filter { fresh[$0] != nil }
            if state.layout.adopt(kinds) { layoutToSave = state.layout }
            let wanted = Set(state.layout.instances(of: kinds))
            removed = state.widgets.keys.filter { !wanted.contains($0) }
            for id in removed {
                state.widgets[id] = nil
                state.paths[id.path] = nil
            }
            for id in state.layout.instances(of: kinds) {
                guard let manifest = fresh[id.kind] else { continue }
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
                    // Settings the file holds now (edited by hand).
                    if let placed = state.layout.instances[id], existing.data.withLock({ $0.apply(placed, for: id, log: log) }) {
                        configured.append(existing)
                    }
                } else {
                    let widget = makeInstance(id, manifest: manifest, placed: state.layout.instances[id], at: now)
                    state.widgets[id] = widget
                    state.paths[widget.path] = id
                    added.append(widget)
                }
            }
            state.order = kinds
            if !changed.isEmpty || !removed.isEmpty { state.previews = [:] }
        }
        for id in removed {
            connection.objects.unexport(id.path)
            log.debug("widget removed: \(id)")
        }
        for widget in added {
            connection.objects.export(widget.path, [widget.object] + (widget.instanceObject.map { [$0] } ?? []))
            log.debug("widget added: \(widget.id) from \(widget.data.withLock { $0.manifest.path })")
        }
        for widget in changed { publish(widget) }
        for widget in configured {
            widget.instanceObject?.set(widget.data.withLock { Self.instanceProperties(of: $0) }.map { ($0.key, $0.value) })
            performUpdate(widget.id) { _ in }
        }
        if let layoutToSave { saveLayout(layoutToSave) }
        announceLayout()
        scheduler.poke()
    }

    /// A new instance object: its record and timeline as stored, its
    /// settings from the layout (checked against the kind's parameters).
    func makeInstance(_ id: WidgetInstanceID, manifest: WidgetManifest, placed: WidgetLayout.Placed?, at now: Date) -> Widget {
        let record = store.record(id) { log.warning($0) }
        let shownSince = Date(timeIntervalSince1970: TimeInterval(record.lastUpdated / 1_000_000))
        let timeline = store.timeline(id, shownSince: shownSince, at: now) { log.warning($0) }
        var data = Widget.Data(manifest: manifest, record: record, timeline: timeline)
        data.family = manifest.families.first ?? .medium
        if let placed { _ = data.apply(placed, for: id, log: log) }
        data.sandboxed = manifest.providerBusName == nil && confinement.sandboxed
        data.record.schedule.plan(at: now, reload: data.reload, hasContent: record.hasContent, outcome: nil, scheduled: false)
        let object = widgetObject(id, properties: Self.properties(of: data, at: now))
        let instanceObject = id.isDefault ? nil : instanceObject(id, properties: Self.instanceProperties(of: data))
        return Widget(id: id, object: object, instanceObject: instanceObject, data: data)
    }

    /// The user tapped a widget: its snapshot's `url`, or else its app.
    func activate(_ id: WidgetInstanceID, platformData: VariantDictionary) async throws -> String {
        let widget = try widget(id)
        let (url, containerID) = widget.data.withLock { ($0.snapshot[Snapshot.Key.url.rawValue]?.string, $0.manifest.containerBundleIdentifier) }
        if let url, !url.isEmpty { return try await urls.open(url, platformData: platformData) }
        return try await urls.activateApp(containerID, for: id.kind, platformData: platformData)
    }
}
