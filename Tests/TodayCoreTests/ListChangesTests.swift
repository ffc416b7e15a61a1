import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// NotificationsChanged over a burst: the first change goes at once, the
/// rest of the window's changes together at its end, merged as a listener
/// would apply them.
@Suite struct ListChangesTests {
    @Test func aBurstIsOneSignalAfterTheFirst() async throws {
        let sent = Locked<[(changed: [UInt32], removed: [UInt32])]>([])
        let changes = ListChanges(window: .milliseconds(200)) { changed, removed in sent.value.append((changed, removed)) }
        changes.note(changed: [1], removed: [])
        #expect(sent.value.count == 1, "a change after a quiet window goes at once")
        changes.note(changed: [2], removed: [])
        changes.note(changed: [3, 2], removed: [1])
        changes.note(changed: [4], removed: [3])
        changes.note(changed: [], removed: [])
        #expect(sent.value.count == 1, "the rest wait for the window's end")
        #expect(try await eventually(5) { sent.value.count == 2 })
        let gathered = try #require(sent.value.last)
        // 3 changed and was removed: only removed; 2 once, in its first place.
        #expect(gathered.changed == [2, 4])
        #expect(gathered.removed == [1, 3])
        try await Task.sleep(for: .milliseconds(300))
        #expect(sent.value.count == 2, "nothing more was sent")
        // After a quiet window, at once again, even with nothing in it (MarkSeen).
        changes.note(changed: [], removed: [])
        #expect(sent.value.count == 3 && sent.value[2].changed.isEmpty && sent.value[2].removed.isEmpty)
    }
}
