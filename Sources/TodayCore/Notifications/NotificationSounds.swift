import FoundationEssentials
import Posix
import Synchronization
import TodayProtocol

/// The sound a notification asks for: the specification's `sound-file`
/// (a path or a `file://` URI) or `sound-name` (a name of the XDG Sound
/// Naming Specification, such as `message-new-instant`).
enum NotificationSound: Equatable, Sendable {
    case file(String)
    case name(String)
}

/// Sound names looked up as the XDG Sound Theme Specification says:
/// `sounds/THEME/` under XDG_DATA_HOME, then under each of XDG_DATA_DIRS;
/// the folders the theme's `index.theme` gives for the stereo output
/// profile (`stereo/` where it has none); the themes it inherits, then
/// `freedesktop`. A name found nowhere loses its last `-part` and is looked
/// up again (`message-new-instant`, `message-new`, `message`); a
/// `NAME.disabled` file turns that sound off.
struct SoundThemes: Sendable {
    /// The `sounds` folders, the user's first.
    let folders: [String]

    init(directories: Directories) {
        self.init(folders: ([directories.dataHome] + directories.dataDirs).map { Self.trimmed($0) + "/sounds" })
    }

    init(folders: [String]) { self.folders = folders }

    enum Found: Equatable, Sendable {
        case file(String)
        /// A `.disabled` file: the theme turns this sound off.
        case disabled
        case none
    }

    /// The file that plays `name` in `theme` (empty: `freedesktop`).
    func look(up name: String, theme: String) -> Found {
        // A name is words joined by dashes: nothing that leaves the folder.
        guard Self.isPlain(name) else { return .none }
        let themes = chain(from: theme.isEmpty ? Self.fallback : theme)
        let folders = themes.flatMap(soundFolders(of:))
        var candidate = Substring(name)
        while true {
            for folder in folders {
                for suffix in [".disabled", ".oga", ".ogg", ".wav"] {
                    let path = folder + "/" + candidate + suffix
                    if FileSystem.isRegularFile(path) { return suffix == ".disabled" ? .disabled : .file(path) }
                }
            }
            guard let dash = candidate.lastIndex(of: "-") else { return .none }
            candidate = candidate[..<dash]
        }
    }

    /// The theme every other falls back to.
    static let fallback = "freedesktop"

    /// `theme`, the themes it inherits (depth first, each once), and
    /// `freedesktop` last.
    func chain(from theme: String) -> [String] {
        var chain: [String] = []
        var waiting = [theme]
        while let next = waiting.popLast(), chain.count < 32 {
            guard Self.isPlain(next), !chain.contains(next) else { continue }
            chain.append(next)
            // Commas, as icon themes write it; semicolons read too.
            let inherits = index(of: next)?.string("Inherits", group: "Sound Theme") ?? ""
            let named = inherits.split { $0 == "," || $0 == ";" }.map { String($0.trimmingWhitespace()) }
            waiting.append(contentsOf: named.reversed())
        }
        if !chain.contains(Self.fallback) { chain.append(Self.fallback) }
        return chain
    }

    /// The theme's `index.theme`: the first of the folders that has one.
    private func index(of theme: String) -> DesktopEntry? {
        for folder in folders {
            guard let bytes = try? Files.head(folder + "/" + theme + "/index.theme", limit: 1 << 20) else { continue }
            return try? DesktopEntry(parsing: String(decoding: bytes, as: UTF8.self))
        }
        return nil
    }

    /// The folders of `theme` with sounds for two speakers, in order, in
    /// every sounds folder that has the theme.
    private func soundFolders(of theme: String) -> [String] {
        let index = index(of: theme)
        let named = index?.list("Directories", group: "Sound Theme") ?? []
        let stereo = named.filter { directory in
            Self.isPlain(directory) && (index?.string("OutputProfile", group: directory) ?? "stereo") == "stereo"
        }
        let directories = stereo.isEmpty ? ["stereo"] : stereo
        return folders.flatMap { folder in directories.map { folder + "/" + theme + "/" + $0 } }
            .filter(FileSystem.isDirectory)
    }

    private static func isPlain(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.utf8.contains(0)
    }

    private static func trimmed(_ folder: String) -> String { folder.hasSuffix("/") ? String(folder.dropLast()) : folder }
}

/// Plays the sounds notifications ask for (SPEC section 14's `sound-file`
/// and `sound-name`, where the app's policy allows sounds and Do Not
/// Disturb lets the notification through) with a player program: the
/// user's `SoundCommand` from notifications.plist, else the first of
/// pw-play (PipeWire), paplay (PulseAudio) and mpv found on PATH; started
/// without a shell, the file its last argument, in the session's
/// environment. One sound at a time, and a quarter of a second at least
/// between two: one asked for meanwhile is not played (a burst of
/// notifications sounds once, and a flood starts no more than four
/// players a second), and a player still running after `longest` is
/// stopped. Where the player cannot start or
/// fails, sounds are not tried again for a minute.
final class NotificationSounds: Sendable {
    private struct State {
        var playing = false
        /// When the last sound was started: a flood of notifications with
        /// sounds starts one at most every `gap`, found or not.
        var lastStart: ContinuousClock.Instant?
        /// Until when no sound is played, after a player failed.
        var heldUntil: ContinuousClock.Instant?
        /// The player's failure has been logged since it last worked.
        var failureLogged = false
    }

    private let state = Mutex(State())
    private let themes: SoundThemes
    private let session: SessionPrograms
    private let log: Logger

    /// The longest a sound plays.
    static let longest = Duration.seconds(10)
    /// The shortest time between two sounds' starts.
    static let gap = Duration.milliseconds(250)

    /// The players looked for on PATH, each with what goes before the file.
    /// mpv runs without the user's configuration and without scripts:
    /// mpv-mpris would announce each sound as a player (Now Playing).
    static let players: [[String]] = [
        ["pw-play"], ["paplay"], ["mpv", "--no-config", "--load-scripts=no", "--no-video", "--no-terminal", "--really-quiet", "--"],
    ]

    init(themes: SoundThemes, environment: [String: String], log: Logger) {
        self.themes = themes
        session = SessionPrograms(environment: environment)
        self.log = log
    }

    /// The player's command, before the file: `command` where it is given
    /// (its program found on PATH unless it is a path), else the first
    /// player installed; nil where there is none.
    func player(_ command: [String]) -> [String]? {
        command.isEmpty ? Self.players.lazy.compactMap(session.resolved).first : session.resolved(command)
    }

    /// The file that plays `sound` in `theme`, or why none does.
    func file(for sound: NotificationSound, theme: String) -> Result<String, Unplayable> {
        switch sound {
        case .file(let given):
            let path = NotificationImages.path(given)
            guard path.hasPrefix("/") else { return .failure(.notAFile("sound-file '\(given.prefix(200))' is not an absolute path or file:// URI")) }
            guard FileSystem.isRegularFile(path) else { return .failure(.notAFile("sound-file \(path.prefix(200)) is not a file that can be read")) }
            return .success(path)
        case .name(let name):
            switch themes.look(up: name, theme: theme) {
            case .file(let path): return .success(path)
            case .disabled: return .failure(.disabled)
            case .none:
                return .failure(.notAFile("no sound '\(name.prefix(100))' in the sound theme '\(theme.isEmpty ? SoundThemes.fallback : theme)' or those it inherits"))
            }
        }
    }

    enum Unplayable: Error, Equatable {
        case notAFile(String)
        /// The theme turns the sound off.
        case disabled
    }

    /// Plays `sound` in the background, unless one plays already or the
    /// player failed less than a minute ago. `command` and `theme` are the
    /// user's settings (empty for the defaults).
    func play(_ sound: NotificationSound, command: [String], theme: String) {
        let now = ContinuousClock.now
        let start = state.withLock { state -> Bool in
            guard !state.playing, state.heldUntil.map({ now >= $0 }) ?? true, state.lastStart.map({ now - $0 >= Self.gap }) ?? true else {
                return false
            }
            state.playing = true
            state.lastStart = now
            return true
        }
        guard start else { return }
        do {
            try Threads.detach { [self] in
                defer { state.withLock { $0.playing = false } }
                run(sound, command: command, theme: theme)
            }
        } catch {
            state.withLock { $0.playing = false }
            log.warning("cannot start a thread for a notification's sound: \(error)")
        }
    }

    private func run(_ sound: NotificationSound, command: [String], theme: String) {
        let file: String
        switch self.file(for: sound, theme: theme) {
        case .success(let found): file = found
        case .failure(.disabled): return
        case .failure(.notAFile(let why)):
            log.debug("notification sound: \(why)")
            return
        }
        guard let player = player(command) else {
            fail(
                command.isEmpty
                    ? "no sound player is installed (pw-play from pipewire-bin, paplay from pulseaudio-utils, or mpv); notification sounds are not played"
                    : "the SoundCommand of notifications.plist, '\(command[0])', is not a program on PATH; notification sounds are not played")
            return
        }
        let argv = player + [file]
        let ending: SpawnedProcess.Ending
        do {
            ending = try session.runBriefly(argv, limit: Self.longest) { [log] line in log.debug("sound player: \(line)") }
        } catch {
            fail("cannot start the sound player \(argv[0]): \(error); notification sounds are held back for a minute")
            return
        }
        switch ending {
        case .exited(0), .killed(.timeout):
            state.withLock { $0.failureLogged = false }
        default:
            fail("the sound player \(argv[0]) ended with \(ending) playing \(file); notification sounds are held back for a minute")
        }
    }

    /// Holds sounds back for a minute, saying why once until a sound plays again.
    private func fail(_ why: String) {
        let logged = state.withLock { state -> Bool in
            state.heldUntil = ContinuousClock.now + .seconds(60)
            defer { state.failureLogged = true }
            return state.failureLogged
        }
        if !logged { log.warning(why) }
    }
}
