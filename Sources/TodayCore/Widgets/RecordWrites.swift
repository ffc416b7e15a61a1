import DBus
import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// Widget records on disk: written before a reply where a caller's value
/// or a new snapshot must survive, batched within a second otherwise.
extension TodayService {
    /// Writes the widget's record as it is now. A write that copied an
    /// older record (the deferred flush, say) cannot land after one that
    /// carries a newer change: copy and write happen under one lock.
    func saveRecord(of widget: Widget) {
        widget.recordWriter.withLock { _ in
            let record = widget.data.withLock { $0.record }
            beforeRecordWrite.withLock { $0 }?(widget.id.rawValue)
            do {
                try store.save(record, for: widget.id)
            } catch {
                log.warning("\(widget.id): cannot keep its state: \(error)")
            }
        }
    }

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
}
