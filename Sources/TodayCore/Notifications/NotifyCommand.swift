import FoundationEssentials
import Posix
import Synchronization
import TodayProtocol

/// The user's `NotifyCommand` (notifications.plist): a program todayd runs
/// for each notification posted, as dunst runs a rule's `script` and mako
/// its `on-notify` command (to log, to speak, to flash a light). It runs
/// without a shell, as the list gives it, in the session's environment;
/// the notification reaches it only in environment variables
/// (`variables`), never in its arguments or in a command line, so that no
/// text an app sends is ever parsed as a command, and other users do not
/// see it in the process list. At most `most` run at once, each for
/// `longest` at most: a flood of notifications runs no more (what comes
/// while they run is not run, and the log says so once a minute).
final class NotifyCommand: Sendable {
    private struct State {
        var running = 0
        /// When a notification last went without its command.
        var droppedLogged: ContinuousClock.Instant?
        /// The command's failure has been logged since it last worked.
        var failureLogged = false
    }

    private let state = Mutex(State())
    private let session: SessionPrograms
    private let log: Logger

    static let most = 4
    static let longest = Duration.seconds(10)

    init(environment: [String: String], log: Logger) {
        session = SessionPrograms(environment: environment)
        self.log = log
    }

    /// The variables `notification` is handed over in; `shown`: it showed
    /// as a banner (not held back by Do Not Disturb, an inhibition or its
    /// app's policy).
    static func variables(_ notification: TodayNotification, shown: Bool) -> [String: String] {
        [
            "TODAYD_ID": String(notification.id), "TODAYD_APP_ID": notification.appID, "TODAYD_APP_NAME": notification.appName,
            "TODAYD_APP_ICON": notification.appIcon, "TODAYD_SUMMARY": notification.summary,
            "TODAYD_BODY": NotificationEntry.plain(notification.body), "TODAYD_URGENCY": notification.urgency.name,
            "TODAYD_CATEGORY": notification.category, "TODAYD_SOURCE": notification.source.rawValue,
            "TODAYD_PROGRESS": notification.value.map(String.init) ?? "", "TODAYD_SHOWN": shown ? "1" : "0",
        ]
    }

    /// Runs `command` for `notification` in the background, unless `most`
    /// already run.
    func run(_ command: [String], for notification: TodayNotification, shown: Bool) {
        let now = ContinuousClock.now
        let (start, logDrop) = state.withLock { state -> (Bool, Bool) in
            guard state.running >= Self.most else {
                state.running += 1
                return (true, false)
            }
            guard state.droppedLogged.map({ now - $0 >= .seconds(60) }) ?? true else { return (false, false) }
            state.droppedLogged = now
            return (false, true)
        }
        if logDrop {
            log.warning("NotifyCommand: \(Self.most) still run; notification \(notification.id) goes without it (said once a minute)")
        }
        guard start else { return }
        let variables = Self.variables(notification, shown: shown)
        do {
            try Threads.detach { [self] in
                defer { state.withLock { $0.running -= 1 } }
                run(command, variables)
            }
        } catch {
            state.withLock { $0.running -= 1 }
            log.warning("cannot start a thread for the NotifyCommand: \(error)")
        }
    }

    private func run(_ command: [String], _ variables: [String: String]) {
        guard let argv = session.resolved(command) else {
            failed("the NotifyCommand of notifications.plist, '\(command.first ?? "")', is not a program on PATH")
            return
        }
        let program = argv[0]
        do {
            let ending = try session.runBriefly(argv, adding: variables, limit: Self.longest) { [log] line in
                log.debug("NotifyCommand: \(line)")
            }
            guard ending == .exited(0) else {
                failed("the NotifyCommand \(program) ended with \(ending)")
                return
            }
            state.withLock { $0.failureLogged = false }
        } catch {
            failed("cannot start the NotifyCommand \(program): \(error)")
        }
    }

    /// Says why, once until the command works again.
    private func failed(_ why: String) {
        let logged = state.withLock { state -> Bool in
            defer { state.failureLogged = true }
            return state.failureLogged
        }
        if !logged { log.warning(why) }
    }
}
