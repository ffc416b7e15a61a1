import CSystem
import DBus
import Dispatch
import FoundationEssentials
import Glibc
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The daemon's entry point, shared by `todayd` and the tests.
public enum Daemon {
    public struct Options: Sendable, Equatable {
        public var address: String?
        public var bundleFolders: [String] = []
        public var replace = false
        public var verbose = false
        public var privateBus = false
        public var printInterfaces = false
        public var requireSandbox = false
        public var notifications = true
    }

    public static let usage = """
        usage: todayd [--address ADDR] [--bundles DIR]... [--replace] [--verbose] [--private-bus] [--require-sandbox] [--no-notifications]
               todayd --print-interfaces

        Serves io.github.todayd.Today1 on the session bus (or ADDR).
          --address ADDR   the bus to serve on, instead of DBUS_SESSION_BUS_ADDRESS
          --bundles DIR    one more bundle folder, after the XDG ones (repeatable)
          --replace        take the name over from a running todayd
          --verbose        debug lines too: every change, one line each
          --private-bus    start a dbus-daemon of its own (one that starts no service), print DBUS_SESSION_BUS_ADDRESS=…, serve there
          --require-sandbox  fail provider runs (no-sandbox) where bubblewrap cannot confine them
          --no-notifications  serve no notifications (asks for neither org.freedesktop.Notifications nor org.gtk.Notifications)
          --print-interfaces  print the introspection XML of every interface and exit
        """

    public enum UsageError: Error, CustomStringConvertible {
        case bad(String)
        public var description: String { if case .bad(let m) = self { m } else { "" } }
    }

    public static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--address":
                guard let value = iterator.next() else { throw UsageError.bad("--address needs a bus address") }
                options.address = value
            case "--bundles":
                guard let value = iterator.next(), value.hasPrefix("/") || !value.isEmpty else {
                    throw UsageError.bad("--bundles needs a folder")
                }
                options.bundleFolders.append(URL(fileURLWithPath: value).standardizedFileURL.path)
            case "--replace": options.replace = true
            case "--verbose": options.verbose = true
            case "--private-bus": options.privateBus = true
            case "--print-interfaces": options.printInterfaces = true
            case "--require-sandbox": options.requireSandbox = true
            case "--no-notifications": options.notifications = false
            default: throw UsageError.bad("unknown argument '\(argument)'")
            }
        }
        if options.privateBus && options.address != nil {
            throw UsageError.bad("--private-bus and --address exclude each other")
        }
        return options
    }

    /// The signals the daemon acts on, taken by a thread of their own with
    /// sigwaitinfo(), and SIGCHLD, which it never waits for (providers are
    /// waited for through pidfds and waitpid).
    static let handledSignals = [SIGTERM, SIGINT, SIGHUP]

    /// Opens descriptors 0, 1 and 2 on /dev/null when todayd was started
    /// without them: otherwise the first files it opens take their places,
    /// and log lines or a provider's pipes would go where they must not.
    /// First thing in `main`, before anything opens a file.
    public static func ensureStandardDescriptors() {
        for fd: Int32 in 0...2 where !FileDescriptor.isOpen(fd) {
            guard let null = try? FileDescriptor.open("/dev/null", O_RDWR) else { return }
            if null.rawValue == fd {
                // It took the missing number: keep it open there.
                _ = Unmanaged.passRetained(null)
            } else {
                try? null.duplicate(onto: fd)
            }
        }
    }

    /// `run` for a process's main thread, which then only waits. The
    /// daemon's signals and SIGCHLD are blocked first, here and so in every
    /// thread started after: a provider's exit wakes no thread, and SIGTERM,
    /// SIGINT and SIGHUP reach only the signal thread. (An `async` main
    /// would wait in dispatch's sigsuspend with no signal blocked, and be
    /// woken by every provider's exit.)
    public static func runBlocking(_ options: Options, environment: [String: String]) -> Int32 {
        Signals.block(handledSignals + [SIGCHLD])
        final class Outcome: Sendable {
            let status = Mutex<Int32>(1)
            let done = DispatchSemaphore(value: 0)
        }
        let outcome = Outcome()
        Task {
            let status = await run(options, environment: environment)
            outcome.status.withLock { $0 = status }
            outcome.done.signal()
        }
        outcome.done.wait()
        return outcome.status.withLock { $0 }
    }

    /// Removes, before the first write, what an earlier todayd killed in
    /// the middle of a write left in todayd's own folders: the state and
    /// snapshot folders, every group's Library/Preferences and todayd's
    /// desktop entries. Returns their paths.
    static func removeLeftovers(_ directories: Directories) -> [String] {
        let store = WidgetStore(directories: directories)
        var folders = [
            (store.stateFolder, ""), (store.snapshotFolder, ""), (directories.dataHome + "/applications", BundleDesktopEntries.prefix),
            (directories.stateHome + "/todayd/notifications", ""),
        ]
        for group in FileSystem.entries(directories.groupsFolder) {
            folders.append((directories.groupsFolder + "/" + group + "/Library/Preferences", group))
        }
        return folders.flatMap { folder, prefix in
            DurableFile.removeLeftovers(in: folder, matching: prefix).map { folder + "/" + $0 }
        }
    }

    /// Runs the daemon until SIGTERM, SIGINT or the loss of its bus or name.
    /// Returns the exit status. The signals must be blocked in every thread
    /// (`runBlocking` does that).
    static func run(_ options: Options, environment: [String: String]) async -> Int32 {
        if options.printInterfaces {
            FileSystem.writeAll(1, Today.interfaceXML)
            return 0
        }
        MallocPolicy.configure()
        let log = Logger(verbose: options.verbose, journal: Logger.standardErrorIsJournal(environment))
        var privateBus: BusDaemon?
        let address: String
        do {
            if options.privateBus {
                // A bus of its own activates nothing of the system's: a
                // portal or a document store started there would serve the
                // real home to a test's or a demo's bus. It does start what
                // the user's own service folder holds (the providers of
                // widgets installed there answer on the bus).
                let userServices = Directories(environment: environment).dataHome + "/dbus-1/services"
                let bus = try BusDaemon(serviceFolders: [userServices])
                privateBus = bus
                address = bus.address
                FileSystem.writeAll(1, "DBUS_SESSION_BUS_ADDRESS=\(bus.address)\n")
            } else if let given = options.address ?? environment["DBUS_SESSION_BUS_ADDRESS"], !given.isEmpty {
                address = given
            } else {
                log.error("no bus: DBUS_SESSION_BUS_ADDRESS is not set; pass --address ADDR or --private-bus")
                return 1
            }
        } catch {
            log.error("cannot start a private bus: \(error)")
            return 1
        }
        defer { privateBus?.stop() }

        let connection: Connection
        do {
            connection = try await Connection.connect(address: address)
        } catch {
            log.error("cannot connect to the bus at \(address): \(error)")
            return 1
        }
        let directories = Directories(environment: environment, extraBundleFolders: options.bundleFolders)
        let leftovers = removeLeftovers(directories)
        if !leftovers.isEmpty {
            log.info("removed \(leftovers.count) temporary files left by an interrupted write: \(leftovers.prefix(5).joined(separator: ", "))")
        }
        let support = SandboxSupport.probe(path: (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init))
        if case .unavailable(let reason) = support {
            log.warning(
                "providers run unconfined: \(reason)" + (options.requireSandbox ? "; with --require-sandbox their runs fail (no-sandbox)" : ""))
        }
        let service = TodayService(
            connection: connection, directories: directories, log: log, environment: environment, busAddress: address,
            confinement: ProviderRun.Confinement(support: support, required: options.requireSandbox), notifications: options.notifications)
        let (events, continuation) = AsyncStream<DaemonEvent>.makeStream()
        // Watching starts before the first scan, so that a bundle installed
        // while todayd starts is seen either by the scan or by the watcher.
        let watcher: BundleWatcher?
        do {
            watcher = try BundleWatcher(folders: directories.bundleFolders, unwatched: { log.warning($0) }) {
                continuation.yield(.bundlesChanged)
            }
        } catch {
            watcher = nil
            log.warning(
                "cannot watch the bundle folders: \(BundleWatcher.explain(error)). Until todayd restarts, bundles installed or removed, "
                    + "and changes to notifications.plist and the widget layout, are seen at `todayctl reload` or SIGHUP")
        }
        if let watcher {
            service.mimeIndex.follow(watcher)
            service.notifications?.follow(watcher)
            service.widgets.follow(watcher)
        }
        service.reload()
        let names: NameOwnership
        do {
            // Each name has its own policy: losing todayd's own ends it;
            // the names of the services that join it stop nothing else.
            names = try await NameOwnership(connection: connection) { name, standing in
                if name == Today.busName, standing == .lost { continuation.yield(.nameLost) }
                if name == Notifications.freedesktopName { continuation.yield(.notificationName(standing)) }
            }
            try await service.start()
            let standing = try await names.request(Today.busName, .exclusive(replaceExisting: options.replace))
            guard standing == .owned else {
                log.error("\(Today.busName) is already taken on this bus: another todayd runs; stop it or pass --replace")
                connection.close()
                return 1
            }
        } catch {
            log.error("cannot own \(Today.busName): \(error)")
            connection.close()
            return 1
        }
        log.info("serving \(Today.busName) with \(service.widgetIDs.count) widgets from \(directories.bundleFolders.joined(separator: ", "))")
        if options.notifications {
            // Once its own name is served (SPEC section 14): queued, so that
            // another server keeps them, and replaceable.
            for name in [Notifications.freedesktopName, Notifications.gtkName] {
                do {
                    if try await names.request(name, .queued) == .queued { log.info("\(name) has another owner: todayd waits for it") }
                } catch {
                    log.warning("cannot ask for \(name): \(error); todayd serves no notifications")
                }
            }
        }

        connection.onDisconnect { continuation.yield(.disconnected) }
        do {
            try Threads.detach {
                while true { continuation.yield(.signal(Signals.wait(for: handledSignals))) }
            }
        } catch {
            log.error("cannot start the thread that waits for signals: \(error)")
            await service.stop()
            connection.close()
            return 1
        }
        var status: Int32 = 0
        loop: for await event in events {
            switch event {
            case .signal(SIGHUP):
                log.info("SIGHUP: rescanning the bundle folders, reading notifications.plist and the layout again")
                service.reloadAll()
            case .bundlesChanged:
                log.info("the bundle folders changed: rescanning")
                service.reload()
            case .nameLost:
                log.warning("another todayd took \(Today.busName) over; exiting")
                break loop
            case .notificationName(let standing):
                Task { service.setNotificationServer(await notificationServer(standing, on: connection)) }
            case .disconnected:
                log.error("the bus connection was lost; exiting")
                status = 1
                break loop
            case .signal(let number):
                log.info("signal \(number): exiting")
                break loop
            }
        }
        watcher?.stop()
        await service.stop()
        withExtendedLifetime(names) { connection.close() }
        return status
    }
}

/// Center.NotificationServer for `standing`: `serving`, or `queued` with
/// the owner's unique name and program (`queued :1.4 (dunst)`).
func notificationServer(_ standing: NameOwnership.Standing, on connection: Connection) async -> String {
    if standing == .owned { return "serving" }
    guard let owner = try? await connection.callBus(.getNameOwner, [.string(Notifications.freedesktopName.rawValue)]).value(String.self) else {
        return "queued"
    }
    guard let pid = try? await connection.credentials(of: owner).processID,
        let program = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
    else { return "queued \(owner)" }
    return "queued \(owner) (\(program.trimmingWhitespace()))"
}

/// What the daemon's main loop waits for.
enum DaemonEvent: Sendable {
    /// A signal from the signal thread: SIGHUP rescans, the others end todayd.
    case signal(Int32)
    /// The bundle watcher saw a bundle folder change.
    case bundlesChanged
    /// Another todayd took the name over (--replace).
    case nameLost
    /// org.freedesktop.Notifications came or went.
    case notificationName(NameOwnership.Standing)
    /// The bus connection is gone.
    case disconnected
}
