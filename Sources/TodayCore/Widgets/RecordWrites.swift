import DBus
import FoundationEssentials
import Synchronization
import TodayProtocol

/// Widget records on disk: written before a reply where a caller's value
/// must survive (has-content), batched within a second otherwise (last
/// results and schedules), and at shutdown.
final class RecordWriter: Sendable {
    private let store: WidgetStore
    private let log: Logger
    private let state = Mutex(State())
    /// Called between copying a record and writing it: where a test holds
    /// one write to show that another cannot overtake it.
    let beforeWrite = Mutex<(@Sendable (String) -> Void)?>(nil)

    private struct State {
        /// Widgets whose record changed since it was last written.
        var unsaved: [WidgetInstanceID: WidgetService.Widget] = [:]
        var flush: Task<Void, Never>?
    }

    init(store: WidgetStore, log: Logger) {
        self.store = store
        self.log = log
    }

    /// Writes the widget's record as it is now. A write that copied an
    /// older record (the deferred flush, say) cannot land after one that
    /// carries a newer change: copy and write happen under one lock.
    func save(_ widget: WidgetService.Widget) {
        widget.recordWriter.withLock { _ in
            let record = widget.data.withLock { $0.record }
            beforeWrite.withLock { $0 }?(widget.id.description)
            do {
                try store.save(record, for: widget.id)
            } catch {
                log.warning("\(widget.id): cannot keep its state: \(error)")
            }
        }
    }

    /// Writes the widget's record within a second, with the others changed meanwhile.
    func saveLater(_ widget: WidgetService.Widget) {
        state.withLock { state in
            state.unsaved[widget.id] = widget
            guard state.flush == nil else { return }
            state.flush = Task { [weak self] in
                try? await Task.sleep(for: .seconds(1))
                self?.flush()
            }
        }
    }

    /// Forgets an instance removed from the layout: a pending write would
    /// bring its file back.
    func forget(_ id: WidgetInstanceID) {
        state.withLock { $0.unsaved[id] = nil }
    }

    /// Writes every record changed since the last flush.
    func flush() {
        let widgets = state.withLock { state -> [WidgetService.Widget] in
            defer {
                state.unsaved = [:]
                state.flush = nil
            }
            return Array(state.unsaved.values)
        }
        for widget in widgets { save(widget) }
    }
}
