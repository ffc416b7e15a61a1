import Foundation
import Glibc

/// Runs a command to completion, off the cooperative thread pool, and
/// returns its exit status and output.
@discardableResult
public func run(_ arguments: [String], timeout: TimeInterval = 20) async throws -> (status: Int32, output: String, error: String) {
    try await offThePool { try runBlocking(arguments, timeout: timeout) }
}

/// Runs `body` on a thread of its own. Work that waits (a process, a
/// pipe) must not wait on one of Dispatch's shared threads either: on
/// Linux the cooperative pool runs its jobs on the same root queue as
/// `DispatchQueue.global()`, a few threads wide, and Dispatch adds
/// threads only as it notices the blocked ones. A run that starts a
/// hundred tests at once, each with a client process or two, otherwise
/// stalls every test for seconds at its start.
func onAThreadOfItsOwn(_ body: @escaping @Sendable () -> Void) {
    Thread { body() }.start()
}

/// Waits for `process` to end, off the cooperative pool: Foundation learns
/// of a child's end on a Dispatch queue, which does not run while the
/// pool's threads all wait in `waitUntilExit` (two tests that each kill a
/// todayd and wait for it, at once, on two processors).
public func exited(_ process: Process) async {
    _ = try? await offThePool { process.waitUntilExit() }
}

/// Runs `body` on a thread of its own rather than the cooperative pool's,
/// and returns what it returns: for work that holds its thread for
/// seconds (hundreds of files, a subprocess after another). The pool has
/// as many threads as processors, and a test that holds one stalls every
/// other test waiting for it. `body` must not record issues (`#expect`
/// belongs to the test's own task): it returns what the test then checks.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        onAThreadOfItsOwn { continuation.resume(with: Result { try body() }) }
    }
}

public func runBlocking(_ arguments: [String], timeout: TimeInterval = 20) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes while the process runs so a full pipe cannot stall it.
    let outData = Locked(Data())
    let errData = Locked(Data())
    let group = DispatchGroup()
    for (pipe, data) in [(out, outData), (err, errData)] {
        group.enter()
        onAThreadOfItsOwn {
            data.value = pipe.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
    }
    if group.wait(timeout: .now() + timeout) == .timedOut { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: outData.value, as: UTF8.self),
        String(decoding: errData.value, as: UTF8.self)
    )
}

/// A value shared between test tasks and callbacks.
public final class Locked<T: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private var stored: T
    private let lock = NSLock()
    public init(_ value: T) { stored = value }
    public var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    public func withLock(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
}

/// A fresh folder under the temporary directory.
public func temporaryDirectory(_ prefix: String = "test") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Writes a program (a script) that tests will run, executable. The file
/// is opened close-on-exec: Foundation's `Data.write` is not, and a process
/// that another test starts meanwhile would keep the file open for
/// writing, so that running it fails with ETXTBSY ("Text file busy") for
/// as long as that process lives.
public func writeExecutable(_ text: String, to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        offset += count
    }
    guard fchmod(fd, 0o755) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}

/// How many times a thread has slept so far (voluntary context switches),
/// from `task`'s status file (`/proc/thread-self`, `/proc/<pid>/task/<tid>`);
/// -1 when it cannot be read.
public func voluntarySwitches(task: String) -> Int {
    let status = (try? String(contentsOfFile: task + "/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
    return line.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? -1
}

/// Runs `body` on a new thread with a stack of `stackSize` bytes and waits
/// for its result: for showing that recursive code stays inside a stack.
public func onThread<T: Sendable>(stackSize: Int, _ body: @escaping @Sendable () -> T) throws -> T {
    let result = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        result.value = body()
        done.signal()
    }
    thread.stackSize = stackSize
    thread.start()
    done.wait()
    guard let value = result.value else { throw CocoaError(.featureUnsupported) }
    return value
}

/// A small deterministic generator (SplitMix64) so corpora are the same every run.
public struct SeededGenerator: RandomNumberGenerator {
    public var state: UInt64
    public init(state: UInt64) { self.state = state }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Polls `body` until it is true, for at most `seconds`; whether it became
/// true. For a condition a test waits for, in place of a fixed sleep.
public func eventually(_ seconds: Double = 3, _ body: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await body() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await body()
}

/// What `pipe` gives until `enough` says so, for at most `seconds`.
public func read(_ pipe: Pipe, until enough: (String) -> Bool, within seconds: Double = 15) async throws -> String {
    var text = ""
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    let handle = pipe.fileHandleForReading
    while !enough(text), ContinuousClock.now < deadline {
        var ready = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 0) > 0 else {
            try await Task.sleep(for: .milliseconds(20))
            continue
        }
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        text += String(decoding: chunk, as: UTF8.self)
    }
    return text
}

/// An X display of a test's own: Xvfb on the first free number, which it
/// names itself (`-displayfd`). Unlike `xvfb-run -a`, which picks a number
/// that looks free and then writes a cookie for it, two of these started at
/// once never meet on one display.
public final class OwnDisplay: Sendable {
    /// `:N`, for DISPLAY.
    public let name: String
    private let server: Process

    /// `screen` is Xvfb's: width x height x depth.
    public init(screen: String = "1024x768x24") async throws {
        let number = Pipe()
        server = Process()
        server.executableURL = URL(fileURLWithPath: "/bin/sh")
        server.arguments = ["-c", "exec /usr/bin/Xvfb -displayfd 3 -screen 0 \(screen) -nolisten tcp 3>&1 >/dev/null 2>&1"]
        server.standardOutput = number
        server.standardError = FileHandle.nullDevice
        try server.run()
        let said = try await read(number, until: { $0.hasSuffix("\n") }, within: 20).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !said.isEmpty else {
            if server.isRunning { kill(server.processIdentifier, SIGKILL) }
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "Xvfb named no display within 20 s"])
        }
        name = ":" + said
    }

    /// Kills the server and takes away what SIGKILL leaves of it (its
    /// lock file and socket), so that no later X server, xvfb-run's
    /// included, finds a display that looks taken or free but is neither.
    public func stop() {
        if server.isRunning {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let number = name.dropFirst()
        try? FileManager.default.removeItem(atPath: "/tmp/.X\(number)-lock")
        try? FileManager.default.removeItem(atPath: "/tmp/.X11-unix/X\(number)")
    }
}

/// Runs `command` (through env, as `run`) with DISPLAY on an X display of
/// its own, which ends with it.
public func runOnOwnDisplay(
    _ command: [String], screen: String = "1024x768x24", timeout: TimeInterval = 60
) async throws -> (status: Int32, output: String, error: String) {
    let display = try await OwnDisplay(screen: screen)
    defer { display.stop() }
    return try await run(["DISPLAY=\(display.name)"] + command, timeout: timeout)
}

/// A headless sway of a test's own: a layer-shell compositor with one
/// 800×600 output of one colour, run as nobody (sway refuses root), whose
/// socket the test's own programs use. `shot` is what is on the screen.
public final class HeadlessSway: Sendable {
    public static let background: (UInt8, UInt8, UInt8) = (0x20, 0x40, 0x60)
    /// One sway at a time: each renders with pixman and its tests read
    /// whole screens, which, several at once, starve the display tests
    /// that run beside them.
    private static let turn = Turn()
    private let released = Locked(false)
    public static var available: Bool {
        ["/usr/bin/sway", "/usr/bin/grim", "/usr/bin/setpriv"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The folder for XDG_RUNTIME_DIR; the socket is `wayland-1` in it.
    public let runtime: String
    private let folder: URL
    private let compositor: Process

    public init() async throws {
        await Self.turn.take()
        do {
            (folder, runtime, compositor) = try await Self.start()
        } catch {
            await Self.turn.give()
            throw error
        }
    }

    /// Starts sway in a folder of its own: the folder, the runtime folder
    /// and the compositor; nothing left running or on disk where it cannot.
    private static func start() async throws -> (URL, String, Process) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sway-\(UUID().uuidString)")
        let runtime = folder.appendingPathComponent("run").path
        let compositor = Process()
        do {
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            // nobody must reach its folders, and own the runtime folder.
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
            guard chown(runtime, 65534, 65534) == 0 else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: "cannot give \(runtime) to nobody"])
            }
            let config = folder.appendingPathComponent("config").path
            let (r, g, b) = background
            try String(format: "output HEADLESS-1 mode 800x600 bg #%02x%02x%02x solid_color\ndefault_border none\nxwayland disable\n", r, g, b)
                .write(toFile: config, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: config)
            compositor.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            compositor.arguments = [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "-i", "XDG_RUNTIME_DIR=\(runtime)", "WLR_BACKENDS=headless",
                "WLR_RENDERER=pixman", "WLR_LIBINPUT_NO_DEVICES=1", "/usr/bin/sway", "-c", config,
            ]
            compositor.standardOutput = FileHandle.nullDevice
            compositor.standardError = FileHandle.nullDevice
            try compositor.run()
            let socket = runtime + "/wayland-1"
            guard try await eventually(20, { FileManager.default.fileExists(atPath: socket) }) else {
                throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "sway made no \(socket) within 20 s"])
            }
            return (folder, runtime, compositor)
        } catch {
            if compositor.isRunning {
                kill(compositor.processIdentifier, SIGKILL)
                compositor.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
    }

    /// A second output, HEADLESS-2: 800×600 of the background's colour,
    /// right of the first, so that the whole screen grim shoots is
    /// 1600×600. As a monitor plugged in while the session runs.
    public func addOutput() async throws {
        let (r, g, b) = Self.background
        let colour = String(format: "#%02x%02x%02x", r, g, b)
        // Both placed: sway moves an output out of the way of another's.
        for command in [
            ["create_output"], ["output", "HEADLESS-2", "mode", "800x600", "position", "800", "0", "bg", colour, "solid_color"],
            ["output", "HEADLESS-1", "position", "0", "0"],
        ] {
            try await message(command)
        }
    }

    /// Sends sway `command` through swaymsg.
    public func message(_ command: [String]) async throws {
        let socket = try FileManager.default.contentsOfDirectory(atPath: runtime).first { $0.hasPrefix("sway-ipc.") }
        guard let socket else { throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "sway has no IPC socket in \(runtime)"]) }
        let done = try await run(["SWAYSOCK=\(runtime)/\(socket)", "swaymsg"] + command)
        guard done.status == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "swaymsg \(command.joined(separator: " ")): \(done.error) \(done.output)"])
        }
    }

    /// The environment a client of this sway runs with (and no X display).
    public var environment: [String] { ["-u", "DISPLAY", "XDG_RUNTIME_DIR=\(runtime)", "WAYLAND_DISPLAY=wayland-1"] }

    /// A film: a python3-gi window of one `color`, fullscreen, until the
    /// process is killed. Kill it with SIGKILL: a process started from a
    /// test's thread has that thread's signals blocked (dispatch blocks
    /// them in its threads, and Foundation's Process passes the mask on),
    /// SIGTERM too.
    public func fullscreenWindow(_ color: (UInt8, UInt8, UInt8)) throws -> Process {
        let film = Process()
        film.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        film.arguments = environment + [
            "GDK_BACKEND=wayland", "NO_AT_BRIDGE=1", "/usr/bin/python3", "-c",
            """
            import gi
            gi.require_version("Gtk", "3.0")
            from gi.repository import Gtk, Gdk
            css = Gtk.CssProvider()
            css.load_from_data(b"window { background: #\(String(format: "%02x%02x%02x", color.0, color.1, color.2)); }")
            Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), css, 800)
            window = Gtk.Window(title="film")
            window.connect("destroy", Gtk.main_quit)
            window.show_all()
            window.fullscreen()
            Gtk.main()
            """,
        ]
        film.standardOutput = FileHandle.nullDevice
        film.standardError = FileHandle.nullDevice
        try film.run()
        return film
    }

    /// A shot of the screen (grim): its width, height and RGB rows.
    public func shot() async throws -> (width: Int, height: Int, pixels: [UInt8]) {
        let file = folder.appendingPathComponent("shot-\(UUID().uuidString).ppm").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let shot = try await run(["env"] + environment + ["grim", "-t", "ppm", file])
        guard shot.status == 0, let bytes = FileManager.default.contents(atPath: file) else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "grim: \(shot.error)"])
        }
        // P6, width, height, 255, one byte of white space, then RGB rows.
        let header = bytes.prefix(32).split(whereSeparator: { $0 == 0x0a || $0 == 0x20 }).prefix(4).map { String(decoding: $0, as: UTF8.self) }
        guard header.count == 4, header[0] == "P6", let width = Int(header[1]), let height = Int(header[2]) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "grim wrote no PPM"])
        }
        let pixels = Array(bytes.suffix(width * height * 3))
        guard pixels.count == width * height * 3 else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "grim's PPM is cut short"])
        }
        return (width, height, pixels)
    }

    /// How much of the screen's rectangle `columns` × `rows` (clipped to
    /// the screen) is `color`, 0 to 1.
    public func share(of color: (UInt8, UInt8, UInt8), columns: Range<Int>, rows: Range<Int>) async throws -> Double {
        Self.share(of: color, in: try await shot(), columns: columns, rows: rows)
    }

    /// How much of the screen's columns from `x` to the right edge is not the background, 0 to 1.
    public func covered(fromX x: Int) async throws -> Double {
        let shot = try await shot()
        guard x < shot.width else { return 0 }
        return 1 - Self.share(of: Self.background, in: shot, columns: x..<shot.width, rows: 0..<shot.height)
    }

    private static func share(
        of color: (UInt8, UInt8, UInt8), in shot: (width: Int, height: Int, pixels: [UInt8]), columns: Range<Int>, rows: Range<Int>
    ) -> Double {
        let columns = columns.clamped(to: 0..<shot.width), rows = rows.clamped(to: 0..<shot.height)
        guard !columns.isEmpty, !rows.isEmpty else { return 0 }
        var matching = 0
        for row in rows {
            for column in columns {
                let at = (row * shot.width + column) * 3
                if (shot.pixels[at], shot.pixels[at + 1], shot.pixels[at + 2]) == color { matching += 1 }
            }
        }
        return Double(matching) / Double(rows.count * columns.count)
    }

    public func stop() {
        if compositor.isRunning { kill(compositor.processIdentifier, SIGKILL) }
        compositor.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
        var first = false
        released.withLock { released in
            first = !released
            released = true
        }
        if first { Task { await Self.turn.give() } }
    }
}

/// Turns taken one at a time, in the order asked for.
actor Turn {
    private var taken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func take() async {
        guard taken else {
            taken = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func give() {
        if waiting.isEmpty {
            taken = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
