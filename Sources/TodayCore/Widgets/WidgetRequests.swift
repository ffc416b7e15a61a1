import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

extension WidgetService {
    // MARK: Actions

    /// PerformAction from the bus: started on the connection's loop thread
    /// (so a toggle's new state goes out before the loop reads anything
    /// else) and answered by whichever thread finishes the run.
    func answerAction(_ id: WidgetInstanceID, action actionID: String, _ call: MethodCall, _ answer: PendingAnswer) throws {
        let sender = call.sender
        try admit(sender)
        performAction(id, action: actionID) { [self] result in
            release(sender)
            answer.complete(result.map { [.string($0.rawValue)] })
        }
    }

    /// Widget.PerformAction (SPEC section 10): runs the provider's action
    /// for a button or toggle the current snapshot offers, after any run
    /// of this widget under way; calls for the same action and state share
    /// one run. A toggle shows the state asked for at once.
    public func performAction(_ id: WidgetInstanceID, action actionID: String) async throws -> UpdateResult {
        try await withCheckedThrowingContinuation { continuation in
            performAction(id, action: actionID) { continuation.resume(with: $0) }
        }
    }

    /// `performAction` for callers that wait without a task: `done` gets
    /// the result once the outcome is stored and announced, on the thread
    /// that finished the run.
    func performAction(_ id: WidgetInstanceID, action actionID: String, done: @escaping @Sendable (Result<UpdateResult, any Error>) -> Void) {
        guard let widget = widget(id, else: done) else { return }
        let now = self.now()
        typealias Started = (admission: Widget.Lifecycle.Admission, action: ProviderAction, previous: PlistDictionary, shown: [(String, Value)]?)
        let started = widget.data.withLock { data -> Result<Started, TodayError> in
            guard let offered = Snapshot.action(actionID, in: data.snapshot) else {
                return .failure(.noSuchAction(widget: id.description, action: actionID))
            }
            let action = ProviderAction(id: actionID, state: offered.isToggle ? !offered.isOn : nil)
            // The provider gets the snapshot as it was before a toggle.
            let previous = data.snapshot
            let admission = data.lifecycle.request(.action(action), record: data.record, widget: id, now: now) { UpdateInProgress() }
            var shown: [(String, Value)]?
            if case .start = admission, let state = action.state {
                data.timeline.current?.snapshot = Snapshot.settingToggle(actionID, to: state, in: previous)
                shown = Self.entryProperties(of: data, at: now)
            }
            return .success((admission, action, previous, shown))
        }
        switch started {
        case .failure(let error):
            done(.failure(error))
        case .success((.refuse(let error), _, _, _)):
            done(.failure(error))
        case .success((.join(let run), _, _, _)):
            run.whenFinished { done(.success($0)) }
        case .success((.start(let run), let action, let previous, let shown)):
            if let shown { widget.object.set(shown) }
            widget.runs.enqueue { [self] next in
                provide(widget, previous: previous, action: action) { [self] outcome in
                    run.finish(record(outcome, of: widget, previous: previous, scheduled: false, kind: .action(action)))
                    next()
                }
            }
            run.whenFinished { done(.success($0)) }
        }
    }

    // MARK: Timelines

    /// Widget.GetTimeline: the current entry and those after it.
    func timelineValue(_ id: WidgetInstanceID) throws -> Value {
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

    /// ReloadTimelines: a requested update of every instance of one
    /// widget kind, by the widget or its container app, sharing runs under
    /// way. It answers once the updates have started, as WidgetCenter's
    /// call returns at once; the outcome is in `Updated` and the properties.
    /// A caller already known (a provider that follows something calls at
    /// every change) is served on the connection's loop thread, with no
    /// task in between; a connection's first call finds out who it is.
    func reloadTimelines(_ call: MethodCall, widget id: BundleID, answer: PendingAnswer) throws {
        let widget = try widget(id)
        let container = widget.data.withLock { $0.manifest.containerBundleIdentifier }
        let reload = { [self] (caller: String) throws in
            guard caller == id.rawValue || caller == container.rawValue else {
                throw TodayError.notEntitled("'\(caller)' may not reload the timeline of '\(id)': only the widget or its container app '\(container)' may")
            }
            for instance in instances(of: id) { performUpdate(instance.id, fresh: true) { _ in } }
        }
        if let known = identities.knownCaller(of: call) {
            guard let caller = known.bundleID else { throw TodayError.notRegistered("ReloadTimelines") }
            try reload(caller)
            answer.succeed([])
            return
        }
        Task {
            do {
                try reload(try await callerBundle(call, for: "ReloadTimelines"))
                answer.succeed([])
            } catch {
                answer.fail(error)
            }
        }
    }

    /// ReloadAllTimelines: every widget of the caller's container app (the
    /// caller is the app or one of its widgets).
    func reloadAllTimelines(_ call: MethodCall) async throws {
        let caller = try await callerBundle(call, for: "ReloadAllTimelines")
        let widgets = all
        let container = widgets.first { $0.id.kind.rawValue == caller }.map { $0.data.withLock { $0.manifest.containerBundleIdentifier.rawValue } } ?? caller
        for widget in widgets where widget.data.withLock({ $0.manifest.containerBundleIdentifier.rawValue }) == container {
            performUpdate(widget.id, fresh: true) { _ in }
        }
    }

    // MARK: Has content

    func setHasContent(_ call: MethodCall, _ hasContent: Bool, widget id: BundleID) async throws {
        let widget = try widget(id)
        let container = widget.data.withLock { $0.manifest.containerBundleIdentifier }
        guard let caller = try await identities.caller(of: call).bundleID else {
            throw TodayError.notRegistered("SetHasContent")
        }
        guard caller == id.rawValue || caller == container.rawValue else {
            throw TodayError.notEntitled("'\(caller)' may not change whether '\(id)' has content: only the widget or its container app '\(container)' may")
        }
        // Said of the kind: every instance of it.
        let now = self.now()
        for instance in instances(of: id) {
            let changed = instance.data.withLock { data -> Bool in
                guard data.record.hasContent != hasContent else { return false }
                data.record.hasContent = hasContent
                data.record.schedule.plan(at: now, reload: data.reload, hasContent: hasContent, outcome: nil, scheduled: false)
                return true
            }
            guard changed else { continue }
            records.save(instance)
            publish(instance)
        }
        announceLayout()
        log.debug("\(id): has content: \(hasContent) (told by \(caller))")
    }

}
