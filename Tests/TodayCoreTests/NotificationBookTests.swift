import DBus
import Foundation
import PropertyListValues
import Testing
@testable import TodayCore
import TodayProtocol

/// The notification list as value code (SPEC section 14), driven without a
/// bus or a clock: ids, replacement, expiry, the closing reasons, actions,
/// inhibitions, limits.
@Suite struct NotificationBookTests {
    static let start = Date(timeIntervalSince1970: 1_796_119_200)

    static func posting(
        _ summary: String, app: String = "mail", urgency: TodayNotification.Urgency = .normal, replaces: UInt32 = 0, timeout: Int32 = -1,
        actions: [TodayNotification.Action] = [], configure: (inout TodayNotification) -> Void = { _ in }
    ) -> NotificationBook.Posting {
        var notification = TodayNotification(id: 0, appID: app, appName: app, summary: summary, actions: actions, urgency: urgency, time: start)
        configure(&notification)
        return NotificationBook.Posting(notification: notification, replaces: replaces, expireTimeout: timeout)
    }

    /// Every NotificationClosed in `effects`.
    static func closed(_ effects: [NotificationBook.Effect]) -> [String] {
        effects.compactMap { if case .closed(let id, let reason) = $0 { "\(id):\(reason.rawValue)" } else { nil } }
    }

    @Test func idsAreNeverZeroNorGivenTwiceAcrossRestarts() throws {
        var book = NotificationBook()
        let first = try book.post(Self.posting("a"), at: Self.start).id
        let second = try book.post(Self.posting("b"), at: Self.start).id
        #expect(first == 1 && second == 2)
        _ = try book.dismiss(second)
        // After a restart, from what the store kept: the last id and the list.
        var again = NotificationBook(lastID: book.lastID, kept: book.list)
        #expect(try again.post(Self.posting("c"), at: Self.start).id == 3, "the dismissed 2 is not given again")
        // A list kept with ids past the last id the store wrote still counts.
        var kept = NotificationBook(lastID: 0, kept: book.list)
        #expect(try kept.post(Self.posting("d"), at: Self.start).id == 2)
        // Wrapping past UInt32.max skips 0 and ids in the list.
        var full = NotificationBook(lastID: .max - 1, kept: [])
        #expect(try full.post(Self.posting("e"), at: Self.start).id == .max)
        #expect(try full.post(Self.posting("f"), at: Self.start).id == 1)
    }

    /// The notify fuzz target's first finding: a timeout whose expiry fell
    /// between two microseconds read back as another date.
    @Test func whatIsKeptReadsBackTheSame() throws {
        for timeout: Int32 in [1, 999, 570_425_343, .max] {
            var book = NotificationBook()
            let at = Self.start.addingTimeInterval(0.123_456_789)
            let (id, _) = try book.post(Self.posting("t", timeout: timeout), at: at)
            let kept = try #require(book.byID[id])
            #expect(TodayNotification(stored: kept.stored) == kept, "timeout \(timeout) ms")
        }
        // Its second: a transient one read back as one for the list.
        var book = NotificationBook()
        let (id, _) = try book.post(Self.posting("volume") { $0.transient = true }, at: Self.start)
        let kept = try #require(book.byID[id])
        #expect(TodayNotification(stored: kept.stored) == kept)
    }

    @Test func replacingKeepsTheIdMovesToTheTopAndClosesNothing() throws {
        var book = NotificationBook()
        let id = try book.post(Self.posting("downloading"), at: Self.start).id
        _ = try book.post(Self.posting("other"), at: Self.start)
        let later = Self.start.addingTimeInterval(3)
        let (same, effects) = try book.post(Self.posting("done", replaces: id), at: later)
        #expect(same == id)
        #expect(Self.closed(effects).isEmpty)
        #expect(book.list.map(\.summary) == ["done", "other"])
        #expect(book.list.first?.time == later)
        // An id todayd never gave is 0.
        #expect(try book.post(Self.posting("new", replaces: 999), at: later).id == 3)
        // A stack tag replaces the same app's notification with that tag.
        let tagged = try book.post(Self.posting("volume 10") { $0.stackTag = "volume" }, at: later).id
        #expect(try book.post(Self.posting("volume 20") { $0.stackTag = "volume" }, at: later).id == tagged)
        #expect(try book.post(Self.posting("volume 30", app: "other") { $0.stackTag = "volume" }, at: later).id != tagged)
        // A GNotification id replaces within its app.
        let gtk = try book.post(Self.posting("g1") { $0.source = .gtk; $0.appNotificationID = "x" }, at: later).id
        #expect(try book.post(Self.posting("g2") { $0.source = .gtk; $0.appNotificationID = "x" }, at: later).id == gtk)
    }

    @Test func expiryByUrgencyClosesOnceAndKeepsItInTheList() throws {
        var book = NotificationBook()
        let low = try book.post(Self.posting("low", urgency: .low), at: Self.start).id
        let normal = try book.post(Self.posting("normal"), at: Self.start).id
        let critical = try book.post(Self.posting("critical", urgency: .critical), at: Self.start).id
        let never = try book.post(Self.posting("never", timeout: 0), at: Self.start).id
        let asked = try book.post(Self.posting("asked", timeout: 1500), at: Self.start).id
        #expect(book.nextExpiry == Self.start.addingTimeInterval(1.5))
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(1.4))).isEmpty)
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(1.5))) == ["\(asked):1"])
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(5))) == ["\(low):1"])
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(10))) == ["\(normal):1"])
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(86_400 * 365))).isEmpty)
        #expect(book.nextExpiry == nil)
        // Closed, still listed; open: the critical one and the one that never expires.
        #expect(book.count == 5)
        #expect(book.list.filter(\.isOpen).map(\.id).sorted() == [critical, never])
        // Dismissing a closed one sends nothing more: each closes once.
        let dismissed = try book.dismiss(normal)
        #expect(Self.closed(dismissed).isEmpty && book.count == 4)
        #expect(Self.closed(try book.dismiss(critical)) == ["\(critical):2"])
        #expect(Self.closed(book.recall(never)) == ["\(never):3"])
        #expect(book.recall(12345).isEmpty, "an unknown id is no error")
    }

    /// StackDuplicates (dunst's stack_duplicates): a notification that says
    /// what an open one of its app says takes its place, counting it, and
    /// the one it stacks on closes (reason 1) and leaves the list; another
    /// text, another app, a closed one or the setting off stack nothing.
    @Test func duplicatesStackWhereTheUserAsks() throws {
        var book = NotificationBook()
        book.settings.stackDuplicates = true
        let first = try book.post(Self.posting("Build failed"), at: Self.start).id
        let (second, effects) = try book.post(Self.posting("Build failed"), at: Self.start.addingTimeInterval(1))
        #expect(Self.closed(effects) == ["\(first):1"])
        #expect(effects.contains(.listChanged(changed: [second], removed: [first])), "\(effects)")
        #expect(book.list.map(\.id) == [second] && book.list.first?.duplicates == 1)
        let third = try book.post(Self.posting("Build failed"), at: Self.start.addingTimeInterval(2)).id
        #expect(book.list.map(\.id) == [third] && book.list.first?.duplicates == 2)
        // Another text, another app: their own.
        let passed = try book.post(Self.posting("Build passed"), at: Self.start).id
        let other = try book.post(Self.posting("Build failed", app: "ci"), at: Self.start).id
        #expect(book.list.map(\.id) == [other, passed, third] && book.list.map(\.duplicates) == [0, 0, 2])
        // Closed, it is no longer stacked on.
        _ = try book.dismiss(passed)
        let again = try book.post(Self.posting("Build passed"), at: Self.start).id
        #expect(book.byID[again]?.duplicates == 0)
        // Off (the default): two of the same.
        var plain = NotificationBook()
        _ = try plain.post(Self.posting("Build failed"), at: Self.start)
        _ = try plain.post(Self.posting("Build failed"), at: Self.start)
        #expect(plain.count == 2 && plain.list.allSatisfy { $0.duplicates == 0 })
        // Taken back (its record could not be kept), the one it stacked on is back, open.
        let (_, _, undo) = try book.postUndoably(Self.posting("Build failed"), at: Self.start.addingTimeInterval(3))
        book.takeBack(undo)
        #expect(book.byID[third]?.isOpen == true && book.byID[third]?.duplicates == 2)
        var problems: [String] = []
        #expect(NotificationSettings(plist: book.settings.plist, problems: &problems).stackDuplicates && problems.isEmpty)
        _ = NotificationSettings(plist: ["StackDuplicates": .string("yes")], problems: &problems)
        #expect(problems == ["StackDuplicates must be true or false (<true/>); duplicates are not stacked"])
    }

    /// HoldExpiry (the pointer on the banners): nothing expires while any
    /// connection holds it; let go by the last (or its connection gone),
    /// what came due meanwhile closes `graceAfterHold` later, and what is
    /// due later keeps its time.
    @Test func expiryHeldWhileThePointerIsOnTheBanners() throws {
        var book = NotificationBook()
        let short = try book.post(Self.posting("short", timeout: 1000), at: Self.start).id
        let long = try book.post(Self.posting("long", timeout: 60_000), at: Self.start).id
        book.holdExpiry(true, by: ":1.7", at: Self.start)
        book.holdExpiry(true, by: ":1.8", at: Self.start)
        #expect(book.nextExpiry == nil)
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(30))).isEmpty)
        book.holdExpiry(false, by: ":1.7", at: Self.start.addingTimeInterval(30))
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(31))).isEmpty, "another connection still holds it")
        #expect(book.left(":1.8", at: Self.start.addingTimeInterval(40)).isEmpty)
        #expect(book.nextExpiry == Self.start.addingTimeInterval(40 + NotificationBook.graceAfterHold))
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(42.9))).isEmpty)
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(43))) == ["\(short):1"])
        #expect(book.nextExpiry == Self.start.addingTimeInterval(60))
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(60))) == ["\(long):1"])
        // A connection that never held it lets nothing go.
        book.holdExpiry(false, by: ":1.9", at: Self.start)
        #expect(book.expiryHolds.isEmpty)
    }

    @Test func actionsReachTheAppAndLeaveTheListUnlessResident() throws {
        var book = NotificationBook()
        let actions = [TodayNotification.Action(key: "open", label: "Open")]
        let id = try book.post(Self.posting("mail", timeout: 100, actions: actions), at: Self.start).id
        _ = book.expire(at: Self.start.addingTimeInterval(1))
        // Closed, the action still works from the list.
        let effects = try book.invoke(id, key: "open", token: "t1")
        #expect(effects.first == .invoked(id, key: "open", token: "t1"))
        #expect(Self.closed(effects).isEmpty, "it was closed already")
        #expect(book.count == 0)
        #expect(throws: NotificationBook.Refusal.noSuchNotification(id)) { try book.invoke(id, key: "open", token: nil) }

        let resident = try book.post(Self.posting("call", actions: actions) { $0.resident = true }, at: Self.start).id
        #expect(throws: NotificationBook.Refusal.noSuchAction(resident, "nope")) { try book.invoke(resident, key: "nope", token: nil) }
        _ = try book.invoke(resident, key: "open", token: nil)
        #expect(book.list.first?.isOpen == true, "a resident one stays, open")

        // `default` without such an action starts the app, from the desktop entry.
        let plain = try book.post(Self.posting("plain") { $0.desktopEntry = "org.example.Mail" }, at: Self.start).id
        #expect(try book.invoke(plain, key: "default", token: nil).contains(.activateApp(appID: "org.example.Mail", token: nil)))

        // A GNotification's button is ActivateAction on its app, with the target.
        let gtkActions = [TodayNotification.Action(key: "app.reply", label: "Reply", gtkAction: "app.reply", gtkTarget: .string("42"))]
        let gtk = try book.post(
            Self.posting("g", app: "org.example.App", actions: gtkActions) {
                $0.source = .gtk
                $0.appNotificationID = "n1"
                $0.gtkDefaultAction = "app.show"
            }, at: Self.start
        ).id
        #expect(try book.invoke(gtk, key: "app.reply", token: nil).contains(.activateAction(appID: "org.example.App", name: "app.reply", target: .string("42"), token: nil)))
        let again = try book.post(Self.posting("g") { $0.source = .gtk; $0.appNotificationID = "n2"; $0.gtkDefaultAction = "app.show" }, at: Self.start).id
        #expect(try book.invoke(again, key: "default", token: "t-1").contains(.activateAction(appID: "mail", name: "app.show", target: nil, token: "t-1")))
    }

    @Test func transientOnesNeverEnterTheList() throws {
        var book = NotificationBook()
        let (id, effects) = try book.post(Self.posting("volume") { $0.transient = true }, at: Self.start)
        #expect(book.count == 0 && !effects.contains(.store(id)))
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(10))) == ["\(id):1"])
    }

    @Test func theOldestLeaveWhenTheListIsFullAndAFloodIsRefused() throws {
        var book = NotificationBook()
        book.capacity = 3
        for n in 1...3 { _ = try book.post(Self.posting("n\(n)"), at: Self.start.addingTimeInterval(Double(n))) }
        let (_, effects) = try book.post(Self.posting("n4"), at: Self.start.addingTimeInterval(4))
        #expect(Self.closed(effects) == ["1:4"])
        #expect(effects.contains(.forget(1)))
        #expect(book.list.map(\.summary) == ["n4", "n3", "n2"])

        var flood = NotificationBook()
        for _ in 0..<flood.ratePerSecond { try flood.admit("spam", at: Self.start) }
        #expect(throws: NotificationBook.Refusal.tooMany(appID: "spam")) { try flood.admit("spam", at: Self.start.addingTimeInterval(0.9)) }
        // Another app is not held up, and the next second counts afresh.
        try flood.admit("mail", at: Self.start)
        try flood.admit("spam", at: Self.start.addingTimeInterval(1))
    }

    /// The user's ListLimit (dunst's history_length, mako's max-history):
    /// lowered, the oldest leave at once, NotificationClosed 4 for those
    /// still open; at start, those past it leave too (lowered in the file
    /// while todayd was down).
    @Test func aLowerListLimitTakesTheOldestOut() throws {
        var book = NotificationBook()
        // n2 expires after a second; the others stay open.
        for n in 1...5 {
            _ = try book.post(Self.posting("n\(n)", timeout: n == 2 ? 1000 : 0), at: Self.start.addingTimeInterval(Double(n)))
        }
        #expect(Self.closed(book.expire(at: Self.start.addingTimeInterval(5))) == ["2:1"])
        var settings = NotificationSettings()
        settings.listLimit = 2
        let effects = book.use(settings)
        #expect(book.capacity == 2 && book.list.map(\.summary) == ["n5", "n4"])
        #expect(Self.closed(effects) == ["3:4", "1:4"], "2 was closed already")
        #expect([1, 2, 3].allSatisfy { effects.contains(.forget($0)) })
        #expect(effects.contains(.listChanged(changed: [], removed: [3, 2, 1])))
        #expect(book.use(settings).isEmpty, "nothing more to take out")
        let (_, posted) = try book.post(Self.posting("n6"), at: Self.start.addingTimeInterval(6))
        #expect(Self.closed(posted) == ["4:4"] && book.count == 2)

        let older = TodayNotification(id: 3, appID: "mail", appName: "mail", summary: "older", time: Self.start)
        var restarted = NotificationBook(lastID: 6, kept: book.list + [older])
        restarted.capacity = 2
        #expect(restarted.count == 3)
        let caught = restarted.catchUp(at: Self.start.addingTimeInterval(7))
        #expect(restarted.count == 2 && caught.contains(.forget(3)), "\(caught)")
    }

    /// A post whose record cannot be kept is taken back: the list, its
    /// unseen ones and the ones it pushed out are as before it came.
    @Test func aPostTakenBackLeavesTheListAsItWas() throws {
        var book = NotificationBook()
        book.capacity = 3
        for n in 1...3 { _ = try book.post(Self.posting("n\(n)"), at: Self.start.addingTimeInterval(Double(n))) }
        _ = book.markSeen()
        _ = try book.post(Self.posting("n4"), at: Self.start.addingTimeInterval(4))
        let before = (book.list, book.unseen)

        // A new one that pushes out the oldest.
        let (new, effects, undo) = try book.postUndoably(Self.posting("n5"), at: Self.start.addingTimeInterval(5))
        #expect(effects.contains(.forget(2)) && book.list.map(\.summary) == ["n5", "n4", "n3"])
        book.takeBack(undo)
        #expect(book.list == before.0 && book.unseen == before.1)
        #expect(try book.post(Self.posting("n6"), at: Self.start.addingTimeInterval(6)).id != new, "the id taken back is not given again")

        // One that replaces another: the earlier one comes back where it was.
        var replacing = NotificationBook()
        for n in 1...3 { _ = try replacing.post(Self.posting("r\(n)"), at: Self.start.addingTimeInterval(Double(n))) }
        _ = replacing.markSeen()
        let kept = (replacing.list, replacing.unseen)
        let (_, _, replaced) = try replacing.postUndoably(Self.posting("r2 again", replaces: 2), at: Self.start.addingTimeInterval(9))
        #expect(replacing.list.map(\.summary) == ["r2 again", "r3", "r1"] && replacing.unseen == [2])
        replacing.takeBack(replaced)
        #expect(replacing.list == kept.0 && replacing.unseen == kept.1)

        // A transient one that took a listed one out.
        let (_, _, transient) = try replacing.postUndoably(Self.posting("volume", replaces: 3) { $0.transient = true }, at: Self.start.addingTimeInterval(10))
        #expect(replacing.list.map(\.summary) == ["r2", "r1"])
        replacing.takeBack(transient)
        #expect(replacing.list == kept.0 && replacing.byID[3]?.transient == false)

        // What came since under the same id stays.
        let (id, _, first) = try replacing.postUndoably(Self.posting("x"), at: Self.start.addingTimeInterval(11))
        _ = try replacing.post(Self.posting("x again", replaces: id), at: Self.start.addingTimeInterval(12))
        replacing.takeBack(first)
        #expect(replacing.byID[id]?.summary == "x again" && replacing.list.first?.id == id)
    }

    @Test func inhibitionsEndWithTheirCallersConnection() {
        var book = NotificationBook()
        let (first, on) = book.inhibit(by: ":1.5")
        #expect(on == [.inhibited(true)])
        let (second, more) = book.inhibit(by: ":1.6")
        #expect(more.isEmpty && first != second)
        #expect(book.uninhibit(first, by: ":1.6").isEmpty, "another connection's cookie changes nothing")
        #expect(book.uninhibit(first, by: ":1.5").isEmpty && book.isInhibited)
        #expect(book.left(":1.6", at: Self.start) == [.inhibited(false)])
        #expect(!book.isInhibited)
    }

    @Test func unseenCountsWhatCameSinceMarkSeen() throws {
        var book = NotificationBook()
        _ = try book.post(Self.posting("a"), at: Self.start)
        _ = try book.post(Self.posting("b"), at: Self.start.addingTimeInterval(1))
        #expect(book.unseen.count == 2)
        // What is kept is the time of the newest seen: what came after it
        // is what stays unseen after a restart.
        #expect(book.markSeen() == [.seen(upTo: Self.start.addingTimeInterval(1)), .listChanged(changed: [], removed: [])])
        #expect(book.unseen.isEmpty && book.markSeen().isEmpty)
        _ = try book.post(Self.posting("c"), at: Self.start.addingTimeInterval(2))
        // A replacement is new again.
        _ = try book.post(Self.posting("a again", replaces: 1), at: Self.start.addingTimeInterval(3))
        #expect(book.unseen == [1, 3])

        let restarted = NotificationBook(lastID: book.lastID, kept: book.list, seenUpTo: Self.start.addingTimeInterval(1))
        #expect(restarted.unseen == book.unseen)
        #expect(restarted.list == book.list)
        // Never marked seen: all of them.
        #expect(NotificationBook(lastID: book.lastID, kept: book.list, seenUpTo: nil).unseen == [1, 2, 3])
    }
}

/// image-data as dunst and mako check it, and what todayd keeps of it.
@Suite struct NotificationImageTests {
    static func image(_ width: Int32, _ height: Int32, rowstride: Int32? = nil, alpha: Bool = true, channels: Int32 = 4, bits: Int32 = 8, bytes: Int? = nil) -> Value {
        let stride = rowstride ?? width * channels
        let count = bytes ?? Int(height - 1) * Int(stride) + Int(width * channels)
        return .structure([.int32(width), .int32(height), .int32(stride), .boolean(alpha), .int32(bits), .int32(channels), .bytes(Data(repeating: 200, count: max(0, count)))])
    }

    @Test func theLengthRuleAndTheRest() throws {
        let cases: [(Value, String?)] = [
            (Self.image(2, 2), nil),
            (Self.image(3, 2, rowstride: 12, alpha: false, channels: 3), nil),
            (Self.image(2, 2, bytes: 15), "hint 'image-data': data is 15 bytes; 2×2 with rowstride 8 and 4 channels needs exactly 16"),
            (Self.image(2, 2, bytes: 17), "hint 'image-data': data is 17 bytes; 2×2 with rowstride 8 and 4 channels needs exactly 16"),
            (Self.image(0, 2), "hint 'image-data': width and height must be 1 to 4096, not 0×2"),
            (Self.image(2, 4097), "hint 'image-data': width and height must be 1 to 4096, not 2×4097"),
            (Self.image(2, 2, bits: 16), "hint 'image-data': bits per sample must be 8, not 16"),
            (Self.image(2, 2, channels: 2), "hint 'image-data': channels must be 3 or 4, not 2"),
            (Self.image(2, 2, alpha: false), "hint 'image-data': has_alpha is false with 4 channels; it must be true exactly with 4"),
            (Self.image(2, 2, rowstride: 7), "hint 'image-data': rowstride 7 is less than a row's 8 bytes"),
            (.string("x"), "hint 'image-data' must be (iiibiiay): width, height, rowstride, has_alpha, bits per sample, channels, data"),
        ]
        for (value, message) in cases {
            do throws(NotificationImages.Refused) {
                _ = try NotificationImages.image(value, hint: "image-data")
                #expect(message == nil, "accepted, though: \(message ?? "")")
            } catch {
                #expect(error.description == message)
            }
        }
    }

    @Test func aLargePictureIsScaledToFit() throws {
        let kept = try NotificationImages.image(Self.image(1024, 512), hint: "image-data")
        #expect(kept.width == 256 && kept.height == 128 && kept.rowstride == 1024 && kept.data.count == 256 * 128 * 4)
        #expect(kept.data.allSatisfy { $0 == 200 }, "a flat picture stays flat")
        let small = try NotificationImages.image(Self.image(64, 64, rowstride: 300), hint: "image-data")
        #expect(small.width == 64 && small.rowstride == 300, "one that fits is kept as sent")
    }
}

/// The user's notification settings: Do Not Disturb, its schedule, the
/// policies per app.
@Suite struct NotificationSettingsTests {
    @Test func theScheduleRunsPastMidnight() {
        var settings = NotificationSettings()
        settings.scheduleFrom = "22:00"
        settings.scheduleTo = "07:00"
        #expect(settings.isQuiet(atMinute: 22 * 60) && settings.isQuiet(atMinute: 3 * 60) && settings.isQuiet(atMinute: 7 * 60 - 1))
        #expect(!settings.isQuiet(atMinute: 7 * 60) && !settings.isQuiet(atMinute: 12 * 60) && !settings.isQuiet(atMinute: 22 * 60 - 1))
        settings.scheduleFrom = "09:30"
        settings.scheduleTo = "10:00"
        #expect(settings.isQuiet(atMinute: 9 * 60 + 30) && !settings.isQuiet(atMinute: 10 * 60))
        settings.doNotDisturb = true
        #expect(settings.isQuiet(atMinute: 12 * 60), "on: all day")
        #expect(NotificationSettings.minutes("7:00") == nil && NotificationSettings.minutes("24:00") == nil && NotificationSettings.minutes("23:59") == 1439)
    }

    @Test func policiesSayWhatIsWrong() throws {
        #expect(try NotificationSettings.policy([:]) == nil)
        let policy = try #require(try NotificationSettings.policy(["list": .boolean(false), "urgency": .byte(2)]))
        #expect(!policy.list && policy.banners && policy.urgency == .critical)
        for (entries, message) in [
            (["colour": Value.string("red")], "no policy key 'colour': banners, list, sounds (b), urgency (y) and timeout (i) are"),
            (["list": .string("no")], "policy key 'list' must be a boolean (b)"),
            (["urgency": .byte(3)], "policy key 'urgency' must be 0, 1 or 2, not 3"),
            (["timeout": .int32(-1)], "policy key 'timeout' is milliseconds, 0 for until dismissed, not -1; leave it out for the time the app asks"),
            (["timeout": .uint32(5000)], "policy key 'timeout' must be an int32 (i) of milliseconds"),
        ] {
            #expect(throws: TodayError.invalidArgs(message)) { try NotificationSettings.policy(entries) }
        }
        #expect(throws: TodayError.self) { try NotificationSettings.schedule(.structure([.string("25:00"), .string("07:00")])) }
        #expect(try NotificationSettings.schedule(.structure([.string(""), .string("")])) == ("", ""))
    }

    @Test func whatTheFileKeepsReadsBack() {
        var settings = NotificationSettings()
        settings.doNotDisturb = true
        settings.doNotDisturbUntil = Date(timeIntervalSince1970: 1_796_666_400)
        settings.scheduleFrom = "22:00"
        settings.scheduleTo = "07:00"
        settings.policies = [
            "org.example.Chat": .init(banners: false, list: true, sounds: false, urgency: .low), "": .init(),
            "org.example.Build": .init(timeout: 0), "org.example.Mail": .init(timeout: 3000),
        ]
        var problems: [String] = []
        #expect(NotificationSettings(plist: settings.plist, problems: &problems) == settings && problems.isEmpty)
        let broken = NotificationSettings(plist: ["DoNotDisturbFrom": .string("late"), "AppPolicies": .dictionary(["x": .string("y")])], problems: &problems)
        #expect(broken.scheduleFrom.isEmpty && broken.policies.isEmpty && problems.count == 2, "\(problems)")
        // A wrong time or urgency is named and left out; the rest of the policy holds.
        problems = []
        let wrong = NotificationSettings(
            plist: ["AppPolicies": .dictionary(["a": .dictionary(["banners": .boolean(false), "timeout": .integer(-5), "urgency": .integer(7)])])],
            problems: &problems)
        #expect(wrong.policies["a"] == .init(banners: false), "\(wrong.policies)")
        #expect(problems == [
            "AppPolicies.a.urgency must be 0 (low), 1 (normal) or 2 (critical); its notifications keep the urgency the app asks",
            "AppPolicies.a.timeout must be milliseconds (0 for until dismissed); its notifications expire as the app asks",
        ])
    }

    @Test func anAppsPolicyChangesWhatItsNotificationsDo() throws {
        var book = NotificationBook()
        book.settings.policies["noisy"] = .init(banners: true, list: false, sounds: true, urgency: .low)
        book.settings.policies[""] = .init(banners: true, list: true, sounds: true, urgency: nil)
        let (id, effects) = try book.post(NotificationBookTests.posting("spam", app: "noisy", urgency: .critical), at: NotificationBookTests.start)
        #expect(book.count == 0 && !effects.contains(.store(id)), "kept out of the list")
        #expect(book.byID[id]?.urgency == .low, "its urgency overridden")
        _ = try book.post(NotificationBookTests.posting("mail"), at: NotificationBookTests.start)
        #expect(book.count == 1)
    }

    /// An app's `timeout` (todayd's policy key, dunst's rule `timeout`):
    /// its notifications stay open that long whatever they ask, critical
    /// ones too; 0 keeps them open; the default policy counts for apps
    /// without one of their own.
    /// DoNotDisturbUntil: a later time turns Do Not Disturb on until then
    /// (whole seconds, as the file keeps them); 0 takes the end away; a
    /// time past is refused. The file keeps the end only while it is on.
    @Test func doNotDisturbUntilATime() throws {
        let now = Date(timeIntervalSince1970: 1_796_600_000)
        var settings = NotificationSettings()
        try settings.setDoNotDisturb(until: 1_796_603_600_500_000, now: now)
        #expect(settings.doNotDisturb && settings.doNotDisturbUntil == Date(timeIntervalSince1970: 1_796_603_600))
        #expect(settings.doNotDisturbUntilValue == .uint64(1_796_603_600_000_000))
        var problems: [String] = []
        #expect(NotificationSettings(plist: settings.plist, problems: &problems) == settings && problems.isEmpty)
        try settings.setDoNotDisturb(until: 0, now: now)
        #expect(settings.doNotDisturb && settings.doNotDisturbUntil == nil)
        #expect(throws: TodayError.self) { try settings.setDoNotDisturb(until: 1_796_599_999_000_000, now: now) }
        #expect(throws: TodayError.self) { try settings.setDoNotDisturb(until: UInt64.max, now: now) }
        // Off, an end in the file means nothing; one that is not a date is named.
        let off = NotificationSettings(plist: ["DoNotDisturb": .boolean(false), "DoNotDisturbUntil": .date(now)], problems: &problems)
        #expect(off.doNotDisturbUntil == nil && off.doNotDisturbUntilValue == .uint64(0) && problems.isEmpty)
        let wrong = NotificationSettings(plist: ["DoNotDisturb": .boolean(true), "DoNotDisturbUntil": .string("tonight")], problems: &problems)
        #expect(wrong.doNotDisturb && wrong.doNotDisturbUntil == nil && problems.count == 1 && problems.first?.hasPrefix("DoNotDisturbUntil must be a date") == true)
    }

    /// BannerPosition, read from the file and written back where it is not
    /// the top-right default; a place that is not one is named.
    @Test func whereTheBannersShow() throws {
        var problems: [String] = []
        #expect(NotificationSettings(plist: [:], problems: &problems).bannerPosition == .topRight)
        #expect(NotificationSettings().plist["BannerPosition"] == nil)
        for position in BannerPosition.allCases {
            var settings = NotificationSettings()
            settings.bannerPosition = position
            #expect(NotificationSettings(plist: settings.plist, problems: &problems) == settings)
        }
        #expect(problems.isEmpty, "\(problems)")
        let wrong = NotificationSettings(plist: ["BannerPosition": .string("middle")], problems: &problems)
        #expect(wrong.bannerPosition == .topRight)
        #expect(problems == ["BannerPosition must be top-right, top-left, top, bottom-right, bottom-left or bottom; the banners show at the top-right"])
        #expect(BannerPosition.bottomLeft.atLeft && !BannerPosition.bottomLeft.atTop && !BannerPosition.top.atLeft && !BannerPosition.top.atRight)
        // BannerLimit: written where not 3; 1 to 3.
        var fewer = NotificationSettings()
        fewer.bannerLimit = 1
        #expect(fewer.plist["BannerLimit"] == .integer(1) && NotificationSettings().plist["BannerLimit"] == nil)
        problems = []
        #expect(NotificationSettings(plist: fewer.plist, problems: &problems) == fewer && problems.isEmpty)
        #expect(NotificationSettings(plist: ["BannerLimit": .integer(5)], problems: &problems).bannerLimit == 3)
        #expect(problems == ["BannerLimit must be 1, 2 or 3 (<integer>1</integer>); up to 3 banners show at once"])
        // ListLimit: written where not 1,000; 1 to 10,000.
        var limited = NotificationSettings()
        limited.listLimit = 20
        #expect(limited.plist["ListLimit"] == .integer(20) && NotificationSettings().plist["ListLimit"] == nil)
        problems = []
        #expect(NotificationSettings(plist: limited.plist, problems: &problems) == limited && problems.isEmpty)
        for wrong: PlistValue in [.integer(0), .integer(10_001), .string("20")] {
            problems = []
            #expect(NotificationSettings(plist: ["ListLimit": wrong], problems: &problems).listLimit == 1_000)
            #expect(problems == ["ListLimit must be a number of notifications from 1 to 10000 (<integer>100</integer>); the list keeps 1000"])
        }
        // BannerOutput: written where set; a name with a control character is none.
        var output = NotificationSettings()
        output.bannerOutput = "HDMI-A-1"
        #expect(output.plist["BannerOutput"] == .string("HDMI-A-1") && NotificationSettings().plist["BannerOutput"] == nil)
        problems = []
        #expect(NotificationSettings(plist: output.plist, problems: &problems) == output && problems.isEmpty)
        #expect(NotificationSettings(plist: ["BannerOutput": .string("DP-1\n")], problems: &problems).bannerOutput == "")
        #expect(problems == ["BannerOutput must be an output's name, such as DP-1 (swaymsg -t get_outputs, xrandr); the banners show where the compositor puts them"])
    }

    /// IdleThreshold, dunst's idle_threshold: 120 s unless set, written
    /// where it is not; 0 is never; what is not seconds is named.
    @Test func howLongTheUserIsAwayBeforeTheBannersWait() throws {
        var problems: [String] = []
        #expect(NotificationSettings(plist: [:], problems: &problems).idleThreshold == 120)
        #expect(NotificationSettings().plist["IdleThreshold"] == nil)
        for seconds: UInt32 in [0, 30, 600] {
            var settings = NotificationSettings()
            settings.idleThreshold = seconds
            #expect(settings.plist["IdleThreshold"] == .integer(Int64(seconds)))
            #expect(NotificationSettings(plist: settings.plist, problems: &problems) == settings)
        }
        #expect(problems.isEmpty, "\(problems)")
        for written: PlistValue in [.string("5m"), .integer(-1), .integer(1 << 40)] {
            problems = []
            #expect(NotificationSettings(plist: ["IdleThreshold": written], problems: &problems).idleThreshold == 120)
            #expect(problems == ["IdleThreshold must be a number of seconds (<integer>300</integer>; 0 for never); the banners hold after 120"])
        }
    }

    /// Rules, read from the file: each matches on every criterion it
    /// has, sets what it names over the app's policy, a later one over an
    /// earlier; one with a mistake is named and left out.
    @Test func rulesMatchAndSetOverThePolicy() throws {
        var problems: [String] = []
        let settings = NotificationSettings(
            plist: [
                "AppPolicies": .dictionary(["CI": .dictionary(["banners": .boolean(false)])]),
                "Rules": .array([
                    .dictionary(["Match": .dictionary(["summary": .string("*failed*"), "urgency": .string("normal")]), "urgency": .integer(2), "banners": .boolean(true)]),
                    .dictionary(["Match": .dictionary(["app-id": .string("CI"), "body": .string("*flaky*")]), "sounds": .boolean(false), "timeout": .integer(0)]),
                    .dictionary(["Match": .dictionary(["summary": .string("*")]), "volume": .integer(3)]),
                    .dictionary(["banners": .boolean(false)]),
                    .string("loud"),
                ]),
            ], problems: &problems)
        #expect(settings.rules.count == 2)
        #expect(problems == [
            "Rules item 3: there is no setting 'volume' (banners, list, sounds, urgency, timeout are); the rule is left out",
            "Rules item 4: Match must be a dictionary of what to match (app-id, app-name, summary, body, category, urgency); for every app, set the default policy; the rule is left out",
            "Rules item 5 is not a dictionary; left out",
        ])
        func policy(_ summary: String, body: String = "", urgency: TodayNotification.Urgency = .normal) -> NotificationSettings.Policy {
            var notification = TodayNotification(id: 0, appID: "CI", appName: "CI", summary: summary, urgency: urgency, time: NotificationBookTests.start)
            notification.body = body
            return settings.policy(for: notification)
        }
        #expect(policy("Build passed") == .init(banners: false), "the app's policy alone")
        #expect(policy("Build failed") == .init(banners: true, urgency: .critical))
        #expect(policy("Build failed", urgency: .low) == .init(banners: false), "the first rule matches the urgency asked, normal")
        #expect(policy("Build failed", body: "a flaky test") == .init(banners: true, sounds: false, urgency: .critical, timeout: 0), "both rules")
    }

    @Test func anAppsTimeoutIsTheUsers() throws {
        let start = NotificationBookTests.start
        var book = NotificationBook()
        book.settings.policies["build"] = .init(timeout: 2000)
        book.settings.policies["pager"] = .init(timeout: 0)
        func expires(_ summary: String, app: String, urgency: TodayNotification.Urgency = .normal, timeout: Int32) throws -> Date? {
            let id = try book.post(NotificationBookTests.posting(summary, app: app, urgency: urgency, timeout: timeout), at: start).id
            return book.byID[id]?.expires
        }
        #expect(try expires("done", app: "build", timeout: 0) == start.addingTimeInterval(2), "asked never, the user says 2 s")
        #expect(try expires("failed", app: "build", urgency: .critical, timeout: -1) == start.addingTimeInterval(2))
        #expect(try expires("page", app: "pager", timeout: 1500) == nil, "asked 1.5 s, the user says until dismissed")
        #expect(try expires("mail", app: "mail", timeout: 1500) == start.addingTimeInterval(1.5), "no policy: as asked")
        book.settings.policies[""] = .init(timeout: 8000)
        #expect(try expires("news", app: "news", urgency: .critical, timeout: 0) == start.addingTimeInterval(8), "the default policy's time")
        #expect(try expires("built", app: "build", timeout: 0) == start.addingTimeInterval(2), "the app's own policy first")
        let id = try book.post(NotificationBookTests.posting("later", app: "build", timeout: 0), at: start).id
        #expect(NotificationBookTests.closed(book.expire(at: start.addingTimeInterval(2))).contains("\(id):1"))
    }

    /// Banners (SPEC section 15): what passes Do Not Disturb (on or
    /// scheduled), the inhibitions and its app's policy; critical ones pass
    /// the first two, never an app's "no banners".
    @Test func whatShowsAsABanner() throws {
        func banners(_ book: inout NotificationBook, _ posting: NotificationBook.Posting, minute: Int = 12 * 60) throws -> Bool {
            let (id, effects) = try book.post(posting, at: NotificationBookTests.start, minute: minute)
            return effects.contains(.banner(id))
        }
        var book = NotificationBook()
        #expect(try banners(&book, NotificationBookTests.posting("plain")))
        #expect(try banners(&book, NotificationBookTests.posting("transient") { $0.transient = true }), "shown, though never listed")
        book.settings.doNotDisturb = true
        #expect(try !banners(&book, NotificationBookTests.posting("quiet")))
        #expect(try banners(&book, NotificationBookTests.posting("fire", urgency: .critical)), "critical ones still show")
        book.settings.doNotDisturb = false
        book.settings.scheduleFrom = "22:00"
        book.settings.scheduleTo = "07:00"
        #expect(try !banners(&book, NotificationBookTests.posting("night"), minute: 23 * 60))
        #expect(try !banners(&book, NotificationBookTests.posting("early"), minute: 6 * 60 + 59))
        #expect(try banners(&book, NotificationBookTests.posting("morning"), minute: 7 * 60))
        let (cookie, _) = book.inhibit(by: ":1.9")
        #expect(try !banners(&book, NotificationBookTests.posting("presenting")))
        #expect(try banners(&book, NotificationBookTests.posting("alarm", urgency: .critical)))
        _ = book.uninhibit(cookie, by: ":1.9")
        book.settings.policies["chat"] = .init(banners: false, list: true, sounds: true, urgency: nil)
        #expect(try !banners(&book, NotificationBookTests.posting("hi", app: "chat", urgency: .critical)), "the user said no banners for this app")
        book.settings.policies["mail"] = .init(banners: true, list: true, sounds: true, urgency: .critical)
        book.settings.doNotDisturb = true
        #expect(try banners(&book, NotificationBookTests.posting("boss", app: "mail")), "the policy's urgency counts")
    }

    /// A sound plays where the notification asks for one and would alert
    /// the user: its app's policy allows sounds (whatever it says of
    /// banners), and Do Not Disturb and the inhibitions let it through
    /// (critical ones always); a passive one never sounds.
    @Test func whatSoundsAndWhatDoesNot() throws {
        let chime = NotificationSound.name("message-new-instant")
        func sounds(_ book: inout NotificationBook, _ summary: String, app: String = "mail", urgency: TodayNotification.Urgency = .normal,
            sound: NotificationSound? = chime, rule: NotificationBook.BannerRule = .usual, minute: Int = 12 * 60
        ) throws -> NotificationSound? {
            var posting = NotificationBookTests.posting(summary, app: app, urgency: urgency)
            posting.sound = sound
            posting.banner = rule
            let (_, effects) = try book.post(posting, at: NotificationBookTests.start, minute: minute)
            let played = effects.compactMap { if case .sound(let sound) = $0 { sound } else { nil } }
            #expect(played.count <= 1)
            return played.first
        }
        var book = NotificationBook()
        #expect(try sounds(&book, "new mail") == chime)
        #expect(try sounds(&book, "a file", sound: .file("/usr/share/sounds/bell.oga")) == .file("/usr/share/sounds/bell.oga"))
        #expect(try sounds(&book, "silent", sound: nil) == nil, "none asked for")
        #expect(try sounds(&book, "passive", rule: .never) == nil)
        book.settings.doNotDisturb = true
        #expect(try sounds(&book, "quiet") == nil)
        #expect(try sounds(&book, "fire", urgency: .critical) == chime)
        #expect(try sounds(&book, "meeting", rule: .throughDoNotDisturb) == chime, "time-sensitive")
        book.settings.doNotDisturb = false
        let (cookie, _) = book.inhibit(by: ":1.9")
        #expect(try sounds(&book, "presenting") == nil)
        _ = book.uninhibit(cookie, by: ":1.9")
        book.settings.policies["chat"] = .init(banners: true, list: true, sounds: false, urgency: nil)
        #expect(try sounds(&book, "hi", app: "chat", urgency: .critical) == nil, "the user said no sounds for this app")
        book.settings.policies["chat"] = .init(banners: false, list: false, sounds: true, urgency: nil)
        #expect(try sounds(&book, "ping", app: "chat") == chime, "no banner and not kept, and still heard")
    }
}
