import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

extension TodayService {
    /// One widget: its object, manifest, remembered state and snapshot,
    /// and the update running for it, which later callers share.
    final class Widget: Sendable {
        let id: BundleID
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
            var manifest: WidgetManifest
            var record: WidgetRecord
            var timeline: Timeline
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

        init(id: BundleID, object: ExportedInterface, data: Data) {
            self.id = id
            self.object = object
            self.data = Mutex(data)
        }
    }

}
