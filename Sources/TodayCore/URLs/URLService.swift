import DBus
import FoundationEssentials
import Synchronization
import TodayProtocol

/// URL dispatch (SPEC section 6): where a URL goes (a running app that
/// registered its scheme, a bundle's app, a desktop entry) and opening it
/// there; starting a widget's container app. Owns the desktop-entry index
/// and the launches it made.
final class URLService: Sendable {
    let connection: Connection
    let identities: Identities
    let log: Logger
    /// The session's environment, which launched apps inherit.
    let environment: [String: String]
    let busAddress: String?
    /// The desktop entries and mimeapps.list files, read again when they change.
    let mimeIndex: MimeIndexCache
    /// The processes started to open URLs, to see a URL come back.
    let urlLaunches = URLLaunches()
    /// The installed bundles' apps, from the last scan.
    private let apps = Mutex<[AppManifest]>([])

    init(connection: Connection, identities: Identities, environment: [String: String], busAddress: String?, log: Logger) {
        self.connection = connection
        self.identities = identities
        self.environment = environment
        self.busAddress = busAddress
        self.log = log
        mimeIndex = MimeIndexCache(configuration: MimeApps(environment: environment))
    }

    /// The apps of a new scan of the bundle folders.
    func update(apps: [AppManifest]) {
        self.apps.withLock { $0 = apps }
    }

    /// Where `url` would go, launching nothing.
    public func resolve(_ url: String) async throws -> URLHandler {
        var router = URLRouter(scheme: try URLDispatch.scheme(of: url), apps: apps.withLock { $0 }, registrations: identities.registrations)
        while true {
            switch router.step {
            case .ask(let connection, let bundle):
                router.answer(exports: await exportsApplication(connection: connection, id: bundle))
            case .lookUpDesktopEntry(let scheme):
                // Only entries that `open` can start: resolving and opening always agree.
                let index = mimeIndex.current()
                let mime = index.configuration
                router.answer(
                    desktopEntry: index.defaultApplication("x-scheme-handler/" + scheme) { app in
                        !URLDispatch.isTodayd(app, mime: mime) && !BundleDesktopEntries.isOurs(app)
                            && URLDispatch.launchProblem(app, mime: mime) == nil
                    })
            case .open(let handler):
                return handler
            case .noHandler(let scheme):
                throw TodayError.noHandler(
                    "no app handles '\(scheme):' URLs: install a bundle that declares the scheme in CFBundleURLTypes, or a desktop entry for x-scheme-handler/\(scheme)")
            }
        }
    }

    /// Opens `url` in the app that handles it and returns that app's id.
    public func open(_ url: String, platformData: VariantDictionary, from call: MethodCall? = nil) async throws -> String {
        if let call, let pid = try? await identities.credentials(of: call.sender, on: connection).processID,
            urlLaunches.isLoop(url: url, token: URLLaunches.token(ofProcess: pid, procRoot: identities.procRoot))
        {
            log.warning("refused \(url.prefix(200)): it came back from the process todayd started to open it")
            throw TodayError.noHandler(
                "'\(url.prefix(200))' came back from the app todayd started to open it, whose handler hands it to todayd again: "
                    + "fix that app's desktop entry or URL handler")
        }
        let handler = try await resolve(url)
        switch handler {
        case .runningApp(let bundle, let connection):
            guard let name = BusName(rawValue: connection), let path = URLDispatch.applicationPath(bundle) else {
                throw TodayError.noHandler("the app '\(bundle)' has no usable bus name")
            }
            try await callApplication(name, path: path, Today.Application.open, [url], platformData)
        case .bundle(let app):
            guard let executable = app.executable else { throw TodayError.noHandler("'\(app.bundleIdentifier)' has no executable") }
            try URLDispatch.launch([executable, url], environment: launchEnvironment(opening: url), directory: environment["HOME"])
        case .desktopEntry(let app):
            let mime = mimeIndex.configuration
            if let problem = URLDispatch.launchProblem(app, mime: mime) { throw TodayError.noHandler(problem) }
            if app.entry.bool("DBusActivatable") {
                let id = URLDispatch.busName(of: app)
                guard let name = BusName(rawValue: id), let path = URLDispatch.applicationPath(id) else {
                    throw TodayError.noHandler("\(app.file): DBusActivatable, but '\(id)' is not a D-Bus name")
                }
                try await callApplication(name, path: path, Today.Application.open, [url], platformData)
            } else {
                var argv = try URLDispatch.command(app, opening: url, mime: mime)
                if let program = mime.findProgram(argv[0]) { argv[0] = program }
                try URLDispatch.launch(
                    argv, environment: launchEnvironment(opening: url), directory: app.entry.string("Path") ?? environment["HOME"])
            }
        }
        log.debug("opened \(url.prefix(200)) in \(handler.id)")
        return handler.id
    }

    /// Brings app `containerID` forward, as a tap on one of its widgets
    /// without a URL does: Activate on the running app where it exports
    /// org.freedesktop.Application, else its executable, started. Returns
    /// the app's id; `widget` names the widget in the error.
    func activateApp(_ containerID: BundleID, for widget: BundleID?, platformData: VariantDictionary) async throws -> String {
        if let (name, path) = await runningApp(containerID) {
            try await callApplication(name, path: path, Today.Application.activate, platformData)
            return containerID.rawValue
        }
        guard let app = apps.withLock({ $0 }).first(where: { $0.bundleIdentifier == containerID }), let executable = app.executable else {
            guard let widget else { throw TodayError.noHandler("the app '\(containerID)' is not running and has no executable to start") }
            throw TodayError.noHandler("'\(widget)' has no URL in its snapshot and its app '\(containerID)' has no executable to start")
        }
        try URLDispatch.launch([executable], environment: launchEnvironment, directory: environment["HOME"])
        return containerID.rawValue
    }

    /// The connection and object of app `id` where it runs, registered
    /// as that bundle, and serves org.freedesktop.Application.
    func runningApp(_ id: BundleID) async -> (BusName, ObjectPath)? {
        for (connection, bundle) in identities.registrations where bundle == id.rawValue {
            if await exportsApplication(connection: connection, id: bundle), let name = BusName(rawValue: connection),
                let path = URLDispatch.applicationPath(bundle)
            {
                return (name, path)
            }
        }
        return nil
    }

    /// `ActivateAction(action, [parameter], platform_data)` on app `id`
    /// (SPEC section 18): the running app; else the installed bundle's
    /// executable, started, called once it serves org.freedesktop.Application
    /// (within `wait`); else the bus name `id`, which D-Bus activation
    /// starts (a Flatpak app, a DBusActivatable one).
    func activateAction(_ id: String, _ action: String, parameter: Value, platformData: VariantDictionary, wait: Duration = .seconds(25)) async throws {
        let bundle = BundleID(rawValue: id)
        if let bundle, let (name, path) = await runningApp(bundle) {
            try await callApplication(name, path: path, Today.Application.activateAction, action, VariantArray([parameter]), platformData)
            return
        }
        if let bundle, let executable = apps.withLock({ $0 }).first(where: { $0.bundleIdentifier == bundle })?.executable {
            try URLDispatch.launch([executable], environment: launchEnvironment, directory: environment["HOME"])
            let deadline = ContinuousClock.now + wait
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                if let (name, path) = await runningApp(bundle) {
                    try await callApplication(name, path: path, Today.Application.activateAction, action, VariantArray([parameter]), platformData)
                    return
                }
            }
            throw TodayError.noHandler("'\(id)' was started but did not serve org.freedesktop.Application within \(wait)")
        }
        guard let name = BusName(rawValue: id), let path = URLDispatch.applicationPath(id) else {
            throw TodayError.noHandler("'\(id)' is neither running, nor an installed app bundle, nor a D-Bus name")
        }
        try await callApplication(name, path: path, Today.Application.activateAction, action, VariantArray([parameter]), platformData)
    }

    /// The display name of the installed app bundle `id`.
    func appName(_ id: String) -> String? {
        apps.withLock { $0.first { $0.bundleIdentifier.rawValue == id }?.displayName }
    }

    /// The folder of the installed app bundle `id`.
    func appFolder(_ id: String) -> String? {
        apps.withLock { $0.first { $0.bundleIdentifier.rawValue == id }?.path }
    }

    /// Whether `id` is an installed app bundle, or a running app that registered as one.
    func knowsApp(_ id: BundleID) -> Bool {
        apps.withLock { $0.contains { $0.bundleIdentifier == id } } || identities.registrations.contains { $0.1 == id.rawValue }
    }

    /// The environment of an app started to open `url`: marked, so that
    /// the URL coming back from it is seen (URLLaunches).
    func launchEnvironment(opening url: String) -> [String: String] {
        var result = launchEnvironment
        result[URLLaunches.variable] = urlLaunches.token(for: url)
        return result
    }

    /// The environment launched apps get: the session's, with the bus todayd serves.
    var launchEnvironment: [String: String] {
        var result = environment
        if let busAddress { result["DBUS_SESSION_BUS_ADDRESS"] = busAddress }
        return result
    }

    /// Whether the app's object on `connection` declares org.freedesktop.Application.
    func exportsApplication(connection: String, id: String) async -> Bool {
        guard let name = BusName(rawValue: connection), let path = URLDispatch.applicationPath(id) else { return false }
        guard
            let reply = try? await self.connection.call(
                name, path: path, interface: .introspectable, member: .introspect, timeout: .seconds(2))
        else { return false }
        guard let xml = try? reply.value(String.self, answering: "Introspect") else { return false }
        return Introspection.interfaces(in: xml).contains(Today.application.name)
    }

    func callApplication<each Input: DBusArgument>(
        _ name: BusName, path: ObjectPath, _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input
    ) async throws {
        let arguments = method.values(repeat each inputs)
        do {
            try await connection.call(name, path: path, interface: Today.application.name, member: method.method.name, arguments, timeout: .seconds(10))
        } catch let error as DBusError {
            throw TodayError.noHandler("\(name.rawValue) did not take it: \(error.message)")
        }
    }
}
