import Foundation
import Synchronization
import TodayKit

/// Asks todayd to reload a kind when what it shows changed; changes that
/// arrive while a request is on its way make one more request, not one each.
final class Reloader: Sendable {
    let kind: String
    private let state = Mutex<(running: Bool, again: Bool)>((false, false))

    init(kind: String) { self.kind = kind }

    func changed() {
        let start = state.withLock { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        guard start else { return }
        request()
    }

    /// One request; when it is answered, another if changes came meanwhile.
    private func request() {
        WidgetCenter.shared.reloadTimelines(ofKind: kind) { [self] _ in
            let more = state.withLock { state -> Bool in
                if state.again {
                    state.again = false
                    return true
                }
                state.running = false
                return false
            }
            if more { request() }
        }
    }
}
