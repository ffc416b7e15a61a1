import DBus
import FoundationEssentials
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The notification server (SPEC section 14): org.freedesktop.Notifications
/// and org.gtk.Notifications on their objects, todayd's own Notifications
/// interface on the manager object, the list (`NotificationBook`) and its
/// store. Owns its state; the names are asked for by the daemon.
final class NotificationService: Sendable {
    let connection: Connection
    let identities: Identities
    let urls: URLService
    let log: Logger
    let store: NotificationStore
    /// `$XDG_CONFIG_HOME/todayd/notifications.plist`: the user's settings.
    let settingsPath: String
    let clock: ServiceClock
    let book: Mutex<NotificationBook>
    /// Notify and AddNotification, taken in turn per sender.
    private let lanes: NotificationLanes
    /// The loop's turn (`Connection.turn`) and how many Notify were
    /// answered at once in it (`inTurn(_:_:ready:)`).
    private let answeredAtOnce = Mutex<(turn: UInt64, count: Int)>((0, 0))
    /// The Notify calls the loop thread posted in its current turn, kept
    /// and answered at the turn's end (`keepTurn`).
    private let turnPosts = Mutex<[TurnPost]>([])
    /// ListNotifications' reply, marshalled at the first call after a
    /// change of the list, with the list's generation it was made from.
    private let listTemplate = Mutex<(generation: UInt64, reply: ReplyTemplate)?>(nil)
    /// Closes the notifications whose time has run out, when it runs out.
    private let expiry = Mutex<(any DueTimer)?>(nil)
    /// Until when banners are not asked for, after they could not be shown.
    private let bannersHeldUntil = Mutex<Date?>(nil)
    /// Held while the settings file is read or written, so that changes
    /// reach the disk and the list one at a time, in the same order.
    private let settingsFile = Mutex(())
    /// When notifications.plist, gone, counts as removed.
    private let settingsRemoval = RemovalGrace(WidgetService.removalGrace)
    /// The apps' scheduled notifications (SPEC section 18), their files,
    /// the number of the last change made to them (which orders the
    /// writes of an app), and the timer that delivers them.
    let schedule: Mutex<(book: NotificationSchedule, change: UInt64)>
    let scheduleStore: ScheduleStore
    let scheduleTimer = Mutex<(any DueTimer)?>(nil)
    /// The app a caller's bundle belongs to: a widget's container app, else itself.
    let appOf: @Sendable (String) -> String
    /// An installed app's icon file (its CFBundleIconFile), where it has one.
    let iconOf: @Sendable (String) -> String?
    let freedesktop: ExportedInterface
    let gtk: ExportedInterface
    /// The Notifications interface of the manager object.
    let center: ExportedInterface
    /// Its NotificationsChanged, gathered over a burst, with the
    /// PropertiesChanged of Count and Unseen just before it.
    private let listChanges: ListChanges
    /// Count and Unseen as `center` has them: a change of the list that
    /// leaves both as they were (a full list, where each new notification
    /// takes the oldest's place) does not touch the properties.
    private let countsShown: Mutex<(count: UInt32, unseen: UInt32)>
    /// Plays the sounds notifications ask for.
    let sounds: NotificationSounds
    /// Runs the user's NotifyCommand.
    let commands: NotifyCommand
    let directories: Directories

    /// Longest kept summary and body, in UTF-8 bytes; longer is cut with `…`.
    static let longestSummary = 1024
    static let longestBody = NotificationMarkup.longestBody

    init(
        connection: Connection, directories: Directories, identities: Identities, urls: URLService, log: Logger, clock: ServiceClock,
        timeZone: TimeZone = .current, appOf: @escaping @Sendable (String) -> String = { $0 },
        iconOf: @escaping @Sendable (String) -> String? = { _ in nil }, environment: [String: String] = [:]
    ) {
        self.connection = connection
        self.directories = directories
        sounds = NotificationSounds(themes: SoundThemes(directories: directories), environment: environment, log: log)
        commands = NotifyCommand(environment: environment, log: log)
        lanes = NotificationLanes(onLoop: { job in connection.submit(job) }, isOnLoop: { connection.isOnLoopThread })
        self.appOf = appOf
        self.iconOf = iconOf
        self.identities = identities
        self.urls = urls
        self.log = log
        self.clock = clock
        store = NotificationStore(directories: directories, log: log)
        settingsPath = directories.configHome + "/todayd/notifications.plist"
        let (lastID, kept, seenUpTo) = store.load()
        store.sweepImages(keeping: kept)
        var book = NotificationBook(lastID: lastID, kept: kept, seenUpTo: seenUpTo)
        // What was reserved may have been given before a kill: go on after it.
        book.idsReserved = book.lastID
        // What is past the user's ListLimit leaves at `start`.
        book.settings = Self.readSettings(settingsPath, log: log) ?? NotificationSettings()
        book.capacity = book.settings.listLimit
        self.book = Mutex(book)
        scheduleStore = ScheduleStore(directories: directories, log: log)
        schedule = Mutex((NotificationSchedule(apps: scheduleStore.load(), zone: timeZone), 0))
        let late = Late<NotificationService>()
        freedesktop = Self.freedesktopObject(late)
        gtk = Self.gtkObject(late)
        let center = Self.centerObject(late, count: UInt32(book.count), unseen: UInt32(book.unseen.count), settings: book.settings)
        self.center = center
        countsShown = Mutex((UInt32(book.count), UInt32(book.unseen.count)))
        listChanges = ListChanges(later: { [connection] nanoseconds, job in
            connection.submit(after: .nanoseconds(Int64(clamping: nanoseconds)), job)
        }) { changed, removed in
            center.announce()
            try? center.emit(
                Notifications.Center.notificationsChanged, [.array(.uint32, changed.map { .uint32($0) }), .array(.uint32, removed.map { .uint32($0) })])
        }
        late.set(self)
        store.follow { [weak self] in self?.list }
        connection.beforeWriting { [weak self] in self?.keepTurn() }
    }

    /// Exports the two servers' objects, closes what expired while todayd
    /// was down and starts the expiry.
    func start() {
        connection.objects.export(Notifications.freedesktopPath, [freedesktop])
        connection.objects.export(Notifications.gtkPath, [gtk])
        let effects = book.withLock { $0.catchUp(at: clock.now) }
        carryOut(effects)
        let timer = clock.timer(named: "todayd-expiry") { [weak self] in self?.expire() ?? 3600 }
        if timer == nil { log.warning("no timerfd: notifications do not expire") }
        expiry.withLock { $0 = timer }
        // Requests whose time came while todayd was down are delivered at
        // its first look, once.
        let delivery = clock.timer(named: "todayd-scheduled") { [weak self] in self?.deliverDue() ?? 3600 }
        if delivery == nil { log.warning("no timerfd: scheduled notifications are not delivered") }
        scheduleTimer.withLock { $0 = delivery }
    }

    /// Flushes the store, with the last id given: after a clean stop, ids
    /// go on from it; after a kill, from the end of the block reserved.
    func stop() {
        expiry.withLock { $0 }?.stop()
        scheduleTimer.withLock { $0 }?.stop()
        book.withLock { book in
            guard (try? store.saveLastGiven(book.lastID)) != nil else { return }
            book.idsReserved = book.lastID
        }
        store.flush()
    }

    /// Ids reserved at a time.
    static let idBlock: UInt32 = 1000

    /// The end of the block of ids reserved after `id`.
    static func block(after id: UInt32) -> UInt32 {
        id > UInt32.max - idBlock ? UInt32.max : id + idBlock
    }

    /// Reserves the next block of ids, on a thread of its own: a durable
    /// write that no Notify waits for.
    private func reserveIDs() {
        let start: @Sendable () -> Void = { [self] in
            let from = book.withLock { $0.idsReserved }
            let reserved = Self.block(after: from)
            let kept = (try? store.saveLastID(reserved)) != nil
            book.withLock { book in
                book.reservingIDs = false
                // A Notify that found none left may have reserved past it.
                if kept, reserved > book.idsReserved { book.idsReserved = reserved }
            }
            if !kept { log.warning("cannot keep the notification ids in \(store.folder); the next Notify tries again") }
        }
        do {
            try Threads.detach(start)
        } catch {
            book.withLock { $0.reservingIDs = false }
        }
    }

    /// A banners program took its name: banners are asked for again at
    /// once, though the last try failed less than a minute ago.
    func bannersAppeared() {
        bannersHeldUntil.withLock { until in
            if until != nil { until = .distantPast }
        }
    }

    /// A connection left the bus: its inhibitions end.
    func left(_ uniqueName: String) {
        let now = clock.now
        let (effects, wasHolding) = book.withLock { book in
            let wasHolding = book.expiryHolds.contains(uniqueName)
            return (book.left(uniqueName, at: now), wasHolding)
        }
        if !effects.isEmpty { carryOut(effects) }
        if wasHolding { expiry.withLock { $0 }?.poke() }
    }

    /// HoldExpiry: held or let go by `sender`; the expiry timer looks again.
    func holdExpiry(_ hold: Bool, by sender: String) {
        let now = clock.now
        book.withLock { $0.holdExpiry(hold, by: sender, at: now) }
        expiry.withLock { $0 }?.poke()
    }

    /// ListNotifications' reply: the list, newest first, marshalled once
    /// per change (a panel that reads the list of 1,000 at each change
    /// pays for it once, every other reader for a copy).
    func listReply() throws -> ReplyTemplate {
        let now = book.withLock { $0.generation }
        if let kept = listTemplate.withLock({ $0 }), kept.generation == now { return kept.reply }
        let (generation, list) = book.withLock { ($0.generation, $0.list) }
        let reply = try ReplyTemplate([.array(.dictionary(key: .string, value: .variant), list.map { .vardict($0.dictionary) })])
        listTemplate.withLock { kept in
            if (kept?.generation ?? 0) <= generation { kept = (generation, reply) }
        }
        return reply
    }

    // MARK: Posting

    /// Runs `work` in the caller's lane (`NotificationLanes`), in a task,
    /// answers the call with what it returns or throws, then announces what
    /// it posted; LimitsExceeded at once where the caller already has a
    /// lane's worth of calls waiting.
    func inTurn(_ call: MethodCall, _ answer: PendingAnswer, _ work: @escaping @Sendable () async throws -> ([Value], Posted)) throws {
        try enqueue(
            call,
            .waiting { [self] in
                do {
                    let (values, posted) = try await work()
                    answer.succeed(values)
                    announce(posted)
                } catch {
                    answer.fail(error)
                }
            })
    }

    /// As `inTurn`, for a call that waits for nothing (`readyCaller`), on
    /// the connection's loop thread: at once where its sender has nothing
    /// in its lane (which it would overtake) and fewer than a lane's turn
    /// (`NotificationLanes.turnLength`) have been answered at once in this
    /// turn of the loop; else in its lane, whose turn then comes on the
    /// loop thread too.
    ///
    /// A Notify answered on the loop thread costs no task, no thread's wake
    /// and no wait for the connection's lock. A message read in the same
    /// turn waits behind one lane's turn of them at most, as it would
    /// behind a lane; beyond that the calls queue in their lanes, and a
    /// sender that has calls in its lane keeps to it until it empties, so
    /// that no sender waits behind another's flood.
    ///
    /// On the loop thread, what the call posts is kept, and the call
    /// answered, at the end of the loop's turn with the turn's other posts
    /// (`keepTurn`): one write to the journal for all of them, and their
    /// answers in one write to the bus. `work` is told so (`atTurnEnd`).
    func inTurn(_ call: MethodCall, _ answer: PendingAnswer, ready work: @escaping @Sendable (_ atTurnEnd: Bool) throws -> ([Value], Posted)) throws {
        let turn = call.connection.turn
        if lanes.isIdle(call.sender) {
            let inBudget = answeredAtOnce.withLock { answered in
                if answered.turn != turn { answered = (turn, 0) }
                guard answered.count < lanes.turnLength else { return false }
                answered.count += 1
                return true
            }
            if inBudget { return answerNow(answer, work, atTurnEnd: true) }
        }
        try enqueue(call, .ready { [self] in answerNow(answer, work, atTurnEnd: connection.isOnLoopThread) })
    }

    private func enqueue(_ call: MethodCall, _ work: NotificationLanes.Work) throws {
        guard lanes.enqueue(call.sender, work) else {
            throw DBusError(
                .limitsExceeded, "\(lanes.depth) notifications from this connection are still waiting; wait for their answers before sending more")
        }
    }

    /// Who the caller of a Notify is, where the call waits for nothing and
    /// can be answered on the connection's loop thread: its caller is known
    /// already, it carries no picture (compressing one is work for a task),
    /// its body and hints are short (`largestReady`), and an id is reserved
    /// for it (reserving one is a durable write). Nil otherwise, and the
    /// call is answered in a task (`inTurn`).
    func readyCaller(_ call: MethodCall, body: String, hints: VariantDictionary) -> Identities.Caller? {
        guard body.utf8.count <= Self.largestReady,
            !hints.value.dictionaryEntries.contains(where: { Self.pictureHints.contains($0.key.string ?? "") }),
            hints.value.approximateSize <= Self.largestReady,
            book.withLock({ $0.lastID < $0.idsReserved })
        else { return nil }
        return identities.knownCaller(of: call)
    }

    /// The longest body, and the largest hints, a Notify answered on the
    /// loop thread carries, in bytes. Reducing a body's markup and writing
    /// its record take about 60 µs a KiB: a body of 64 KiB, 4 ms, which the
    /// loop thread does not give one sender while others wait.
    static let largestReady = 4096

    /// The hints that carry pixels.
    static let pictureHints: Set<String> = ["image-data", "image_data", "icon_data"]

    /// Answers with what `work` returns or throws, then announces what it
    /// posted; on the loop thread (`atTurnEnd`), a post is answered and
    /// announced once it is kept, at the turn's end (`keepTurn`).
    private func answerNow(_ answer: PendingAnswer, _ work: (Bool) throws -> ([Value], Posted), atTurnEnd: Bool) {
        do {
            let (values, posted) = try work(atTurnEnd)
            if let undo = posted.unkept {
                turnPosts.withLock { $0.append(TurnPost(posted: posted, undo: undo, answer: answer, values: values)) }
                return
            }
            answer.succeed(values)
            announce(posted)
        } catch {
            answer.fail(error)
        }
    }

    /// A post of the loop's turn, not yet kept, and its caller's answer.
    private struct TurnPost: Sendable {
        let posted: Posted
        let undo: NotificationBook.Undo
        let answer: PendingAnswer
        let values: [Value]
    }

    /// Keeps the posts of the loop's turn in one write to the journal,
    /// then answers and announces each, in order: the connection writes
    /// what they sent after this, all in one write. Where the journal
    /// cannot take them, each is taken back and its caller told why.
    /// Run by the connection at the end of each turn (`beforeWriting`).
    private func keepTurn() {
        let posts = turnPosts.withLock { posts -> [TurnPost] in
            guard !posts.isEmpty else { return [] }
            defer { posts.removeAll(keepingCapacity: true) }
            return posts
        }
        guard !posts.isEmpty else { return }
        do {
            try record(posts.lazy.flatMap(\.posted.effects), count: posts.reduce(0) { $0 + $1.posted.effects.count })
        } catch {
            book.withLock { book in
                for post in posts.reversed() { book.takeBack(post.undo) }
            }
            let failure = Self.notKept(error, in: store.folder)
            for post in posts { post.answer.fail(failure) }
            return
        }
        for post in posts {
            for case .dropImage(let path) in post.posted.effects { store.dropImage(path) }
            post.answer.succeed(post.values)
            announce(post.posted)
        }
    }

    /// What a caller hears where its notification cannot be kept.
    private static func notKept(_ error: any Error, in folder: String) -> TodayError {
        TodayError.storage("the notification cannot be kept (\(error)); nothing was posted. Free some space in \(folder) and send it again")
    }

    /// Counts a notification of `appID` against its app's rate, before it
    /// is read; LimitsExceeded beyond it.
    func admit(_ appID: String) throws {
        let at = clock.now
        do {
            try book.withLock { book throws(NotificationBook.Refusal) in try book.admit(appID, at: at) }
        } catch {
            throw DBusError(
                .limitsExceeded,
                "'\(appID)' sent more than \(NotificationBook.defaultRate) notifications in a second; send fewer (replace one with replaces_id)")
        }
    }

    /// A notification posted: its id, and the post's effects, whose
    /// keeping (store, forget, drop a picture) is done; the rest is
    /// announced once its sender has been answered (`announce`).
    struct Posted: Sendable {
        let id: UInt32
        let effects: [NotificationBook.Effect]
        /// The user's NotifyCommand and the notification it runs for.
        typealias Command = (argv: [String], notification: TodayNotification)
        /// Where there is one.
        var command: Command?
        /// What takes the post back, where it is not kept yet: it is kept
        /// at the loop's turn end (`keepTurn`). Nil once kept.
        var unkept: NotificationBook.Undo?
    }

    /// Sends what a post left to announce, and runs the user's
    /// NotifyCommand for it.
    func announce(_ posted: Posted) {
        carryOut(posted.effects, kept: true)
        if let (argv, notification) = posted.command {
            commands.run(argv, for: notification, shown: posted.effects.contains(.banner(posted.id)))
        }
    }

    /// Posts `posting` and keeps what follows; the store has it before
    /// this returns, and the rest waits for `announce`. With `atTurnEnd`
    /// (on the loop thread), it is kept at the end of the loop's turn
    /// instead (`keepTurn`), and the post says how to take it back.
    func post(_ posting: consuming NotificationBook.Posting, atTurnEnd: Bool = false) throws -> Posted {
        // The picture is kept as a PNG file, not in memory: a thousand
        // notifications with pictures cost their paths.
        if let image = posting.notification.image {
            guard let png = PNGFile.encode(image) else { throw TodayError.invalidArgs("the notification's picture cannot be compressed") }
            do {
                posting.notification.imageFile = try store.keepImage(png)
            } catch {
                throw TodayError.storage("cannot keep the notification's picture in \(store.imageFolder): \(error)")
            }
            posting.notification.image = nil
        }
        let kept = posting.notification.imageFile
        do {
            return try post(kept: consume posting, atTurnEnd: atTurnEnd)
        } catch {
            if let kept { store.dropImage(kept) }
            throw error
        }
    }

    private func post(kept posting: consuming NotificationBook.Posting, atTurnEnd: Bool) throws -> Posted {
        let at = clock.now
        var reserveNext = false
        // Handed to the book whole, so that the notification it makes of
        // it is its fields' one owner (`postUndoably`).
        var handed: NotificationBook.Posting? = consume posting
        let result: Result<(id: UInt32, effects: [NotificationBook.Effect], undo: NotificationBook.Undo, sooner: Bool, command: Posted.Command?), NotificationBook.Refusal> = try book.withLock { book in
            // An id is on disk (reserved) before it is given. The next
            // block is reserved in the background once half of this one is
            // given; only where none is left (that write failed, or a burst
            // outran it) does a Notify wait for it, under the lock so that
            // no id of the block can be answered before it is kept.
            if book.lastID >= book.idsReserved {
                let reserved = Self.block(after: book.lastID)
                do {
                    try store.saveLastID(reserved)
                } catch {
                    throw TodayError.storage("cannot keep the notification ids in \(store.folder): \(error)")
                }
                book.idsReserved = reserved
            } else if book.idsReserved - book.lastID < Self.idBlock / 2, !book.reservingIDs {
                book.reservingIDs = true
                reserveNext = true
            }
            guard let posting = handed.take() else { throw DBusError.failed("the notification was handed to the list twice") }
            do throws(NotificationBook.Refusal) {
                let (id, effects, undo) = try book.postUndoably(consume posting, at: at)
                // Only this one's expiry can come before the next look: no
                // walk over the list, and no wake, at every Notify.
                var sooner = false
                if let expires = book.byID[id]?.expires, expires < book.expiryLooksAt {
                    book.expiryLooksAt = expires
                    sooner = true
                }
                // A copy of the notification only where a command runs for it.
                let argv = book.settings.notifyCommand
                let command = argv.isEmpty ? nil : book.byID[id].map { (argv, $0) }
                return .success((id, effects, undo, sooner, command))
            } catch {
                return .failure(error)
            }
        }
        if reserveNext { reserveIDs() }
        switch result {
        case .failure(let refusal):
            throw DBusError.failed("\(refusal)")
        case .success(let (id, effects, undo, sooner, command)):
            // The expiry looks sooner even where the post is taken back:
            // the book's next look moved, and a look too early finds nothing.
            if sooner { expiry.withLock { $0 }?.poke() }
            if atTurnEnd { return Posted(id: id, effects: effects, command: command, unkept: undo) }
            // What is kept is on disk before the answer; what is announced
            // waits for the caller's answer (`announce`), so that the
            // answer does not queue behind the signals at the bus.
            do {
                try record(effects)
            } catch {
                // Not kept, not given: the caller hears why, and the list
                // is as it was (nothing it took out is closed or announced).
                book.withLock { $0.takeBack(undo) }
                throw Self.notKept(error, in: store.folder)
            }
            for case .dropImage(let path) in effects { store.dropImage(path) }
            return Posted(id: id, effects: effects, command: command)
        }
    }

    /// Cuts `text` to `limit` UTF-8 bytes, on a character, with `…`.
    static func cut(_ text: String, to limit: Int) -> String { NotificationMarkup.cut(text, to: limit) }

    /// Who the caller is, for the list's grouping (SPEC section 14): a
    /// Flatpak sender's app id, else the bundle of a provider or a
    /// registered app; nil where it is none of those.
    func callerApp(_ call: MethodCall) async -> String? {
        (try? await identities.caller(of: call))?.bundleID
    }

    // MARK: Carrying effects out

    /// Does what the book said, in order; what it keeps first, in one
    /// write to the journal, unless that is `kept` already (a post's).
    func carryOut(_ effects: [NotificationBook.Effect], kept: Bool = false) {
        typealias F = Notifications.Freedesktop
        if !kept { keep(effects) }
        for effect in effects {
            switch effect {
            case .closed(let id, let reason):
                try? freedesktop.emit(F.notificationClosed, [.uint32(id), .uint32(reason.rawValue)])
            case .store, .forget:
                break
            case .dropImage(let path):
                if !kept { store.dropImage(path) }
            case .listChanged(let changed, let removed):
                // The counts at once (a Get after Notify's answer reads
                // them); their PropertiesChanged and the ids go with the
                // others of a burst (`listChanges`). Read and set under one
                // lock, so that two changes carried out at once on two
                // threads leave the later counts.
                countsShown.withLock { shown in
                    let now = counts
                    guard now != shown else { return }
                    shown = now
                    center.setUnannounced([
                        (Notifications.Center.count.name, .uint32(now.count)), (Notifications.Center.unseen.name, .uint32(now.unseen)),
                    ])
                }
                listChanges.note(changed: changed, removed: removed)
            case .seen(let time):
                do {
                    try store.keepSeen(upTo: time)
                } catch {
                    log.warning("cannot keep in \(store.folder) that the notifications are seen (after a restart they count as unseen): \(error)")
                }
            case .invoked(let id, let key, let token):
                if let token { try? freedesktop.emit(F.activationToken, [.uint32(id), .string(token)]) }
                try? freedesktop.emit(F.actionInvoked, [.uint32(id), .string(key)])
            case .replied(let id, let text):
                try? freedesktop.emit(F.notificationReplied, [.uint32(id), .string(text)])
            case .activateAction(let appID, let name, let target, let token):
                activate(appID, action: name, target: target, token: token)
            case .activateApp(let appID, let token):
                activate(appID, action: nil, target: nil, token: token)
            case .inhibited(let on):
                freedesktop.set(F.inhibited.name, .boolean(on))
            case .banner(let id):
                showBanner(id)
            case .sound(let sound):
                let (command, theme) = book.withLock { ($0.settings.soundCommand, $0.settings.soundTheme) }
                sounds.play(sound, command: command, theme: theme)
            case .respond(let appID, let response, let token):
                respond(appID, response, token: token)
            case .openURL(let url, let token):
                let urls = urls
                let log = log
                Task {
                    do {
                        _ = try await urls.open(url, platformData: VariantDictionary(token.map { [("activation-token", .string($0))] } ?? []))
                    } catch {
                        log.warning("notification's URL \(url.prefix(200)): \(error)")
                    }
                }
            }
        }
    }

    /// Appends the notifications `effects` store and forget to the
    /// journal, in their order, in one write; where that fails, says so.
    private func keep(_ effects: [NotificationBook.Effect]) {
        do {
            try record(effects)
        } catch {
            log.warning("notifications \(Self.recordedIDs(effects).map(String.init).joined(separator: ", ")): cannot keep them: \(error)")
        }
    }

    /// Appends the notifications `effects` store and forget to the
    /// journal, in their order, in one write; throws where it cannot, and
    /// then none of them is in the journal.
    private func record(_ effects: some Sequence<NotificationBook.Effect>, count: Int? = nil) throws {
        var records: [NotificationStore.Record] = []
        records.reserveCapacity(count ?? effects.underestimatedCount)
        for effect in effects {
            switch effect {
            case .store(let id):
                if let notification = book.withLock({ $0.byID[id] }) { records.append(.put(notification)) }
            case .forget(let id):
                records.append(.remove(id))
            default:
                break
            }
        }
        try store.keep(records)
    }

    /// The ids of the notifications `effects` store or forget.
    private static func recordedIDs(_ effects: [NotificationBook.Effect]) -> [UInt32] {
        effects.compactMap { effect in
            switch effect {
            case .store(let id), .forget(let id): id
            default: nil
            }
        }
    }

    /// Hands notification `id` to the banners (`today-banners`,
    /// started by the bus at the first). Where they cannot be started (no
    /// display, not installed), banners are not asked for again for a
    /// minute: a flood does not start a failing program at every
    /// notification. The calls leave in the order of the notifications.
    private func showBanner(_ id: UInt32) {
        let now = clock.now
        // Held back first: while the banners cannot start, a flood costs
        // no copy of each notification.
        guard bannersHeldUntil.withLock({ $0.map { now >= $0 } ?? true }), let notification = book.withLock({ $0.byID[id] }) else { return }
        let later = now.addingTimeInterval(60)
        connection.call(
            Notifications.bannersName, path: Notifications.bannersPath, interface: Notifications.banners.name,
            member: Notifications.Banners.show.method.name, [.vardict(notification.dictionary)]
        ) { [self] result in
            guard case .failure(let error) = result else { return }
            let first = bannersHeldUntil.withLock { until in
                defer { until = later }
                return until == nil
            }
            // Said once: a desktop without a display for banners is not an error.
            if first { log.info("no banners (\(error)); the list and the bars still show notifications") }
        }
    }

    /// org.freedesktop.Application on the app `appID`: ActivateAction of an
    /// `app.NAME` action, or Activate; the bus starts the app where it is
    /// D-Bus activatable and not running. In the background: nobody waits.
    private func activate(_ appID: String, action: String?, target: Value?, token: String?) {
        // The token of the click, under both names GApplication reads
        // (`desktop-startup-id` before GLib 2.76), so that the app comes
        // to the front.
        let platformData = VariantDictionary(token.map { [("activation-token", .string($0)), ("desktop-startup-id", .string($0))] } ?? [])
        // An app bundle (section 7) comes forward as a tap on its widget
        // brings it: Activate on the running app, else its executable started.
        if action == nil, let bundle = BundleID(rawValue: appID), urls.knowsApp(bundle) {
            let urls = urls
            let log = log
            Task {
                do {
                    _ = try await urls.activateApp(bundle, for: nil, platformData: platformData)
                } catch {
                    log.warning("notification of '\(appID)': \(error)")
                }
            }
            return
        }
        guard let name = BusName(rawValue: appID), let path = Today.applicationPath(appID) else {
            log.warning("notification of '\(appID)': not a D-Bus name; its action reaches no app")
            return
        }
        let connection = connection
        let log = log
        Task {
            do {
                if let action {
                    let bare = action.hasPrefix("app.") ? String(action.dropFirst(4)) : action
                    try await connection.call(
                        name, path: path, interface: Today.application.name, Today.Application.activateAction, bare,
                        VariantArray(target.map { [$0] } ?? []), platformData, timeout: .seconds(25))
                } else {
                    try await connection.call(
                        name, path: path, interface: Today.application.name, Today.Application.activate, platformData, timeout: .seconds(25))
                }
            } catch {
                log.warning("notification of '\(appID)': \(action.map { "ActivateAction(\($0))" } ?? "Activate") failed: \(error)")
            }
        }
    }

    // MARK: Expiry

    /// Closes what has expired, and ends Do Not Disturb where its time
    /// has come; returns how many seconds until the next of those (an hour
    /// at most).
    private func expire() -> Double {
        let now = clock.now
        let stillOn = endDoNotDisturbIfDue(at: now)
        let (effects, wait) = book.withLock { book in
            let effects = book.expire(at: now)
            var wait = min(book.nextExpiry.map { $0.timeIntervalSince(now) } ?? 3600, 3600)
            if let end = book.settings.doNotDisturbEnd {
                // One that could not be turned off is tried again in a minute.
                wait = min(wait, stillOn ? 60 : max(end.timeIntervalSince(now), 0))
            }
            book.expiryLooksAt = now.addingTimeInterval(wait)
            return (effects, wait)
        }
        carryOut(effects)
        return wait
    }

    /// Turns Do Not Disturb off where its end (DoNotDisturbUntil) has
    /// come, also when it came while todayd was down, and keeps that in
    /// notifications.plist. Whether it is past its end and still on (the
    /// file could not be written).
    private func endDoNotDisturbIfDue(at now: Date) -> Bool {
        guard let end = book.withLock({ $0.settings.doNotDisturbEnd }), end <= now else { return false }
        do {
            try changeSettings { settings in
                // As the file says now: turned off, or given a later end, since.
                guard let end = settings.doNotDisturbEnd, end <= now else { return }
                settings.doNotDisturb = false
                settings.doNotDisturbUntil = nil
            }
            if !book.withLock({ $0.settings.doNotDisturb }) { log.info("Do Not Disturb is off: the time it was on until has come") }
            return false
        } catch {
            log.warning("Do Not Disturb's time has come, but it stays on: \(error)")
            return true
        }
    }

    // MARK: Reading

    var list: [TodayNotification] { book.withLock { $0.list } }

    func notification(_ id: UInt32) throws -> TodayNotification {
        guard let notification = book.withLock({ $0.order.contains(id) ? $0.byID[id] : nil }) else {
            throw TodayError.noSuchNotification(id)
        }
        return notification
    }

    /// Runs `change` on the book and carries out its effects; a refusal
    /// becomes the D-Bus error a caller reads.
    func change(_ change: (inout NotificationBook) throws(NotificationBook.Refusal) -> [NotificationBook.Effect]) throws {
        let result: Result<[NotificationBook.Effect], NotificationBook.Refusal> = book.withLock { book in
            do throws(NotificationBook.Refusal) {
                return .success(try change(&book))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let effects): carryOut(effects)
        case .failure(.noSuchNotification(let id)): throw TodayError.noSuchNotification(id)
        case .failure(.noSuchAction(let id, let key)): throw TodayError.noSuchNotificationAction(id, key)
        case .failure(.tooMany(let app)): throw DBusError(.limitsExceeded, "'\(app)' sent too many notifications")
        }
    }

    var isInhibited: Bool { book.withLock { $0.isInhibited } }

    // MARK: Settings

    /// Why a settings file does not read as settings: what its parser
    /// said, or that it holds no dictionary.
    struct UnreadableSettings: Error, CustomStringConvertible {
        let description: String
    }

    /// The settings in `path`, the defaults where there is none; each value
    /// it holds wrong is named in `problems` and keeps its default. Throws
    /// where the file is not a property list of a dictionary (being
    /// written, or broken).
    static func loadSettings(_ path: String, problems: inout [String]) throws(UnreadableSettings) -> NotificationSettings {
        guard FileSystem.exists(path) else { return NotificationSettings() }
        let read: PlistValue
        do {
            read = try Plist.read(contentsOf: path)
        } catch {
            throw UnreadableSettings(description: "\(error)")
        }
        guard let plist = read.dictionary else { throw UnreadableSettings(description: "it holds no dictionary") }
        return NotificationSettings(plist: plist, problems: &problems)
    }

    /// `loadSettings`, its problems and its failure said in the log; nil
    /// where the file does not read.
    static func readSettings(_ path: String, log: Logger) -> NotificationSettings? {
        var problems: [String] = []
        do {
            let settings = try loadSettings(path, problems: &problems)
            for problem in problems { log.warning("\(path): \(problem)") }
            return settings
        } catch {
            log.warning("\(path) does not read (\(error)); the settings stay as they were: fix it, or remove it for the defaults")
            return nil
        }
    }

    /// Changes the settings, keeps them (durably, before the caller hears
    /// back, and before the list follows them: a change that cannot be kept
    /// changes nothing) and announces what changed.
    func changeSettings(_ change: (inout NotificationSettings) throws -> Void) throws {
        // An edit not read yet (behind a symbolic link, or before its
        // event) is taken in first, and the change made on it.
        readSettingsAgain()
        let (settings, effects) = try settingsFile.withLock { _ in
            // A file that does not read is the user's, half edited: it is
            // not written over, so that nothing of the edit is lost.
            var problems: [String] = []
            do {
                _ = try Self.loadSettings(settingsPath, problems: &problems)
            } catch {
                throw TodayError.storage(
                    "\(settingsPath) does not read (\(error)); todayd does not write over a file it cannot read: "
                        + "fix it, or remove it for the defaults, and try again; the settings are unchanged")
            }
            var settings = book.withLock { $0.settings }
            try change(&settings)
            do {
                try DurableFile.write(try Plist.write(.dictionary(settings.plist), format: .xml), toUsersFile: settingsPath)
            } catch {
                throw TodayError.storage("cannot keep the notification settings in \(settingsPath): \(error)")
            }
            return (settings, book.withLock { $0.use(settings) })
        }
        carryOut(effects)
        announce(settings)
    }

    /// Reads the settings again whenever their file changes (an editor, a
    /// script, a dotfile manager): SPEC section 14. A file being written,
    /// or broken, leaves the settings as they were; a file removed brings
    /// back the defaults. Where the folder does not exist yet, its nearest
    /// parent is watched until it does.
    func follow(_ watcher: BundleWatcher) {
        watcher.watchAlso([PathText.parent(of: settingsPath)], for: "notification-settings") { [weak self, weak watcher] in
            guard let self, let watcher else { return }
            self.readSettingsAgain()
            // The folder may have just appeared: watch it from now on.
            self.follow(watcher)
        }
    }

    /// Reads notifications.plist again, and announces what changed: when
    /// the watcher sees it change, and at a reload (SIGHUP, `todayctl
    /// reload`), which also reaches a file the watcher cannot see change
    /// (a symbolic link's target in another folder, no inotify).
    func readSettingsAgain() {
        // A file that went away, while the settings are not the defaults,
        // counts as removed only after a grace (as layout.plist does): a
        // dotfile manager or `git checkout` removes it and writes it again,
        // and Do Not Disturb would otherwise be off in between.
        let away = !FileSystem.exists(settingsPath) && book.withLock { $0.settings != NotificationSettings() }
        guard settingsRemoval.settled(away: away, lookAgain: { [weak self] in self?.readSettingsAgain() }) else { return }
        let changed = settingsFile.withLock { _ -> (NotificationSettings, [NotificationBook.Effect])? in
            guard let read = Self.readSettings(settingsPath, log: log) else { return nil }
            return book.withLock { book in
                guard book.settings != read else { return nil }
                return (read, book.use(read))
            }
        }
        guard let (settings, effects) = changed else { return }
        log.info("notification settings read again from \(settingsPath)")
        carryOut(effects)
        announce(settings)
    }

    private func announce(_ settings: NotificationSettings) {
        typealias C = Notifications.Center
        // The expiry's timer ends Do Not Disturb too.
        if let end = settings.doNotDisturbEnd { expiry.withLock { $0 }?.poke(ifBefore: end) }
        center.set([
            (C.doNotDisturb.name, .boolean(settings.doNotDisturb)),
            (C.doNotDisturbUntil.name, settings.doNotDisturbUntilValue),
            (C.doNotDisturbSchedule.name, .structure([.string(settings.scheduleFrom), .string(settings.scheduleTo)])),
            (C.appPolicies.name, settings.policiesValue),
            (C.bannerPosition.name, .string(settings.bannerPosition.rawValue)), (C.bannerOutput.name, .string(settings.bannerOutput)),
            (C.idleThreshold.name, .uint32(settings.idleThreshold)), (C.listLimit.name, .uint32(UInt32(clamping: settings.listLimit))),
            (C.bannerLimit.name, .uint32(UInt32(clamping: settings.bannerLimit))),
        ])
    }

    var counts: (count: UInt32, unseen: UInt32) { book.withLock { (UInt32($0.count), UInt32($0.unseen.count)) } }
}

/// A reference to an object made after the closures that need it: set
/// once, weak, so that the closures keep nothing alive.
final class Late<Object: AnyObject & Sendable>: Sendable {
    private struct Weak: @unchecked Sendable {
        // @unchecked: the reference is only read and written under the mutex.
        weak var object: Object?
    }
    private let reference = Mutex(Weak())

    func set(_ object: Object) { reference.withLock { $0.object = object } }

    /// The object, or the error a caller gets once it is gone.
    func get() throws -> Object {
        guard let object = reference.withLock({ $0.object }) else { throw DBusError.failed("todayd is shutting down") }
        return object
    }
}
