import Foundation
import PropertyList
import Testing
@testable import TodayCore
import TodayProtocol

/// The update lifecycle as a state machine, without a bus, a provider or a
/// thread: what a request and an outcome come to.
@Suite struct UpdateLifecycleTests {
    typealias Lifecycle = UpdateLifecycle<Int>
    static let now = Date(timeIntervalSince1970: 1_796_083_200)

    /// A record whose provider failed `failures` times, the last `ago` seconds before `now`.
    static func failing(_ failures: UInt32, secondsAgo ago: Double) -> WidgetRecord {
        var record = WidgetRecord()
        record.lastResult = .failed
        record.lastFailure = .exit(1)
        record.lastUpdated = ValueMapping.microseconds(now.addingTimeInterval(-ago))
        record.schedule.consecutiveFailures = failures
        return record
    }

    @Test func aRequestJoinsTheRunOfItsKindUnderWay() {
        var lifecycle = Lifecycle()
        var made = 0
        func make() -> Int {
            made += 1
            return made
        }
        guard case .start(let first) = lifecycle.request(.update, record: WidgetRecord(), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: make) else {
            Issue.record("the first update should start")
            return
        }
        guard case .join(let joined) = lifecycle.request(.update, record: WidgetRecord(), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: make) else {
            Issue.record("the second update should join the first")
            return
        }
        #expect(joined == first)
        #expect(lifecycle.isUpdating)
        // An action is another kind: it starts a run of its own.
        let press = ProviderAction(id: "flip", state: true)
        guard case .start(let action) = lifecycle.request(.action(press), record: WidgetRecord(), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: make) else {
            Issue.record("an action should start while an update is under way")
            return
        }
        #expect(action != first)
        // The same action asking for the other state is another run too.
        let other = lifecycle.request(.action(ProviderAction(id: "flip", state: false)), record: WidgetRecord(), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: make)
        guard case .start = other else {
            Issue.record("a toggle asking for the other state should start its own run")
            return
        }
        #expect(made == 3)
        lifecycle.finish(.update)
        #expect(!lifecycle.isUpdating)
        guard case .start(let next) = lifecycle.request(.update, record: WidgetRecord(), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: make) else {
            Issue.record("an update after the last ended should start anew")
            return
        }
        #expect(next == 4)
        #expect(lifecycle.runs.count == 3)
    }

    @Test func aProviderThatKeepsFailingIsRefusedUntilItsBackOffHasPassed() {
        var lifecycle = Lifecycle()
        let failures = Schedule.requestThreshold + 2
        let delay = Schedule.requestDelay(failures: failures)
        #expect(delay > 1)
        let recent = Self.failing(failures, secondsAgo: delay / 2)
        guard case .refuse(let error) = lifecycle.request(.update, record: recent, widget: WidgetInstanceID(kind: BundleID("org.example.W")), now: Self.now, make: { 1 }) else {
            Issue.record("a request inside the back-off should be refused")
            return
        }
        #expect(error.dbusError.name.rawValue == "io.github.todayd.Today1.Error.ProviderFailed")
        #expect(error.description.contains("'org.example.W' failed \(failures) times in a row (last: exit 1)"))
        #expect(lifecycle.runs.isEmpty)
        // Actions are refused the same way.
        guard case .refuse = lifecycle.request(.action(ProviderAction(id: "a")), record: recent, widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: { 1 }) else {
            Issue.record("an action inside the back-off should be refused")
            return
        }
        // Scheduled updates are spaced by the schedule, not refused.
        guard case .start = lifecycle.request(.update, scheduled: true, record: recent, widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: { 2 }) else {
            Issue.record("a scheduled update should start inside the back-off")
            return
        }
        // Once the back-off has passed, a request runs again.
        var later = Lifecycle()
        guard case .start = later.request(.update, record: Self.failing(failures, secondsAgo: delay + 1), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: { 3 }) else {
            Issue.record("a request after the back-off should start")
            return
        }
        // Failures below the threshold never refuse.
        var few = Lifecycle()
        guard case .start = few.request(.update, record: Self.failing(1, secondsAgo: 0), widget: WidgetInstanceID(kind: BundleID("w")), now: Self.now, make: { 4 }) else {
            Issue.record("a provider that failed once should run on request")
            return
        }
    }

    @Test func aToggleKeepsTheStateAskedForOrGoesBack() throws {
        let previous: PlistDictionary = [
            "title": .string("Traffic"),
            "actions": .array([.dictionary(["id": .string("layer"), "title": .string("Traffic layer"), "kind": .string("toggle"), "state": .boolean(false)])]),
        ]
        let toggle = Lifecycle.Kind.action(ProviderAction(id: "layer", state: true))
        // Nothing new from the provider: the state asked for stays.
        let kept = Lifecycle.settle(.noData, of: toggle, previous: previous)
        #expect(!kept.revert)
        guard case .newData(let answer) = kept.outcome else {
            Issue.record("a toggle's no-data should keep the state asked for")
            return
        }
        #expect(Snapshot(answer.dated[0].snapshot).actions.first?.isOn == true)
        #expect(answer.dated.count == 1 && answer.dated[0].snapshot["title"] == .string("Traffic"))
        // A failure goes back.
        let failed = Lifecycle.settle(.failed(.timeout), of: toggle, previous: previous)
        #expect(failed.revert)
        #expect(failed.outcome == .failed(.timeout))
        // What the provider returned is what stays.
        let returned = ProviderOutcome.newData(TimelineAnswer(snapshot: ["title": .string("new")]))
        #expect(Lifecycle.settle(returned, of: toggle, previous: previous) == (returned, false))
        // Buttons and updates are stored as they came.
        #expect(Lifecycle.settle(.noData, of: .action(ProviderAction(id: "read")), previous: previous) == (.noData, false))
        #expect(Lifecycle.settle(.failed(.reported), of: .update, previous: previous) == (.failed(.reported), false))
    }

    @Test func aProviderThatCouldNotStartIsLookedForAgain() {
        #expect(!Lifecycle.keepsProvider(after: .failed(.noProvider)))
        #expect(Lifecycle.keepsProvider(after: .failed(.exit(2))))
        #expect(Lifecycle.keepsProvider(after: .noData))
    }
}
