import CSystem
import FoundationEssentials
import Glibc
import Synchronization
import Posix
import TodayProtocol

/// A child process started with `today_spawn` (a vfork-style
/// clone, as posix_spawn does it, without posix_spawn's stack mapping per
/// run): no shell, its own process group, an empty signal mask and default
/// signal dispositions (todayd ignores SIGPIPE and blocks its signals and
/// must not pass that on), pipes for standard input, output and error, and
/// no other descriptor.
struct SpawnedProcess {
    let pid: pid_t
    /// The process is bwrap, and what it confines runs in a session of
    /// its own: SIGTERM goes to the processes inside (bwrap would end at
    /// once and take them with it, leaving them no grace); SIGKILL to bwrap
    /// ends all of it.
    var confined = false
    /// Our ends of its standard input, output and error; nil once closed.
    private(set) var stdin: FileDescriptor?
    private(set) var stdout: FileDescriptor?
    private(set) var stderr: FileDescriptor?

    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var description: String { Errno(code).description }
    }

    /// Writing to a child that stopped reading must be an EPIPE error, not
    /// the end of todayd; children get the default disposition back.
    private static let ignoreBrokenPipes: Void = { Signals.ignore(SIGPIPE) }()

    /// The thread that starts a child is its parent for the kernel, and
    /// waits for it through a pidfd and `waitpid`, not through SIGCHLD.
    /// With SIGCHLD unblocked in that thread (its disposition is the
    /// default, ignore), the kernel drops the signal at the child's exit;
    /// blocked, it would be queued for the process and wake a thread that
    /// accepts it, for nothing. The thread's mask comes back once the child
    /// is reaped. (`today_spawn` blocks every other signal while
    /// the child shares this thread's memory, but not SIGCHLD, so that a
    /// child that ends before it returns wakes nobody either.)
    private static func takeChildExitsQuietly() -> Signals.Set {
        Signals.unblock([SIGCHLD])
    }

    /// The nice value todayd was started with (its main thread's), which
    /// its children get whatever the nice value of the thread starting them.
    static let processNice: Int32 = today_process_nice()

    /// Calls `body` with a `today_spawn_request` for `path`, `argv` and
    /// `envp` in `directory` (nil to stay), its descriptors /dev/null until
    /// `body` sets them.
    static func spawn(
        path: UnsafePointer<CChar>, argv: UnsafePointer<UnsafeMutablePointer<CChar>?>?,
        envp: UnsafePointer<UnsafeMutablePointer<CChar>?>?, directory: String?,
        _ body: (inout today_spawn_request) -> Int32
    ) -> Int32 {
        func withRequest(_ folder: UnsafePointer<CChar>?) -> Int32 {
            var request = today_spawn_request(
                path: path, argv: argv, envp: envp, input: -1, output: -1, error: -1, directory: folder,
                nice: processNice, flags: 0)
            return body(&request)
        }
        guard let directory else { return withRequest(nil) }
        return directory.withCString { withRequest($0) }
    }

    /// The signal mask of the thread before `takeChildExitsQuietly`.
    private let savedSignals: Signals.Set

    /// Starts `executable` with `arguments` (the first being its name, as
    /// it will see it in argv[0]) and exactly `environment`.
    init(_ executable: String, arguments: CStrings, directory: String?, environment: CStrings) throws {
        Self.ignoreBrokenPipes
        let savedSignals = Self.takeChildExitsQuietly()
        var started = false
        defer { if !started { Signals.restore(savedSignals) } }
        // The child's ends close here once it is started; ours stay open.
        let input: (read: FileDescriptor, write: FileDescriptor)
        let output: (read: FileDescriptor, write: FileDescriptor)
        let error: (read: FileDescriptor, write: FileDescriptor)
        do {
            input = try FileDescriptor.pipe()
            output = try FileDescriptor.pipe()
            error = try FileDescriptor.pipe()
        } catch {
            throw Failure(code: error.code)
        }
        var pid: pid_t = 0
        let status = arguments.pointers.withUnsafeBufferPointer { argv in
            environment.pointers.withUnsafeBufferPointer { envp in
                executable.withCString { path in
                    Self.spawn(path: path, argv: argv.baseAddress, envp: envp.baseAddress, directory: directory) { request in
                        request.input = input.read.rawValue
                        request.output = output.write.rawValue
                        request.error = error.write.rawValue
                        request.nice = Self.processNice
                        request.flags = Int32(TODAY_SPAWN_PROCESS_GROUP)
                        return today_spawn(&request, &pid)
                    }
                }
            }
        }
        withExtendedLifetime((input.read, output.write, error.write)) {}
        guard status == 0 else { throw Failure(code: status) }
        started = true
        self.savedSignals = savedSignals
        self.pid = pid
        stdin = input.write
        stdout = output.read
        stderr = error.read
    }

    enum Ending: Equatable {
        case exited(Int32)
        case signaled(Int32)
        /// Stopped by us for the reason given.
        case killed(FailureReason)
    }

    /// Feeds `input`, collects standard output and error, and enforces
    /// `limits` until the process ends (the time limit here, the memory
    /// limit through `MemoryWatch`); then reaps it. Leftover processes of
    /// its group are killed once it has ended, before it is reaped;
    /// `beforeReap` runs after that, while its pid is still reserved.
    mutating func communicate(
        input: Data, limits: ProviderLimits, quietPeriod: Duration = quietPeriod, log: (String) -> Void,
        beforeReap: () -> Void
    ) -> (ending: Ending, output: Data) {
        let start = ContinuousClock.now
        var collected = Collected(outputLimit: limits.output, errorLimit: limits.errorLog)
        var inputOffset = 0
        var deadlines = RunDeadlines(start: start, timeout: limits.timeout, grace: limits.grace)
        var exited = false
        let pid = self.pid
        let memory = MemoryWatch.shared.watch(pid, limit: limits.memory)
        // Readable when the process ends; without it, look every 20 ms.
        let exit = Processes.exitDescriptor(pid)
        // Our ends of fresh pipes have no other status flag to keep; a
        // pipe that cannot be made non-blocking is read when poll says so.
        for end in [stdin, stdout, stderr] { try? end?.replaceStatusFlags(O_NONBLOCK) }
        // Not zeroed: read() fills what is used of it.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }

        func feedInput() {
            guard let stdin else { return }
            let written: Result<Int, Errno> =
                inputOffset < input.count
                ? input.withUnsafeBytes { raw in Result { () throws(Errno) in try stdin.write(UnsafeRawBufferPointer(rebasing: raw[inputOffset...])) } }
                : .success(0)
            switch written {
            case .success(let count):
                inputOffset += count
                if inputOffset >= input.count { closeInput() }
            case .failure(let error) where error == .wouldBlock:
                // The pipe is full: the rest when it has room.
                break
            case .failure:
                // EPIPE: the provider does not read its input.
                closeInput()
            }
        }
        // A snapshot that fits in the pipe is written at once.
        feedInput()
        let inputFitted = stdin == nil
        // Most providers write a little and end within milliseconds. For
        // the quiet period, once its input is written, the thread waits for
        // the process to end and nothing else: what it writes waits in the
        // pipes (64 KiB each), and the thread wakes once instead of at
        // every write and at each pipe's closing, while the provider runs
        // on the same processor. After that, output and error are read as
        // they come, so a provider that writes more than a pipe holds is
        // held up for the quiet period at most. A provider whose previous
        // snapshot did not fit in the pipe has none: it will likely answer
        // as much again, and would wait for the quiet period with its
        // output pipe full.
        let quietUntil = inputFitted ? start + quietPeriod : start

        func send(_ signal: RunDeadlines.Signal) {
            switch signal {
            case .terminate where confined:
                // Confined, the provider is bwrap: the SIGTERM goes to what
                // runs inside it.
                for inside in MemoryWatch.descendants(of: pid) { try? Processes.signal(inside, SIGTERM) }
            case .terminate:
                try? Processes.signal(group: pid, SIGTERM)
            case .kill:
                try? Processes.signal(group: pid, SIGKILL)
            }
        }
        func stop(_ why: FailureReason, signal: RunDeadlines.Signal) {
            send(deadlines.stop(why, signal: signal, at: .now))
        }

        /// Takes what `file` has to read now into output or error: `empty`
        /// where it has nothing yet, `ended` once it has ended or failed.
        func take(_ file: FileDescriptor, isOutput: Bool) -> PipeRead {
            let read = PipeRead.from(file, into: buffer)
            guard case .more(let count) = read else { return read }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            if isOutput {
                collected.takeOutput(bytes)
                if collected.tooLarge { stop(.tooLarge, signal: .kill) }
            } else {
                collected.takeError(bytes)
            }
            return read
        }

        // Reused at every turn: a run polls without allocating.
        var polls: [pollfd] = []
        polls.reserveCapacity(4)
        while !exited {
            polls.removeAll(keepingCapacity: true)
            // Nothing to do before the process ends, writes or reaches a
            // deadline: the time limit, or the grace after SIGTERM.
            var deadline = deadlines.next
            if exit != nil, stdin == nil, deadlines.reason == nil, ContinuousClock.now < quietUntil {
                deadline = min(deadline, quietUntil)
            } else {
                if let stdin { polls.append(pollfd(fd: stdin.rawValue, events: Int16(POLLOUT), revents: 0)) }
                if let stdout { polls.append(pollfd(fd: stdout.rawValue, events: Int16(POLLIN), revents: 0)) }
                if let stderr { polls.append(pollfd(fd: stderr.rawValue, events: Int16(POLLIN), revents: 0)) }
            }
            if let exit { polls.append(pollfd(fd: exit.rawValue, events: Int16(POLLIN), revents: 0)) }
            let wait = exit != nil ? deadline.pollTimeout : 20
            // The descriptors polled are this run's own, open until it ends.
            if (try? Poll.wait(&polls, timeout: wait)) == nil { for index in polls.indices { polls[index].revents = 0 } }
            for entry in polls where entry.revents != 0 && entry.fd != exit?.rawValue {
                if let input = stdin, entry.fd == input.rawValue {
                    feedInput()
                } else if let output = stdout, entry.fd == output.rawValue {
                    if take(output, isOutput: true) == .ended { stdout = nil }
                } else if let error = stderr, entry.fd == error.rawValue, take(error, isOutput: false) == .ended {
                    stderr = nil
                }
            }
            for signal in deadlines.due(at: .now) { send(signal) }
            if deadlines.reason == nil, memory.exceeded { stop(.memoryLimit, signal: .kill) }
            exited = Processes.hasEnded(pid)
        }
        // What the process wrote just before it ended (a leftover of its
        // group may hold a pipe open: what is there now, no more).
        if let stdout { while case .more = take(stdout, isOutput: true) {} }
        if let stderr { while case .more = take(stderr, isOutput: false) {} }
        closeInput()
        stdout = nil
        stderr = nil
        MemoryWatch.shared.stop(memory)
        if deadlines.reason == nil, memory.exceeded { _ = deadlines.stop(.memoryLimit, signal: .kill, at: .now) }
        // The ended provider, unreaped, still holds its pid and so its
        // group's id: what is left of the group is killed now, while the
        // id cannot name anything else. Once reaped, it could.
        try? Processes.signal(group: pid, SIGKILL)
        beforeReap()
        let status = (try? Processes.reap(pid)) ?? 0
        Signals.restore(savedSignals)

        for line in String(decoding: collected.errorText, as: UTF8.self).split(separator: "\n") { log(String(line)) }
        if collected.errorDropped > 0 { log("(\(collected.errorDropped) more bytes of standard error dropped)") }

        if let reason = deadlines.reason { return (.killed(reason), collected.output) }
        let signalNumber = status & 0x7f
        if signalNumber == 0 { return (.exited((status >> 8) & 0xff), collected.output) }
        return (.signaled(signalNumber), collected.output)
    }

    /// How long a provider's output is left in its pipes while the thread
    /// waits for it to end (see `communicate`).
    static let quietPeriod: Duration = .milliseconds(20)

    private mutating func closeInput() {
        stdin = nil
    }
}

/// A run's time limit and what stopping it takes, by the times it is
/// given (events in, signals out; the caller reads the clock, and a test
/// passes the times it wants): SIGTERM once the time limit is reached,
/// SIGKILL when the grace after it is over, and SIGKILL again every 100 ms
/// while the process outlives it (an uninterruptible wait delays it).
struct RunDeadlines {
    enum Signal: Equatable {
        case terminate
        case kill
    }

    let start: ContinuousClock.Instant
    let timeout: Duration
    let grace: Duration
    /// Why the run was stopped, the first reason given.
    private(set) var reason: FailureReason?
    /// When SIGKILL is next due.
    private(set) var killAt: ContinuousClock.Instant?

    init(start: ContinuousClock.Instant, timeout: Duration, grace: Duration) {
        self.start = start
        self.timeout = timeout
        self.grace = grace
    }

    /// The latest time to look again.
    var next: ContinuousClock.Instant { killAt ?? start + timeout }

    /// The run must stop, for `why`, with `signal`: it returns that signal,
    /// to send now. A SIGTERM starts the grace (once); a SIGKILL is due again
    /// at once, so the next look repeats it.
    mutating func stop(_ why: FailureReason, signal: Signal, at now: ContinuousClock.Instant) -> Signal {
        if reason == nil { reason = why }
        switch signal {
        case .terminate where killAt == nil: killAt = now + grace
        case .terminate: break
        case .kill: killAt = now
        }
        return signal
    }

    /// The signals due at `now`, in the order to send them.
    mutating func due(at now: ContinuousClock.Instant) -> [Signal] {
        var signals: [Signal] = []
        if reason == nil, now - start >= timeout { signals.append(stop(.timeout, signal: .terminate, at: now)) }
        if let due = killAt, now >= due {
            signals.append(.kill)
            killAt = now + .milliseconds(100)
        }
        return signals
    }
}

/// What one read of a provider's pipe came to.
enum PipeRead: Equatable {
    /// This many bytes, in the buffer.
    case more(Int)
    /// Nothing to read yet.
    case empty
    /// The pipe has ended (or failed): it is done with.
    case ended

    static func from(_ file: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) -> PipeRead {
        do throws(Errno) {
            let count = try file.read(into: buffer)
            return count > 0 ? .more(count) : .ended
        } catch {
            return error == .wouldBlock ? .empty : .ended
        }
    }
}

/// What a provider wrote, within its limits: output up to just past its
/// limit (which kills it), standard error up to its limit and counted
/// beyond.
struct Collected {
    var output = Data()
    var errorText = Data()
    var errorDropped = 0
    let outputLimit: Int
    let errorLimit: Int

    var tooLarge: Bool { output.count > outputLimit }

    mutating func takeOutput(_ bytes: UnsafeRawBufferPointer) {
        if !tooLarge { output.append(contentsOf: bytes) }
    }

    mutating func takeError(_ bytes: UnsafeRawBufferPointer) {
        let room = max(0, errorLimit - errorText.count)
        errorText.append(contentsOf: bytes.prefix(room))
        errorDropped += bytes.count - min(bytes.count, room)
    }
}

extension SpawnedProcess {
    /// Runs `argv` (its program a path) in exactly `environment`, with no
    /// input and its output dropped, for `limit` at most; its standard
    /// error goes to `log` line by line. How it ended.
    static func runBriefly(_ argv: [String], environment: [String], limit: Duration, log: (String) -> Void) throws -> Ending {
        var limits = ProviderLimits()
        limits.timeout = limit
        limits.grace = .milliseconds(200)
        limits.memory = 512 << 20
        limits.output = 64 << 10
        limits.errorLog = 4 << 10
        var child = try SpawnedProcess(argv[0], arguments: CStrings(argv), directory: "/", environment: CStrings(environment))
        return child.communicate(input: Data(), limits: limits, log: log, beforeReap: {}).ending
    }
}

/// The session todayd runs programs of the user's in (a sound player,
/// NotifyCommand): its environment, and PATH to find them on.
struct SessionPrograms: Sendable {
    let environment: [String: String]
    let path: [String]

    init(environment: [String: String]) {
        self.environment = environment
        path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    }

    /// `argv` with its program found (a path is taken as it is); nil where
    /// it names none that can be run.
    func resolved(_ argv: [String]) -> [String]? {
        guard let first = argv.first, let program = FileSystem.program(first, path: path) else { return nil }
        return [program] + argv.dropFirst()
    }

    /// Runs `argv` (resolved) with `variables` added to the session's
    /// environment, as `SpawnedProcess.runBriefly` does.
    func runBriefly(_ argv: [String], adding variables: [String: String] = [:], limit: Duration, log: (String) -> Void) throws -> SpawnedProcess.Ending {
        let environment = environment.merging(variables) { _, own in own }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try SpawnedProcess.runBriefly(argv, environment: environment, limit: limit, log: log)
    }
}

extension SpawnedProcess.Ending: CustomStringConvertible {
    var description: String {
        switch self {
        case .exited(let status): "exit status \(status)"
        case .signaled(let signal): "signal \(signal)"
        case .killed(let reason): "stopped (\(reason))"
        }
    }
}

/// NUL-terminated copies of strings, in a nil-terminated array, as
/// execve takes its argument list and environment.
final class CStrings: @unchecked Sendable {
    // @unchecked: the copies are made in init, only read after, and freed
    // in deinit by the list that made them.
    let pointers: [UnsafeMutablePointer<CChar>?]
    /// The lists whose copies `pointers` holds, kept as long as this one;
    /// empty where this list made its own.
    private let parts: [CStrings]

    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
        parts = []
    }

    /// The strings of `parts`, one after the other, without copying them:
    /// how a launch joins what every provider shares with its own part.
    init(joining parts: [CStrings]) {
        pointers = parts.flatMap { $0.pointers.dropLast() } + [nil]
        self.parts = parts
    }

    deinit { if parts.isEmpty { pointers.forEach { free($0) } } }
}

/// Lists of C strings that many providers' launches have in common, made
/// once: the session's environment, less the variables a provider gets its
/// own value of, and a sandbox's system folders. A thousand widgets would
/// otherwise hold a thousand copies. Few distinct lists ever come (one per
/// set of replaced names, one per kind of sandbox), so they are kept for
/// the life of the process.
final class SharedCStrings: Sendable {
    static let shared = SharedCStrings()
    private let lists = Mutex<[[String]: CStrings]>([:])

    func strings(_ list: [String]) -> CStrings {
        lists.withLock { lists in
            if let known = lists[list] { return known }
            let made = CStrings(list)
            lists[list] = made
            return made
        }
    }
}
