import FoundationEssentials
import PropertyList
import TodayProtocol

/// The provider runs of one widget (SPEC sections 4 and 10) as a state
/// machine: it says what a request or an outcome comes to and does nothing
/// itself. The service keeps one in each widget's state, under its lock,
/// and carries out what it says: starting a provider, answering callers,
/// storing and announcing.
///
/// `Run` is what callers of a run share and wait on (`UpdateInProgress` in
/// the service; anything in tests).
struct UpdateLifecycle<Run: Sendable>: Sendable {
    /// What a run is for. Runs of different kinds may be under way at once
    /// (the widget's `RunQueue` takes them one at a time); a request of a
    /// kind under way joins it.
    enum Kind: Hashable, Sendable {
        case update
        /// An action, with the state asked for where it is a toggle: two
        /// presses asking for different states are two runs.
        case action(ProviderAction)
    }

    /// What a request comes to.
    enum Admission {
        /// A run of that kind is under way or waiting: wait for its result.
        case join(Run)
        /// The provider is in its back-off: answer with this at once.
        case refuse(TodayError)
        /// Start this run; it is now the one later requests join.
        case start(Run)
    }

    private(set) var runs: [Kind: Run] = [:]

    /// Whether an update is under way or waiting (the scheduler then
    /// starts none).
    var isUpdating: Bool { runs[.update] != nil }

    /// A request for a run of `kind`. Scheduled updates are spaced by the
    /// schedule and skip the back-off; requests from callers while a
    /// provider that keeps failing waits out its back-off are refused.
    /// `make` is called only when a run starts.
    mutating func request(
        _ kind: Kind, scheduled: Bool = false, record: WidgetRecord, widget id: WidgetInstanceID, now: Date, make: () -> Run
    ) -> Admission {
        if let run = runs[kind] { return .join(run) }
        if !scheduled, let refusal = Self.backOff(record, widget: id, now: now) { return .refuse(refusal) }
        let run = make()
        runs[kind] = run
        return .start(run)
    }

    /// The run of `kind` has ended: the next request starts a new one.
    mutating func finish(_ kind: Kind) {
        runs[kind] = nil
    }

    /// Error.ProviderFailed while a provider that keeps failing waits out
    /// its back-off (`Schedule.requestDelay`), or nil.
    static func backOff(_ record: WidgetRecord, widget id: WidgetInstanceID, now: Date) -> TodayError? {
        let failures = record.schedule.consecutiveFailures
        let delay = Schedule.requestDelay(failures: failures)
        guard delay > 0 else { return nil }
        let ended = Date(timeIntervalSince1970: TimeInterval(record.lastUpdated) / 1e6)
        let wait = ended.addingTimeInterval(delay).timeIntervalSince(now)
        guard wait > 0 else { return nil }
        return .providerFailed(
            "'\(id)' failed \(failures) times in a row (last: \(record.lastFailure?.description ?? "none")); "
                + "it runs again on request in \(Int(wait.rounded(.up))) s: fix the provider, then ask again")
    }

    /// What the outcome of a run comes to before it is stored. A toggle
    /// whose provider had nothing new keeps the state asked for (as a new
    /// snapshot made from `previous`); one whose provider failed goes back
    /// to `previous`, which `revert` says.
    static func settle(
        _ outcome: ProviderOutcome, of kind: Kind, previous: PlistDictionary
    ) -> (outcome: ProviderOutcome, revert: Bool) {
        guard case .action(let action) = kind, let state = action.state else { return (outcome, false) }
        switch outcome {
        case .noData:
            return (.newData(TimelineAnswer(snapshot: Snapshot.settingToggle(action.id, to: state, in: previous))), false)
        case .failed:
            return (outcome, true)
        case .newData:
            return (outcome, false)
        }
    }

    /// Whether the exec provider prepared for a run is kept for the next:
    /// not after it could not be started, so that the next run looks for
    /// the executable again.
    static func keepsProvider(after outcome: ProviderOutcome) -> Bool {
        outcome != .failed(.noProvider)
    }
}
