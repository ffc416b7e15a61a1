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
    private(set) var stdin: Int32
    private(set) var stdout: Int32
    private(set) var stderr: Int32

    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var description: String { Errno(code).description }
    }

    /// Writing to a child that stopped reading must be an EPIPE error, not
    /// the end of todayd; children get the default disposition back.
    private static let ignoreBrokenPipes: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The thread that starts a child is its parent for the kernel, and
    /// waits for it through a pidfd and `waitpid`, not through SIGCHLD.
    /// With SIGCHLD unblocked in that thread (its disposition is the
    /// default, ignore), the kernel drops the signal at the child's exit;
    /// blocked, it would be queued for the process and wake a thread that
    /// accepts it, for nothing. The thread's mask comes back once the child
    /// is reaped. (`today_spawn` blocks every other signal while
    /// the child shares this thread's memory, but not SIGCHLD, so that a
    /// child that ends before it returns wakes nobody either.)
    private static func takeChildExitsQuietly() -> sigset_t {
        var childExits = sigset_t()
        sigemptyset(&childExits)
        sigaddset(&childExits, SIGCHLD)
        var previous = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &childExits, &previous)
        return previous
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
    private let savedSignals: sigset_t

    private static func restore(_ mask: sigset_t) {
        var mask = mask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }

    /// Starts `executable` with `arguments` (the first being its name, as
    /// it will see it in argv[0]) and exactly `environment`.
    init(_ executable: String, arguments: CStrings, directory: String?, environment: CStrings) throws {
        Self.ignoreBrokenPipes
        let savedSignals = Self.takeChildExitsQuietly()
        var started = false
        defer { if !started { Self.restore(savedSignals) } }
        var fds: [[Int32]] = []
        for _ in 0..<3 {
            var pair: [Int32] = [-1, -1]
            guard today_pipe_cloexec(&pair) == 0 else {
                let code = errno
                for opened in fds { opened.forEach { close($0) } }
                throw Failure(code: code)
            }
            fds.append(pair)
        }
        defer {
            // The child's ends; ours stay open.
            close(fds[0][0])
            close(fds[1][1])
            close(fds[2][1])
        }
        var pid: pid_t = 0
        let status = arguments.pointers.withUnsafeBufferPointer { argv in
            environment.pointers.withUnsafeBufferPointer { envp in
                executable.withCString { path in
                    Self.spawn(path: path, argv: argv.baseAddress, envp: envp.baseAddress, directory: directory) { request in
                        request.input = fds[0][0]
                        request.output = fds[1][1]
                        request.error = fds[2][1]
                        request.nice = Self.processNice
                        request.flags = Int32(TODAY_SPAWN_PROCESS_GROUP)
                        return today_spawn(&request, &pid)
                    }
                }
            }
        }
        guard status == 0 else {
            close(fds[0][1])
            close(fds[1][0])
            close(fds[2][0])
            throw Failure(code: status)
        }
        started = true
        self.savedSignals = savedSignals
        self.pid = pid
        stdin = fds[0][1]
        stdout = fds[1][0]
        stderr = fds[2][0]
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
        var output = Data()
        var errorText = Data()
        var errorDropped = 0
        var inputOffset = 0
        var reason: FailureReason?
        var killAt: ContinuousClock.Instant?
        var exited = false
        let memory = MemoryWatch.shared.watch(pid, limit: limits.memory)
        // Readable when the process ends; without it, look every 20 ms.
        let exitFD = today_pidfd_open(pid)
        defer { if exitFD >= 0 { close(exitFD) } }
        // Our ends of fresh pipes have no other status flag to keep.
        for fd in [stdin, stdout, stderr] { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        // Not zeroed: read() fills what is used of it.
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 65_536)
        defer { buffer.deallocate() }

        func feedInput() {
            guard stdin >= 0 else { return }
            let written =
                inputOffset < input.count
                ? input.withUnsafeBytes { raw in write(stdin, raw.baseAddress.map { $0 + inputOffset }, raw.count - inputOffset) }
                : 0
            if written > 0 { inputOffset += written }
            if inputOffset >= input.count || (written < 0 && errno != EAGAIN && errno != EINTR) { closeInput() }
        }
        // A snapshot that fits in the pipe is written at once.
        feedInput()
        let inputFitted = stdin < 0
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

        func stop(_ why: FailureReason, signal: Int32) {
            if reason == nil { reason = why }
            if confined && signal == SIGTERM {
                for inside in MemoryWatch.descendants(of: pid) { kill(inside, SIGTERM) }
            } else {
                kill(-pid, signal)
            }
            if signal == SIGTERM, killAt == nil { killAt = .now + limits.grace }
            if signal == SIGKILL { killAt = .now }
        }

        while !exited {
            var polls: [pollfd] = []
            // Nothing to do before the process ends, writes or reaches a
            // deadline: the time limit, or the grace after SIGTERM.
            var deadline = killAt ?? (start + limits.timeout)
            if exitFD >= 0, stdin < 0, reason == nil, ContinuousClock.now < quietUntil {
                deadline = min(deadline, quietUntil)
            } else {
                if stdin >= 0 { polls.append(pollfd(fd: stdin, events: Int16(POLLOUT), revents: 0)) }
                if stdout >= 0 { polls.append(pollfd(fd: stdout, events: Int16(POLLIN), revents: 0)) }
                if stderr >= 0 { polls.append(pollfd(fd: stderr, events: Int16(POLLIN), revents: 0)) }
            }
            if exitFD >= 0 { polls.append(pollfd(fd: exitFD, events: Int16(POLLIN), revents: 0)) }
            let wait = exitFD >= 0 ? deadline.pollTimeout : 20
            _ = poll(&polls, nfds_t(polls.count), wait)
            for entry in polls where entry.revents != 0 && entry.fd != exitFD {
                if entry.fd == stdin {
                    feedInput()
                } else {
                    let count = read(entry.fd, buffer.baseAddress, buffer.count)
                    if count > 0 {
                        if entry.fd == stdout {
                            output.append(UnsafeBufferPointer(rebasing: buffer[0..<count]))
                            if output.count > limits.output { stop(.tooLarge, signal: SIGKILL) }
                        } else {
                            let room = max(0, limits.errorLog - errorText.count)
                            errorText.append(UnsafeBufferPointer(rebasing: buffer[0..<min(count, room)]))
                            errorDropped += count - min(count, room)
                        }
                    } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                        close(entry.fd)
                        if entry.fd == stdout { stdout = -1 } else { stderr = -1 }
                    }
                }
            }
            let now = ContinuousClock.now
            if reason == nil, now - start >= limits.timeout { stop(.timeout, signal: SIGTERM) }
            if let due = killAt, now >= due {
                kill(-pid, SIGKILL)
                // Again later if the process outlives it (an uninterruptible
                // wait delays it).
                killAt = now + .milliseconds(100)
            }
            if reason == nil, memory.exceeded { stop(.memoryLimit, signal: SIGKILL) }
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, today_siginfo_pid(&info) == pid {
                exited = true
            }
        }
        // What the process wrote just before it ended.
        for fd in [stdout, stderr] where fd >= 0 {
            while true {
                let count = read(fd, buffer.baseAddress, buffer.count)
                guard count > 0 else { break }
                if fd == stdout {
                    if output.count <= limits.output { output.append(UnsafeBufferPointer(rebasing: buffer[0..<count])) }
                    if output.count > limits.output, reason == nil { reason = .tooLarge }
                } else {
                    let room = max(0, limits.errorLog - errorText.count)
                    errorText.append(UnsafeBufferPointer(rebasing: buffer[0..<min(count, room)]))
                    errorDropped += count - min(count, room)
                }
            }
        }
        closeInput()
        for fd in [stdout, stderr] where fd >= 0 { close(fd) }
        stdout = -1
        stderr = -1
        MemoryWatch.shared.stop(memory)
        if reason == nil, memory.exceeded { reason = .memoryLimit }
        // The ended provider, unreaped, still holds its pid and so its
        // group's id: what is left of the group is killed now, while the
        // id cannot name anything else. Once reaped, it could.
        kill(-pid, SIGKILL)
        beforeReap()
        var status: Int32 = 0
        _ = try? retryingInterrupts { waitpid(pid, &status, 0) }
        Self.restore(savedSignals)

        for line in String(decoding: errorText, as: UTF8.self).split(separator: "\n") { log(String(line)) }
        if errorDropped > 0 { log("(\(errorDropped) more bytes of standard error dropped)") }

        if let reason { return (.killed(reason), output) }
        let signalNumber = status & 0x7f
        if signalNumber == 0 { return (.exited((status >> 8) & 0xff), output) }
        return (.signaled(signalNumber), output)
    }

    /// How long a provider's output is left in its pipes while the thread
    /// waits for it to end (see `communicate`).
    static let quietPeriod: Duration = .milliseconds(20)

    private mutating func closeInput() {
        if stdin >= 0 {
            close(stdin)
            stdin = -1
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
