import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

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
    /// The longest the scheduler sleeps: a clock a test passes can jump
    /// without the kernel telling the timer, so the scheduler then looks
    /// once a second.
    let longestWait: Double
    private let center: ExportedInterface
    let state = Mutex(State())
    /// Called between copying a record and writing it: where a test holds
    /// one write to show that another cannot overtake it.
    let beforeRecordWrite = Mutex<(@Sendable (String) -> Void)?>(nil)


    struct State {
        var widgets: [BundleID: Widget] = [:]
        var order: [BundleID] = []
        var bundleIDs: Set<BundleID> = []
        var apps: [AppManifest] = []
        var scheduler: Task<Void, Never>?
        /// The scheduler's wall-clock timer, where the kernel has timerfd.
        var timer: WallClockTimer?
        var stopping = false
        /// Widgets whose record changed since it was last written.
        var unsaved: Set<BundleID> = []
        /// Update calls each connection has waiting for an answer.
        var pendingCalls: [String: Int] = [:]
        var flush: Task<Void, Never>?
    }

    public init(
        connection: Connection, directories: Directories, log: Logger, environment: [String: String] = [:],
        busAddress: String? = nil, userID: UInt32 = getuid(), procRoot: String = "/proc", now: (@Sendable () -> Date)? = nil,
        confinement: ProviderRun.Confinement = .none
    ) {
        self.confinement = confinement
        self.connection = connection
        self.directories = directories
        self.log = log
        self.environment = environment
        self.busAddress = busAddress
        self.now = now ?? { Date() }
        longestWait = now == nil ? 3600 : 1
        store = WidgetStore(directories: directories)
        mimeIndex = MimeIndexCache(configuration: MimeApps(environment: environment))
        identities = Identities(userID: userID, procRoot: procRoot, providers: providers)
        groups = GroupService(connection: connection, identities: identities, directories: directories, log: log)
        let holder = Mutex<TodayService?>(nil)
        @Sendable func service() throws -> TodayService {
            guard let service = holder.withLock({ $0 }) else { throw DBusError.failed("todayd is shutting down") }
            return service
        }
        center = Self.centerObject(bundleFolders: directories.bundleFolders, service)
        holder.withLock { $0 = self }
        connection.objects.setGate(identities.gate(on: connection))
        connection.objects.addObjectManager(at: Today.managerPath)
        connection.objects.export(Today.managerPath, [center])
    }

    /// Starts what runs in the background: forgetting connections that
    /// leave the bus, and the scheduler.
    public func start() async throws {
        try await connection.subscribe(
            MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged)
        ) { [identities] message in
            let args = message.body.compactMap(\.string)
            if args.count == 3, args[0].hasPrefix(":"), args[2].isEmpty { identities.forget(args[0]) }
        }
        if let timer = WallClockTimer(fire: { [weak self] in self?.runDueUpdates() ?? 3600 }) {
            state.withLock { $0.timer = timer }
            return
        }
        log.warning("no timerfd: the scheduler looks once a second")
        let task = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                let wait = min(self.runDueUpdates(), 1)
                try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
            }
        }
        state.withLock { $0.scheduler = task }
    }

    /// Stops the scheduler and the providers, and waits (a few seconds at
    /// most) until what is being written is on disk. Updates cut short are
    /// not recorded as failures.
    public func stop() async {
        let (scheduler, timer, widgets) = state.withLock { state in
            state.stopping = true
            return (state.scheduler, state.timer, Array(state.widgets.values))
        }
        scheduler?.cancel()
        timer?.stop()
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
        flushRecords()
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// One field of the state.
    func state<T: Sendable>(_ field: KeyPath<State, T> & Sendable) -> T { state.withLock { $0[keyPath: field] } }

    /// Widget ids sorted by display name, then id.
    public var widgetIDs: [BundleID] { state.withLock { $0.order } }

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

}
