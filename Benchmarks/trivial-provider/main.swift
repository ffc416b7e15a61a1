// The smallest TodayKit widget provider: no new data, every time. The
// PerformUpdate benchmark runs it through todayd and directly.
import TodayKit

@main
struct TrivialProvider: WidgetProviding {
    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
        (.noData, previous)
    }
}
