import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

extension WidgetService {
    /// One widget instance (SPEC section 16): its object, its kind's
    /// manifest, its settings, remembered state and snapshot, and the
    /// update running for it, which later callers share. A kind's default
    /// instance is the kind's own object.
    final class Widget: Sendable {
        let id: WidgetInstanceID
        /// Its object's path (`id.path`, escaped once).
        let path: ObjectPath
        let object: ExportedInterface
        let data: Mutex<Data>
        /// Provider runs of this widget, updates and actions, one at a time.
        let runs = RunQueue()
        /// Held while the record is copied and written, so that writes of
        /// one file land in the order of the changes they carry: each
        /// writes the record as it is when its turn comes.
        let recordWriter = Mutex(())

        typealias Lifecycle = UpdateLifecycle<UpdateInProgress>

        struct Data {
            /// The kind's manifest, the same in each of its instances.
            var manifest: WidgetManifest
            var record: WidgetRecord
            var timeline: Timeline
            /// What the user chose, checked against the kind's parameters.
            var configuration = PlistDictionary()
            var family = WidgetFamily.medium
            /// The update and the actions running or waiting their turn,
            /// which later calls of the same kind join.
            var lifecycle = Lifecycle()
            /// The exec provider made from `manifest`, once it has run.
            var provider: Result<ExecProvider, ProviderRun.Problem>?

            /// Whether its provider runs confined: an exec provider where
            /// the sandbox is available (D-Bus providers are started by the bus).
            var sandboxed = false

            /// What the current entry shows.
            var snapshot: PlistDictionary { timeline.snapshot }

            /// The configuration with each parameter left out at its
            /// default: what the provider sees.
            var effectiveConfiguration: PlistDictionary {
                WidgetConfiguration.complete(configuration, with: manifest.parameters)
            }

            /// What a provider run of `kind` that came to `outcome` does to
            /// the widget, decided at once: a toggle whose run failed shows
            /// `previous` again (`reverted`, to announce now); new content
            /// is a new timeline (`timeline`, to write before it is
            /// committed), against what was stored rather than the state a
            /// toggle showed while it ran.
            mutating func plan(
                recording outcome: ProviderOutcome, of kind: Lifecycle.Kind, previous: PlistDictionary, at now: Date
            ) -> RecordPlan {
                let (outcome, revert) = Lifecycle.settle(outcome, of: kind, previous: previous)
                var plan = RecordPlan(outcome: outcome)
                if revert {
                    timeline.current?.snapshot = previous
                    plan.reverted = WidgetService.entryProperties(of: self, at: now)
                }
                if case .newData(let answer) = outcome {
                    var current = timeline
                    if case .action(let action) = kind, action.state != nil { current.current?.snapshot = previous }
                    let next = current.replaced(by: answer, at: now)
                    if next != current { plan.timeline = next }
                }
                return plan
            }

            /// Takes `outcome` in, with `timeline` where its new content was
            /// stored, and plans the next scheduled update; returns the
            /// properties that changed and when the widget is next due.
            mutating func commit(
                _ outcome: ProviderOutcome, timeline stored: Timeline?, scheduled: Bool, at now: Date
            ) -> (changes: [(String, Value)], due: Date?) {
                if let stored { timeline = stored }
                record.lastResult = outcome.result
                record.lastFailure = outcome.failureReason
                record.lastUpdated = ValueMapping.microseconds(now)
                record.schedule.plan(
                    at: now, reload: reload, hasContent: record.hasContent, outcome: outcome.result != .failed, scheduled: scheduled)
                let changes = WidgetService.values(of: self, at: now, from: stored != nil ? [.outcome, .entry, .timeline] : [.outcome])
                let due = [record.hasContent ? record.schedule.next : nil, timeline.nextDate].compactMap { $0 }.min()
                return (changes, due)
            }

            /// Takes the layout's settings for this instance, checked against
            /// the manifest (what no longer fits is logged, and the defaults
            /// stand); true when they changed what the provider is given.
            mutating func apply(_ placed: WidgetLayout.Placed, for id: WidgetInstanceID, log: Logger) -> Bool {
                var configuration = PlistDictionary()
                do {
                    configuration = try WidgetConfiguration.checked(placed.configuration, against: manifest.parameters)
                } catch {
                    log.warning("\(id): its stored configuration does not fit the widget (\(error)); it has the defaults")
                }
                let family = manifest.families.contains(placed.family) ? placed.family : (manifest.families.first ?? .medium)
                guard configuration != self.configuration || family != self.family else { return false }
                self.configuration = configuration
                self.family = family
                provider = nil
                return true
            }

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

        /// The Instance interface of an added instance; nil for a default one.
        let instanceObject: ExportedInterface?

        init(id: WidgetInstanceID, object: ExportedInterface, instanceObject: ExportedInterface? = nil, data: Data) {
            self.id = id
            path = id.path
            self.object = object
            self.instanceObject = instanceObject
            self.data = Mutex(data)
        }
    }

}

/// What recording a provider run's outcome comes to (`Widget.Data.plan`).
struct RecordPlan {
    /// The outcome as it counts: a toggle's `no-data` is the toggled snapshot.
    var outcome: ProviderOutcome
    /// Properties to announce at once: a failed toggle's state taken back.
    var reverted: [(String, Value)]?
    /// New content, to write to disk before it is committed; nil: none.
    var timeline: Timeline?
}
