import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

extension TodayService {
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
    func answerUpdate(_ id: BundleID, _ call: MethodCall, _ answer: PendingAnswer) throws {
        let sender = call.sender
        try admit(sender)
        performUpdate(id) { [self] result in
            release(sender)
            answer.complete(result.map { [.string($0.rawValue)] })
        }
    }

    /// Runs the widget's provider, or joins the run already going, and
    /// publishes the outcome.
    ///
    /// A provider that keeps failing is not started again on request until
    /// its back-off (`Schedule.requestDelay`) has passed: such a call is
    /// answered with Error.ProviderFailed at once.
    public func performUpdate(_ id: BundleID, scheduled: Bool = false) async throws -> UpdateResult {
        try await withCheckedThrowingContinuation { continuation in
            performUpdate(id, scheduled: scheduled) { continuation.resume(with: $0) }
        }
    }

    /// `performUpdate` for callers that wait without a task: `done` gets
    /// the result once the outcome is stored and announced, on the thread
    /// that finished the run.
    func performUpdate(_ id: BundleID, scheduled: Bool = false, done: @escaping @Sendable (Result<UpdateResult, any Error>) -> Void) {
        guard let widget = widget(id, else: done) else { return }
        let now = self.now()
        let admission = widget.data.withLock { data in
            data.lifecycle.request(.update, scheduled: scheduled, record: data.record, widget: id, now: now) { UpdateInProgress() }
        }
        switch admission {
        case .refuse(let error):
            done(.failure(error))
        case .join(let update):
            update.whenFinished { done(.success($0)) }
        case .start(let update):
            update.whenFinished { done(.success($0)) }
            widget.runs.enqueue { [self] next in
                self.update(widget, scheduled: scheduled) { result in
                    update.finish(result)
                    next()
                }
            }
        }
    }

    /// Updates every widget that has content, concurrently.
    public func updateAll() async -> [(BundleID, UpdateResult)] {
        let ids = state.withLock { state in
            state.order.filter { id in state.widgets[id]?.data.withLock { $0.record.hasContent } ?? false }
        }
        return await withTaskGroup(of: (BundleID, UpdateResult).self) { group in
            for id in ids {
                group.addTask { (id, (try? await self.performUpdate(id)) ?? .failed) }
            }
            var results: [(BundleID, UpdateResult)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }
        }
    }

    /// Runs the provider and records its outcome; `done` gets the result
    /// on the thread that ran the provider.
    private func update(_ widget: Widget, scheduled: Bool, done: @escaping @Sendable (UpdateResult) -> Void) {
        let previous = widget.data.withLock { $0.snapshot }
        provide(widget, previous: previous) { [self] outcome in
            done(record(outcome, of: widget, previous: previous, scheduled: scheduled))
        }
    }

    /// Stores and announces what a provider run of `kind` came to; returns
    /// the result.
    func record(
        _ outcome: ProviderOutcome, of widget: Widget, previous: PlistDictionary, scheduled: Bool, kind: Widget.Lifecycle.Kind = .update
    ) -> UpdateResult {
        let action: ProviderAction? = if case .action(let action) = kind { action } else { nil }
        @Sendable func finished(_ data: inout Widget.Data) {
            data.lifecycle.finish(kind)
        }
        if isStopping {
            widget.data.withLock { finished(&$0) }
            return .failed
        }
        let now = self.now()
        if case .failed(let reason) = outcome { log.warning("\(widget.id): update failed: \(reason)") }
        // New content is on disk before anyone hears of it; the same
        // content again needs no write. Content that cannot be kept is a
        // failure, and the previous snapshot stays.
        var snapshotChanged = false
        var timeline: Timeline?
        var (outcome, revert) = Widget.Lifecycle.settle(outcome, of: kind, previous: previous)
        if revert {
            let reverted = widget.data.withLock { data -> [(String, Value)] in
                data.timeline.current?.snapshot = previous
                return Self.entryProperties(of: data, at: now)
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
                    outcome = .failed(.storage("\(error)"))
                }
            }
        }
        widget.data.withLock { data in
            if let timeline { data.timeline = timeline }
            data.record.lastResult = outcome.result
            data.record.lastFailure = outcome.failureReason
            data.record.lastUpdated = ValueMapping.microseconds(now)
            data.record.schedule.plan(
                at: now, reload: data.reload, hasContent: data.record.hasContent,
                outcome: outcome.result != .failed, scheduled: scheduled)
        }
        saveLater(widget)
        let due = publishUpdate(widget, snapshotChanged: snapshotChanged)
        try? widget.object.emit(Today.Widget.updated, [.string(outcome.result.rawValue)])
        if let action { try? widget.object.emit(Today.Widget.actionPerformed, [.string(action.id), .string(outcome.result.rawValue)]) }
        widget.data.withLock { finished(&$0) }
        scheduleChanged(due: due)
        return outcome.result
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
            // changes the bundle brings a new one), again after it could not
            // be started, and again when the file was replaced in place
            // (its sandbox follows the new file's library folders). What
            // was resolved is what runs, whatever the bundle's links say
            // later.
            var kept = widget.data.withLock { $0.provider }
            if case .success(let provider)? = kept, provider.executableChanged { kept = nil }
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
                let (outcome, outputBytes) = provider.runBlocking(previous: previous, action: action, running: providers) { [log] line in
                    log.warning("\(id): \(line)")
                }
                widget.data.withLock { data in
                    guard data.manifest == manifest else { return }
                    data.provider = Widget.Lifecycle.keepsProvider(after: outcome) ? prepared : nil
                }
                done(outcome)
                // The output, its parsed tree and the stored encoding are free by now.
                if outputBytes >= MallocPolicy.largeOutput { MallocPolicy.giveBack() }
            }
        }
    }

}
