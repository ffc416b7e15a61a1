import CSystem
import DBus
import FoundationEssentials
import Glibc
import Posix
import TodayProtocol

/// Where a URL goes (SPEC section 6), first match wins.
public enum URLHandler: Sendable, Equatable {
    /// A running app that registered, declares the scheme and exports
    /// org.freedesktop.Application: Open on its connection.
    case runningApp(bundle: String, connection: String)
    /// An installed bundle that declares the scheme: its executable with
    /// the URL as its one argument.
    case bundle(AppManifest)
    /// The desktop entry mime-apps picks for x-scheme-handler/<scheme>.
    case desktopEntry(MimeApps.Application)

    /// The id `OpenURL` and `ResolveURL` answer with: a bundle id, or a
    /// desktop id without `.desktop`.
    public var id: String {
        switch self {
        case .runningApp(let bundle, _): bundle
        case .bundle(let app): app.bundleIdentifier.rawValue
        case .desktopEntry(let app): app.id.hasSuffix(".desktop") ? String(app.id.dropLast(8)) : app.id
        }
    }
}

/// URL validation, resolution and launching.
public enum URLDispatch {
    public static let maximumLength = 8192

    /// The URL's scheme, lower-cased, or `InvalidURL`.
    public static func scheme(of url: String) throws -> String {
        guard url.utf8.count <= maximumLength else {
            throw TodayError.invalidURL("the URL is \(url.utf8.count) bytes, over the limit of \(maximumLength)")
        }
        guard !url.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f || (0x80..<0xa0).contains($0.value) }) else {
            throw TodayError.invalidURL("the URL contains control characters")
        }
        guard let colon = url.firstIndex(of: ":") else {
            throw TodayError.invalidURL("'\(url.prefix(200))' is not an absolute URL: it needs a scheme, as in myapp://path")
        }
        let scheme = String(url[..<colon])
        guard BundleCatalog.isValidScheme(scheme) else {
            throw TodayError.invalidURL("'\(scheme.prefix(100))' is not a URL scheme: a letter, then letters, digits, '+', '-' or '.'")
        }
        guard scheme.lowercased() != "file" else {
            throw TodayError.invalidURL("todayd does not open file: URLs; open files with xdg-open or gio open")
        }
        return scheme.lowercased()
    }

    public static func applicationPath(_ id: String) -> ObjectPath? { Today.applicationPath(id) }

    /// The bus name of a DBusActivatable entry: its file's name without
    /// `.desktop`, as the Desktop Entry spec says (an entry in a subfolder
    /// has a desktop id with the folder in it; its bus name does not).
    static func busName(of app: MimeApps.Application) -> String {
        let name = PathText.lastComponent(of: app.file)
        return name.hasSuffix(".desktop") ? String(name.dropLast(8)) : name
    }

    /// The command that opens `url` with a non-DBusActivatable entry.
    static func command(_ app: MimeApps.Application, opening url: String, mime: MimeApps) throws -> [String] {
        do {
            let argv = try app.entry.argv(opening: url, file: app.file, locale: mime.locale)
            guard !argv.isEmpty else { throw TodayError.noHandler("\(app.file): its Exec is empty") }
            return argv
        } catch let error as TodayError {
            throw error
        } catch {
            throw TodayError.noHandler("\(app.file): \(error)")
        }
    }

    /// Why `open` could not start `app` for a URL, or nil when it can: what
    /// launching would refuse, resolution passes over.
    static func launchProblem(_ app: MimeApps.Application, mime: MimeApps) -> String? {
        if app.entry.bool("DBusActivatable") {
            let id = busName(of: app)
            guard BusName(rawValue: id) != nil, applicationPath(id) != nil else {
                return "\(app.file): DBusActivatable, but '\(id)' is not a D-Bus name"
            }
            return nil
        }
        let argv: [String]
        do {
            argv = try command(app, opening: "x-probe:", mime: mime)
        } catch {
            return "\(error)"
        }
        guard mime.findProgram(argv[0]) != nil else { return "\(app.file): the program '\(argv[0])' is not installed" }
        return nil
    }

    /// True when `entry` would hand the URL back to todayd.
    static func isTodayd(_ app: MimeApps.Application, mime: MimeApps) -> Bool {
        if app.id == Today.busName.rawValue + ".desktop" { return true }
        guard let exec = app.entry.string("Exec"), let first = try? DesktopEntry.splitExec(exec).first,
            case .text(let program)? = first.first
        else { return false }
        let name = PathText.lastComponent(of: program)
        return name == "todayd" || name == "todayctl"
    }

    /// Starts `argv` detached (new session, adopted by init), without a
    /// shell; `argv[0]` is a path.
    public static func launch(_ argv: [String], environment: [String: String], directory: String? = nil) throws {
        guard let program = argv.first else { throw TodayError.noHandler("an empty command") }
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        let status = cArguments.withUnsafeBufferPointer { argv in
            cEnvironment.withUnsafeBufferPointer { envp in
                program.withCString { path in
                    SpawnedProcess.spawn(path: path, argv: argv.baseAddress, envp: envp.baseAddress, directory: directory) {
                        request in
                        // Standard output and error stay todayd's (the journal).
                        request.output = 1
                        request.error = 2
                        request.flags = Int32(TODAY_SPAWN_DETACHED)
                        return today_spawn(&request, nil)
                    }
                }
            }
        }
        guard status == 0 else {
            throw TodayError.noHandler("cannot start \(program): \(Errno(status))")
        }
    }
}
