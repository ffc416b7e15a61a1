import DBus
import Dispatch
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

extension WidgetService {
    // MARK: Updates

    /// PerformUpdate from the bus: started on the connection's loop thread
    /// and answered by whichever thread finishes the update (a provider's,
    /// usually), with no task in between.
    func answerUpdate(_ id: WidgetInstanceID, _ call: MethodCall, _ answer: PendingAnswer) throws {
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
    public func performUpdate(_ id: WidgetInstanceID, scheduled: Bool = false) async throws -> UpdateResult {
        try await withCheckedThrowingContinuation { continuation in
            performUpdate(id, scheduled: scheduled) { continuation.resume(with: $0) }
        }
    }

    /// `performUpdate` for callers that wait without a task: `done` gets
    /// the result once the outcome is stored and announced, on the thread
    /// that finished the run. With `fresh` (a reload: what the provider
    /// shows has changed), a run already going is not joined, since its
    /// provider may have answered before the change: another follows it.
    func performUpdate(
        _ id: WidgetInstanceID, scheduled: Bool = false, fresh: Bool = false, done: @escaping @Sendable (Result<UpdateResult, any Error>) -> Void
    ) {
        guard let widget = widget(id, else: done) else { return }
        let now = self.now()
        let admission = widget.data.withLock { data in
            data.lifecycle.request(.update, scheduled: scheduled, record: data.record, widget: id, now: now) { UpdateInProgress() }
        }
        switch admission {
        case .refuse(let error):
            done(.failure(error))
        case .join(let update) where fresh:
            update.whenFinished { [self] _ in performUpdate(id, scheduled: scheduled, done: done) }
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

    /// Updates every instance that has content, concurrently.
    public func updateAll() async -> [(WidgetInstanceID, UpdateResult)] {
        let ids = idsWithContent
        return await withTaskGroup(of: (WidgetInstanceID, UpdateResult).self) { group in
            for id in ids {
                group.addTask { (id, (try? await self.performUpdate(id)) ?? .failed) }
            }
            var results: [(WidgetInstanceID, UpdateResult)] = []
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
    /// the result. What it comes to is decided under the widget's lock
    /// (`Widget.Data.plan`); new content is written to disk before anyone
    /// hears of it, and the outcome committed under the lock again
    /// (`Widget.Data.commit`); then it is announced.
    func record(
        _ outcome: ProviderOutcome, of widget: Widget, previous: PlistDictionary, scheduled: Bool, kind: Widget.Lifecycle.Kind = .update
    ) -> UpdateResult {
        if isStopping {
            widget.data.withLock { $0.lifecycle.finish(kind) }
            return .failed
        }
        let now = self.now()
        if case .failed(let reason) = outcome { log.warning("\(widget.id): update failed: \(reason)") }
        let plan = widget.data.withLock { $0.plan(recording: outcome, of: kind, previous: previous, at: now) }
        if let reverted = plan.reverted { widget.object.set(reverted) }
        var outcome = plan.outcome
        var stored: Timeline?
        if let timeline = plan.timeline {
            do {
                try store.save(timeline: timeline, for: widget.id)
                stored = timeline
            } catch {
                // Content that cannot be kept is a failure; the previous snapshot stays.
                log.warning("\(widget.id): cannot keep the snapshot: \(error)")
                outcome = .failed(.storage("\(error)"))
            }
        }
        let (changes, due) = widget.data.withLock { $0.commit(outcome, timeline: stored, scheduled: scheduled, at: now) }
        records.saveLater(widget)
        widget.object.set(changes)
        try? widget.object.emit(Today.Widget.updated, [.string(outcome.result.rawValue)])
        if case .action(let action) = kind {
            try? widget.object.emit(Today.Widget.actionPerformed, [.string(action.id), .string(outcome.result.rawValue)])
        }
        widget.data.withLock { $0.lifecycle.finish(kind) }
        // After the run has ended: a look passes over a widget that is updating.
        scheduler.poke(ifDue: due)
        return outcome.result
    }

    /// One provider run for `widget` (an update, or `action`), whatever
    /// kind of provider it has; `done` gets the outcome on the thread that
    /// waited for it.
    func provide(
        _ widget: Widget, previous: PlistDictionary, action: ProviderAction? = nil, done: @escaping @Sendable (ProviderOutcome) -> Void
    ) {
        let (manifest, instance) = widget.data.withLock {
            ($0.manifest, ProviderInstance(id: widget.id, configuration: $0.effectiveConfiguration, family: $0.family))
        }
        if let name = manifest.providerBusName {
            let provider = BusProvider(
                connection: connection, name: name, timeout: .seconds(Int(manifest.updateTimeout)), timeline: manifest.timeline,
                context: manifest.configurable ? BusProvider.context(instance) : nil)
            // The call leaves from this thread, with no task in between;
            // its answer comes on the connection's loop thread, which
            // never waits on a disk: the outcome is recorded (the snapshot
            // written) on a dispatch worker.
            let recorded: @Sendable (ProviderOutcome) -> Void = { outcome in DispatchQueue.global().async { done(outcome) } }
            if let action {
                let arguments: PlistDictionary = action.state.map { ["state": .boolean($0)] } ?? [:]
                provider.runAction(action.id, arguments: arguments, previous: previous, done: recorded)
            } else {
                provider.run(previous: previous, done: recorded)
            }
            return
        }
        let id = widget.id
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
                    manifest, directories: directories, environment: environment, busAddress: busAddress, confinement: confinement,
                    instance: instance)
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
