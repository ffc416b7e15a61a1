import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// The todayd service on one bus connection: the manager object and one
/// object per installed widget, kept in step with the bundle folders; the
/// provider runs, their snapshots and the schedule.
public final class TodayService: Sendable {
    public let connection: Connection
    public let directories: Directories
    public let identities: Identities
    let groups: GroupService
    let log: Logger
    let store: WidgetStore
    /// The desktop entries and mimeapps.list files, read again when they change.
    let mimeIndex: MimeIndexCache
    /// The processes started to open URLs, to see a URL come back.
    let urlLaunches = URLLaunches()
    let providers = RunningProviders()
    let slots = ProviderSlots(count: 64)
    /// The session's environment, which providers inherit.
    let environment: [String: String]
    let busAddress: String?
    /// How exec providers are confined.
    let confinement: ProviderRun.Confinement
    /// The clock; tests pass their own.
    let now: @Sendable () -> Date
    private let center: ExportedInterface
    let state = Mutex(State())

    struct State {
        var widgets: [String: Widget] = [:]
        var order: [String] = []
        var bundleIDs: Set<String> = []
        var apps: [AppManifest] = []
        var scheduler: Task<Void, Never>?
        var stopping = false
        /// Widgets whose record changed since it was last written.
        var unsaved: Set<String> = []
        /// Update calls each connection has waiting for an answer.
        var pendingCalls: [String: Int] = [:]
        var flush: Task<Void, Never>?
    }

    /// One widget: its object, manifest, remembered state and snapshot,
    /// and the update running for it, which later callers share.
    final class Widget: Sendable {
        let id: String
        let object: ExportedInterface
        let data: Mutex<Data>
        /// Provider runs of this widget, updates and actions, one at a time.
        let runs = RunQueue()
        /// Held while the record is copied and written, so that writes of
        /// one file land in the order of the changes they carry: each
        /// writes the record as it is when its turn comes.
        let recordWriter = Mutex(())

        struct Data {
            var manifest: WidgetManifest
            var record: WidgetRecord
            var timeline: Timeline
            /// The update running or waiting its turn, which later update calls join.
            var running: UpdateInProgress?
            /// The actions running or waiting, which calls for the same action and state join.
            var actionRuns: [ProviderAction: UpdateInProgress] = [:]
            /// The exec provider made from `manifest`, once it has run.
            var provider: Result<ExecProvider, ProviderRun.Problem>?

            /// Whether its provider runs confined: an exec provider where
            /// the sandbox is available (D-Bus providers are started by the bus).
            var sandboxed = false

            /// What the current entry shows.
            var snapshot: PlistDictionary { timeline.snapshot }

            /// What decides the next scheduled update: the timeline's policy.
            var reload: Schedule.Reload {
                switch timeline.policy {
                case .interval: .interval(manifest.updateInterval)
                case .atEnd: timeline.lastDate.map(Schedule.Reload.at) ?? .interval(manifest.updateInterval)
                case .after(let date): .at(date)
                case .never: .none
                }
            }
        }

        init(id: String, object: ExportedInterface, data: Data) {
            self.id = id
            self.object = object
            self.data = Mutex(data)
        }
    }

    public init(
        connection: Connection, directories: Directories, log: Logger, environment: [String: String] = [:],
        busAddress: String? = nil, userID: UInt32 = getuid(), procRoot: String = "/proc", now: @escaping @Sendable () -> Date = { Date() },
        confinement: ProviderRun.Confinement = .none
    ) {
        self.confinement = confinement
        self.connection = connection
        self.directories = directories
        self.log = log
        self.environment = environment
        self.busAddress = busAddress
        self.now = now
        store = WidgetStore(directories: directories)
        mimeIndex = MimeIndexCache(configuration: MimeApps(environment: environment))
        identities = Identities(userID: userID, procRoot: procRoot, providers: providers)
        groups = GroupService(connection: connection, identities: identities, directories: directories, log: log)
        let holder = Mutex<TodayService?>(nil)
        @Sendable func service() throws -> TodayService {
            guard let service = holder.withLock({ $0 }) else { throw DBusError.failed("todayd is shutting down") }
            return service
        }
        center = ExportedInterface(
            Today.center,
            properties: ["Version": .string(Today.version), "BundleDirectories": .strings(directories.bundleFolders)],
            methods: [
                "Reload": { _ in
                    try service().reload()
                    return []
                },
                "UpdateAll": { call in
                    let service = try service()
                    let results = try await service.limitingCalls(of: call.sender) { await service.updateAll() }
                    return [.dictionary(key: .string, value: .string, results.map { DictionaryEntry(.string($0.0), .string($0.1)) })]
                },
                "SetHasContent": { call in
                    try await service().setHasContent(call, call.arguments[0].bool ?? true, widget: try Self.widgetID(call.arguments[1]))
                    return []
                },
                "OpenURL": { call in
                    [.string(try await service().open(call.arguments[0].string ?? "", platformData: call.arguments[1], from: call))]
                },
                "ResolveURL": { call in
                    [.string(try await service().resolve(call.arguments[0].string ?? "").id)]
                },
                "ContainerPathForGroup": { call in
                    let service = try service()
                    let store = try await service.groups.authorize(call, call.arguments[0].string ?? "")
                    do {
                        return [.string(try store.makeContainer())]
                    } catch {
                        throw TodayError.storage("cannot create the group's container: \(error)")
                    }
                },
                "GroupObject": { call in
                    let service = try service()
                    let store = try await service.groups.authorize(call, call.arguments[0].string ?? "")
                    return [.objectPath(Today.groupPath(store.identifier))]
                },
                "ReloadTimelines": { call in
                    try await service().reloadTimelines(call, widget: try Self.widgetID(call.arguments[0]))
                    return []
                },
                "ReloadAllTimelines": { call in
                    try await service().reloadAllTimelines(call)
                    return []
                },
                "RegisterApp": { call in
                    let service = try service()
                    let id = call.arguments[0].string ?? ""
                    guard BundleCatalog.isValidBundleID(id) else {
                        throw TodayError.invalidArgs("'\(id.prefix(300))' is not a bundle id: reverse-DNS, [A-Za-z0-9.-], at most 255 bytes")
                    }
                    try await service.identities.register(call, as: id) { id in
                        service.state.withLock { $0.bundleIDs.contains(id) }
                    }
                    service.log.info("\(call.sender) registered as \(id)")
                    return []
                },
            ],
            immediate: [
                "ListWidgets": { _ in
                    [.objectPaths(try service().widgetIDs.map(Today.widgetPath))]
                }
            ],
            deferred: [
                "PerformUpdate": { call, answer in
                    try service().answerUpdate(try Self.widgetID(call.arguments[0]), call, answer)
                }
            ])
        holder.withLock { $0 = self }
        connection.objects.setGate(identities.gate(on: connection))
        connection.objects.addObjectManager(at: Today.managerPath)
        connection.objects.export(Today.managerPath, [center])
    }

    /// A widget id argument: a bundle id, or InvalidArgs.
    static func widgetID(_ value: Value) throws -> String {
        let id = value.string ?? ""
        guard BundleCatalog.isValidBundleID(id) else {
            throw TodayError.invalidArgs("'\(id.prefix(300))' is not a widget id: a bundle id such as tech.agostini.app.LatestPost")
        }
        return id
    }

    /// Starts what runs in the background: forgetting connections that
    /// leave the bus, and the scheduler.
    public func start() async throws {
        try await connection.subscribe(
            MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: MemberName("NameOwnerChanged"))
        ) { [identities] message in
            let args = message.body.compactMap(\.string)
            if args.count == 3, args[0].hasPrefix(":"), args[2].isEmpty { identities.forget(args[0]) }
        }
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                let wait = self.runDueUpdates()
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
            }
        }
        state.withLock { $0.scheduler = task }
    }

    /// Stops the scheduler and the providers, and waits (a few seconds at
    /// most) until what is being written is on disk. Updates cut short are
    /// not recorded as failures.
    public func stop() async {
        let (scheduler, widgets) = state.withLock { state in
            state.stopping = true
            return (state.scheduler, Array(state.widgets.values))
        }
        scheduler?.cancel()
        providers.killAll()
        let running = widgets.compactMap { widget in widget.data.withLock { $0.running } }
        let finished = Task {
            for update in running { _ = await update.result() }
        }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(3))
            finished.cancel()
        }
        _ = await finished.value
        deadline.cancel()
        flushRecords()
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// One field of the state.
    func state<T: Sendable>(_ field: KeyPath<State, T> & Sendable) -> T { state.withLock { $0[keyPath: field] } }

    /// Widget ids sorted by display name, then id.
    public var widgetIDs: [String] { state.withLock { $0.order } }

    func widget(_ id: String) throws -> Widget {
        guard let widget = state.withLock({ $0.widgets[id] }) else { throw TodayError.noSuchWidget(id) }
        return widget
    }

    // MARK: Bundles

    /// Rescans the bundle folders and brings the widget objects in step.
    public func reload() {
        let catalog = BundleCatalog.scan(directories.bundleFolders)
        for problem in catalog.problems { log.warning("skipped bundle: \(problem)") }
        let now = self.now()
        var added: [Widget] = []
        var removed: [String] = []
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
                    let object = ExportedInterface(
                        Today.widget, properties: Self.properties(of: data, at: now),
                        methods: [
                            "Activate": { [weak self] call in
                                guard let self else { throw DBusError.failed("todayd is shutting down") }
                                return [.string(try await self.activate(id, platformData: call.arguments[0]))]
                            },
                            "PerformAction": { [weak self] call in
                                guard let self else { throw DBusError.failed("todayd is shutting down") }
                                let actionID = call.arguments[0].string ?? ""
                                let result = try await self.limitingCalls(of: call.sender) { try await self.performAction(id, action: actionID) }
                                return [.string(result)]
                            },
                            "GetTimeline": { [weak self] _ in
                                guard let self else { throw DBusError.failed("todayd is shutting down") }
                                return [try self.timelineValue(id)]
                            },
                        ],
                        deferred: [
                            "PerformUpdate": { [weak self] call, answer in
                                guard let self else { throw DBusError.failed("todayd is shutting down") }
                                try self.answerUpdate(id, call, answer)
                            }
                        ])
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
            log.info("widget removed: \(id)")
        }
        for widget in added {
            connection.objects.export(Today.widgetPath(widget.id), [widget.object])
            log.info("widget added: \(widget.id) from \(widget.data.withLock { $0.manifest.path })")
        }
        for widget in changed { publish(widget) }
    }

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
            "LastResult": .string(record.lastResult),
            "LastFailure": .string(record.lastFailure),
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
                ("LastResult", .string(record.lastResult)), ("LastFailure", .string(record.lastFailure)),
                ("LastUpdated", .uint64(record.lastUpdated)),
                ("NextScheduledUpdate", .uint64(record.schedule.next.map(ValueMapping.microseconds) ?? 0)),
                ("ScheduledUpdatesLeftToday", .uint32(record.schedule.left(at: now))),
            ]
            if snapshotChanged { changes += Self.entryProperties(of: data) + [("ReloadPolicy", .string(data.timeline.policy.name))] }
            return changes
        }
        widget.object.set(changes)
    }

    // MARK: Updates

    /// Update calls one connection may have waiting at once; past it,
    /// LimitsExceeded, so one client cannot pile up work for everyone.
    public static let maximumPendingCalls = 64

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

    /// PerformUpdate from the bus: started on the connection's loop thread
    /// and answered by whichever thread finishes the update (a provider's,
    /// usually), with no task in between.
    func answerUpdate(_ id: String, _ call: MethodCall, _ answer: PendingAnswer) throws {
        let sender = call.sender
        try admit(sender)
        performUpdate(id) { [self] result in
            release(sender)
            answer.complete(result.map { [.string($0)] })
        }
    }

    /// Runs the widget's provider, or joins the run already going, and
    /// publishes the outcome.
    ///
    /// A provider that keeps failing is not started again on request until
    /// its back-off (`Schedule.requestDelay`) has passed: such a call is
    /// answered with Error.ProviderFailed at once.
    public func performUpdate(_ id: String, scheduled: Bool = false) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            performUpdate(id, scheduled: scheduled) { continuation.resume(with: $0) }
        }
    }

    /// `performUpdate` for callers that wait without a task: `done` gets
    /// the result once the outcome is stored and announced, on the thread
    /// that finished the run.
    func performUpdate(_ id: String, scheduled: Bool = false, done: @escaping @Sendable (Result<String, any Error>) -> Void) {
        let widget: Widget
        do {
            widget = try self.widget(id)
        } catch {
            return done(.failure(error))
        }
        let now = self.now()
        let started = widget.data.withLock { data -> Result<(UpdateInProgress, joined: Bool), TodayError> in
            if let running = data.running { return .success((running, true)) }
            if !scheduled, let refusal = Self.backOff(data.record, id: id, now: now) { return .failure(refusal) }
            let update = UpdateInProgress()
            data.running = update
            return .success((update, false))
        }
        switch started {
        case .failure(let error):
            done(.failure(error))
        case .success(let (update, joined)):
            update.whenFinished { done(.success($0)) }
            if !joined {
                widget.runs.enqueue { [self] next in
                    self.update(widget, scheduled: scheduled) { result in
                        update.finish(result)
                        next()
                    }
                }
            }
        }
    }

    /// Updates every widget that has content, concurrently.
    public func updateAll() async -> [(String, String)] {
        let ids = state.withLock { state in
            state.order.filter { id in state.widgets[id]?.data.withLock { $0.record.hasContent } ?? false }
        }
        return await withTaskGroup(of: (String, String).self) { group in
            for id in ids {
                group.addTask { (id, (try? await self.performUpdate(id)) ?? "failed") }
            }
            var results: [(String, String)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }
        }
    }

    /// Runs the provider and records its outcome; `done` gets the result
    /// on the thread that ran the provider.
    private func update(_ widget: Widget, scheduled: Bool, done: @escaping @Sendable (String) -> Void) {
        let previous = widget.data.withLock { $0.snapshot }
        provide(widget, previous: previous) { [self] outcome in
            done(record(outcome, of: widget, previous: previous, scheduled: scheduled))
        }
    }

    /// Stores and announces what a provider run came to (an update, or
    /// `action`); returns the result.
    private func record(
        _ outcome: ProviderOutcome, of widget: Widget, previous: PlistDictionary, scheduled: Bool, action: ProviderAction? = nil
    ) -> String {
        var outcome = outcome
        @Sendable func finished(_ data: inout Widget.Data) {
            if let action { data.actionRuns[action] = nil } else { data.running = nil }
        }
        if isStopping {
            widget.data.withLock { finished(&$0) }
            return "failed"
        }
        let now = self.now()
        if case .failed(let reason) = outcome { log.warning("\(widget.id): update failed: \(reason)") }
        // New content is on disk before anyone hears of it; the same
        // content again needs no write. Content that cannot be kept is a
        // failure, and the previous snapshot stays.
        var snapshotChanged = false
        var timeline: Timeline?
        // A toggle whose provider had nothing new keeps the state asked
        // for; one whose provider failed goes back to where it was.
        if let action, let state = action.state, outcome == .noData {
            outcome = .newData(TimelineAnswer(snapshot: Snapshot.setting(action.id, to: state, in: previous)))
        }
        if let action, action.state != nil, case .failed = outcome {
            let reverted = widget.data.withLock { data -> [(String, Value)] in
                data.timeline.current?.snapshot = previous
                return Self.entryProperties(of: data)
            }
            widget.object.set(reverted)
        }
        if case .newData(let answer) = outcome {
            var current = widget.data.withLock { $0.timeline }
            // Against what was stored, not the state shown while the toggle ran.
            if let action, action.state != nil { current.current?.snapshot = previous }
            let next = current.replaced(by: answer, at: now)
            if next != current {
                do {
                    try store.save(timeline: next, for: widget.id)
                    timeline = next
                    snapshotChanged = true
                } catch {
                    log.warning("\(widget.id): cannot keep the snapshot: \(error)")
                    outcome = .failed("storage: \(error)")
                }
            }
        }
        widget.data.withLock { data in
            if let timeline { data.timeline = timeline }
            data.record.lastResult = outcome.result
            data.record.lastFailure = outcome.failure
            data.record.lastUpdated = ValueMapping.microseconds(now)
            data.record.schedule.plan(
                at: now, reload: data.reload, hasContent: data.record.hasContent,
                outcome: outcome.result != "failed", scheduled: scheduled)
        }
        saveLater(widget)
        publishUpdate(widget, snapshotChanged: snapshotChanged)
        try? widget.object.emit("Updated", [.string(outcome.result)])
        if let action { try? widget.object.emit("ActionPerformed", [.string(action.id), .string(outcome.result)]) }
        widget.data.withLock { finished(&$0) }
        return outcome.result
    }

    /// Writes the widget's record as it is now. A write that copied an
    /// older record (the deferred flush, say) cannot land after one that
    /// carries a newer change: copy and write happen under one lock.
    func saveRecord(of widget: Widget) {
        widget.recordWriter.withLock { _ in
            let record = widget.data.withLock { $0.record }
            beforeRecordWrite.withLock { $0 }?(widget.id)
            do {
                try store.save(record, for: widget.id)
            } catch {
                log.warning("\(widget.id): cannot keep its state: \(error)")
            }
        }
    }

    /// Called between copying a record and writing it: where a test holds
    /// one write to show that another cannot overtake it.
    let beforeRecordWrite = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Last results and schedules are written within a second, together,
    /// and at shutdown; what a caller set (has-content) and new snapshots
    /// are written before the reply.
    func saveLater(_ widget: Widget) {
        state.withLock { state in
            state.unsaved.insert(widget.id)
            guard state.flush == nil else { return }
            state.flush = Task { [weak self] in
                try? await Task.sleep(for: .seconds(1))
                self?.flushRecords()
            }
        }
    }

    /// Writes every record changed since the last flush.
    func flushRecords() {
        let widgets = state.withLock { state -> [Widget] in
            defer {
                state.unsaved = []
                state.flush = nil
            }
            return state.unsaved.compactMap { state.widgets[$0] }
        }
        for widget in widgets { saveRecord(of: widget) }
    }

    /// One provider run for `widget` (an update, or `action`), whatever
    /// kind of provider it has; `done` gets the outcome on the thread that
    /// waited for it.
    func provide(
        _ widget: Widget, previous: PlistDictionary, action: ProviderAction? = nil, done: @escaping @Sendable (ProviderOutcome) -> Void
    ) {
        let manifest = widget.data.withLock { $0.manifest }
        if let name = manifest.providerBusName {
            let provider = BusProvider(
                connection: connection, name: name, timeout: .seconds(Int(manifest.updateTimeout)), timeline: manifest.timeline)
            Task {
                if let action {
                    let arguments: PlistDictionary = action.state.map { ["state": .boolean($0)] } ?? [:]
                    done(await provider.runAction(action.id, arguments: arguments, previous: previous))
                } else {
                    done(await provider.run(previous: previous))
                }
            }
            return
        }
        let id = manifest.bundleIdentifier
        slots.run { [self] in
            // The executable is resolved once per manifest (a rescan that
            // changes the bundle brings a new one) and again after it could
            // not be started. What was resolved is what runs, whatever the
            // bundle's links say later.
            let kept = widget.data.withLock { $0.provider }
            let prepared =
                kept
                ?? ProviderRun.execProvider(
                    manifest, directories: directories, environment: environment, busAddress: busAddress, confinement: confinement)
            switch prepared {
            case .failure(let problem):
                log.warning("\(id): \(problem)")
                done(.failed(problem.failure))
            case .success(let provider):
                groups.prepareContainers(manifest.groups)
                let outcome = provider.runBlocking(previous: previous, action: action, running: providers) { [log] line in
                    log.warning("\(id): \(line)")
                }
                widget.data.withLock { data in
                    guard data.manifest == manifest else { return }
                    data.provider = outcome == .failed("no-provider") ? nil : prepared
                }
                done(outcome)
            }
        }
    }

    // MARK: Actions

    /// Widget.PerformAction (SPEC section 10): runs the provider's action
    /// for a button or toggle the current snapshot offers, after any run
    /// of this widget under way; calls for the same action and state share
    /// one run. A toggle shows the state asked for at once.
    public func performAction(_ id: String, action actionID: String) async throws -> String {
        let widget = try widget(id)
        let now = self.now()
        typealias Started = (action: ProviderAction, run: UpdateInProgress, joined: Bool, previous: PlistDictionary, shown: [(String, Value)]?)
        let started = widget.data.withLock { data -> Result<Started, TodayError> in
            guard let offered = Snapshot.actions(of: data.snapshot).first(where: { $0.id == actionID }) else {
                return .failure(.noSuchAction(widget: id, action: actionID))
            }
            let action = ProviderAction(id: actionID, state: offered.isToggle ? !offered.state : nil)
            let previous = data.snapshot
            if let running = data.actionRuns[action] { return .success((action, running, true, previous, nil)) }
            if let refusal = Self.backOff(data.record, id: id, now: now) { return .failure(refusal) }
            let run = UpdateInProgress()
            data.actionRuns[action] = run
            var shown: [(String, Value)]?
            if let state = action.state {
                data.timeline.current?.snapshot = Snapshot.setting(actionID, to: state, in: previous)
                shown = Self.entryProperties(of: data)
            }
            return .success((action, run, false, previous, shown))
        }
        // The provider gets the snapshot as it was before a toggle.
        let (action, run, joined, previous, shown) = try started.get()
        if !joined {
            if let shown { widget.object.set(shown) }
            widget.runs.enqueue { [self] next in
                provide(widget, previous: previous, action: action) { [self] outcome in
                    run.finish(record(outcome, of: widget, previous: previous, scheduled: false, action: action))
                    next()
                }
            }
        }
        return await run.result()
    }

    /// Error.ProviderFailed while a provider that keeps failing waits out
    /// its back-off (`Schedule.requestDelay`), or nil.
    static func backOff(_ record: WidgetRecord, id: String, now: Date) -> TodayError? {
        let failures = record.schedule.consecutiveFailures
        let delay = Schedule.requestDelay(failures: failures)
        guard delay > 0 else { return nil }
        let ended = Date(timeIntervalSince1970: TimeInterval(record.lastUpdated) / 1e6)
        let wait = ended.addingTimeInterval(delay).timeIntervalSince(now)
        guard wait > 0 else { return nil }
        return .providerFailed(
            "'\(id)' failed \(failures) times in a row (last: \(record.lastFailure)); "
                + "it runs again on request in \(Int(wait.rounded(.up))) s: fix the provider, then ask again")
    }

    // MARK: Timelines

    /// Widget.GetTimeline: the current entry and those after it.
    func timelineValue(_ id: String) throws -> Value {
        let entries = try widget(id).data.withLock { $0.timeline.entries }
        return .array(
            .structure([.uint64, .dictionary(key: .string, value: .variant), .double]),
            entries.map { .structure([.uint64(ValueMapping.microseconds($0.date)), ValueMapping.dbus($0.snapshot), .double($0.relevance)]) })
    }

    /// The bundle the caller is, or NotRegistered naming `member`.
    func callerBundle(_ call: MethodCall, for member: String) async throws -> String {
        guard let caller = try await identities.caller(of: call).bundleID else { throw TodayError.notRegistered(member) }
        return caller
    }

    /// ReloadTimelines: a requested update of one widget, by the widget or
    /// its container app, sharing a run under way. It answers once the
    /// update has started, as WidgetCenter's call returns at once; the
    /// outcome is in `Updated` and the properties.
    func reloadTimelines(_ call: MethodCall, widget id: String) async throws {
        let widget = try widget(id)
        let container = widget.data.withLock { $0.manifest.containerBundleIdentifier }
        let caller = try await callerBundle(call, for: "ReloadTimelines")
        guard caller == id || caller == container else {
            throw TodayError.notEntitled("'\(caller)' may not reload the timeline of '\(id)': only the widget or its container app '\(container)' may")
        }
        performUpdate(id) { _ in }
    }

    /// ReloadAllTimelines: every widget of the caller's container app (the
    /// caller is the app or one of its widgets).
    func reloadAllTimelines(_ call: MethodCall) async throws {
        let caller = try await callerBundle(call, for: "ReloadAllTimelines")
        let widgets = state.withLock { Array($0.widgets.values) }
        let container = widgets.first { $0.id == caller }.map { $0.data.withLock { $0.manifest.containerBundleIdentifier } } ?? caller
        for widget in widgets where widget.data.withLock({ $0.manifest.containerBundleIdentifier }) == container {
            performUpdate(widget.id) { _ in }
        }
    }

    // MARK: Has content

    func setHasContent(_ call: MethodCall, _ hasContent: Bool, widget id: String) async throws {
        let widget = try widget(id)
        let container = widget.data.withLock { $0.manifest.containerBundleIdentifier }
        guard let caller = try await identities.caller(of: call).bundleID else {
            throw TodayError.notRegistered("SetHasContent")
        }
        guard caller == id || caller == container else {
            throw TodayError.notEntitled("'\(caller)' may not change whether '\(id)' has content: only the widget or its container app '\(container)' may")
        }
        let now = self.now()
        let changed = widget.data.withLock { data -> Bool in
            guard data.record.hasContent != hasContent else { return false }
            data.record.hasContent = hasContent
            data.record.schedule.plan(at: now, reload: data.reload, hasContent: hasContent, outcome: nil, scheduled: false)
            return true
        }
        guard changed else { return }
        saveRecord(of: widget)
        publish(widget)
        log.info("\(id): has content: \(hasContent) (told by \(caller))")
    }

    // MARK: Schedule

    /// Starts the updates that are due and returns how long to wait, in
    /// seconds, before looking again.
    func runDueUpdates() -> Double {
        let now = self.now()
        let widgets = state.withLock { Array($0.widgets.values) }
        var wait = 1.0
        for widget in widgets {
            // The next entry of a timeline, when its date has come.
            let switched = widget.data.withLock { data -> [(String, Value)]? in
                defer { if let next = data.timeline.nextDate { wait = min(wait, next.timeIntervalSince(now)) } }
                guard data.timeline.advance(to: now) else { return nil }
                return Self.entryProperties(of: data)
            }
            if let switched { widget.object.set(switched) }
            let due = widget.data.withLock { data -> Bool in
                guard data.running == nil, data.record.hasContent, let next = data.record.schedule.next else { return false }
                if next <= now { return true }
                wait = min(wait, next.timeIntervalSince(now))
                return false
            }
            if due {
                performUpdate(widget.id, scheduled: true) { _ in }
            } else {
                // The budget starts again at midnight.
                let left = widget.data.withLock { $0.record.schedule.left(at: now) }
                widget.object.set("ScheduledUpdatesLeftToday", .uint32(left))
            }
        }
        return max(wait, 0.05)
    }
}

/// An update that is running; callers that arrive meanwhile wait for its
/// result instead of starting another provider run.
final class UpdateInProgress: Sendable {
    private let state = Mutex<(result: String?, waiting: [@Sendable (String) -> Void])>((nil, []))

    func result() async -> String {
        await withCheckedContinuation { continuation in
            whenFinished { continuation.resume(returning: $0) }
        }
    }

    /// Runs `done` with the result: at once if the update has finished,
    /// else on the thread that finishes it.
    func whenFinished(_ done: @escaping @Sendable (String) -> Void) {
        let ready = state.withLock { state -> String? in
            if let result = state.result { return result }
            state.waiting.append(done)
            return nil
        }
        if let ready { done(ready) }
    }

    func finish(_ result: String) {
        let waiting = state.withLock { state in
            state.result = result
            defer { state.waiting = [] }
            return state.waiting
        }
        for done in waiting { done(result) }
    }
}

/// Runs jobs one after another: each gets a `next` to call when it is done,
/// on whatever thread it finishes, and the next job starts there.
final class RunQueue: Sendable {
    typealias Job = @Sendable (_ next: @escaping @Sendable () -> Void) -> Void
    private let state = Mutex<(busy: Bool, waiting: [Job])>((false, []))

    func enqueue(_ job: @escaping Job) {
        let now = state.withLock { state -> Bool in
            guard !state.busy else {
                state.waiting.append(job)
                return false
            }
            state.busy = true
            return true
        }
        if now { start(job) }
    }

    private func start(_ job: @escaping Job) {
        job { [self] in
            let next = state.withLock { state -> Job? in
                guard !state.waiting.isEmpty else {
                    state.busy = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { start(next) }
        }
    }
}

/// Bounds how many providers run at once, so that UpdateAll over many
/// widgets cannot start them all together. Each run blocks a thread of
/// its own (it waits in poll() for as long as the provider takes).
final class ProviderSlots: Sendable {
    private let state: Mutex<(free: Int, waiting: [@Sendable () -> Void])>

    init(count: Int) { state = Mutex((count, [])) }

    /// Runs `job` on a thread of its own once a slot is free.
    func run(_ job: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.free > 0 else {
                state.waiting.append(job)
                return false
            }
            state.free -= 1
            return true
        }
        guard now else { return }
        ExecProvider.runners.run { [self] in
            job()
            // The slot passes to the next waiting job, on this thread.
            while let next = state.withLock({ state -> (@Sendable () -> Void)? in
                guard !state.waiting.isEmpty else {
                    state.free += 1
                    return nil
                }
                return state.waiting.removeFirst()
            }) {
                next()
            }
        }
    }
}

/// Log lines to standard error; info lines only when verbose. When
/// standard error is the journal (JOURNAL_STREAM names it), each line
/// starts with its syslog priority, which journald reads: `<4>` for
/// warnings, `<6>` for info.
public struct Logger: Sendable {
    public var verbose: Bool
    public var journal: Bool

    public init(verbose: Bool, journal: Bool = false) {
        self.verbose = verbose
        self.journal = journal
    }

    public func info(_ message: String) { if verbose { write(line(message, priority: 6)) } }
    public func warning(_ message: String) { write(line(message, priority: 4)) }

    /// The line as written: with its priority for the journal, else plain.
    public func line(_ message: String, priority: Int) -> String {
        let text = message.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ")
        return journal ? "<\(priority)>\(text)\n" : "todayd: \(text)\n"
    }

    /// Whether standard error is the journal stream that JOURNAL_STREAM
    /// (`device:inode`) names, as systemd sets it for a service.
    public static func standardErrorIsJournal(_ environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return stream == "\(info.st_dev):\(info.st_ino)"
    }

    private func write(_ text: String) { FileSystem.writeAll(2, text) }
}
