import CSystem
import Dispatch
import FoundationEssentials
import Glibc
import Posix
import Synchronization

/// Looks at the resident size of every running provider ten times a
/// second, on one thread for all of them, and kills (with its process
/// group) a provider over its limit. With 50 providers running, that is
/// ten wakeups a second instead of 500: the threads that wait for
/// providers sleep until one ends or reaches its time limit.
final class MemoryWatch: Sendable {
    static let shared = MemoryWatch()

    /// How long between two looks.
    static let interval: Duration = .milliseconds(100)

    /// The nice value of the watch's thread.
    static let nice: Int32 = 10

    /// One provider under watch; its thread asks `exceeded` once the
    /// provider has ended.
    final class Watched: Sendable {
        let pid: pid_t
        let limit: UInt64
        fileprivate let killed = Atomic<Bool>(false)

        fileprivate init(pid: pid_t, limit: UInt64) {
            self.pid = pid
            self.limit = limit
        }

        /// Whether the watch killed the provider for its resident size.
        var exceeded: Bool { killed.load(ordering: .acquiring) }
    }

    private let watched = Mutex<[pid_t: Watched]>([:])
    private let work = DispatchSemaphore(value: 0)

    /// Whether the watch's thread runs.
    private let running = Atomic(false)

    private init() {}

    /// Starts the watch's thread unless it runs. Where the system refuses
    /// a thread, the next `watch` tries again (until then, providers run
    /// with their time limit but without a memory limit).
    private func startThread() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do {
            try Threads.detach { [self] in
                // A look at 50 providers reads a few hundred /proc files; at
                // nice 10 it gives way to the bus thread and dbus-daemon
                // instead of holding up calls on a busy processor.
                _ = today_set_thread_nice(Self.nice)
                today_set_thread_name("memory-watch")  // after the nice value: a thread of that name has it
                while true {
                    if watched.withLock({ $0.isEmpty }) {
                        work.wait()
                        continue
                    }
                    Threads.sleep(for: Self.interval)
                    look()
                }
            }
        } catch {
            running.store(false, ordering: .releasing)
        }
    }

    /// Watches `pid`, a process group leader, from now until `stop`.
    func watch(_ pid: pid_t, limit: UInt64) -> Watched {
        startThread()
        let entry = Watched(pid: pid, limit: limit)
        let first = watched.withLock { table in
            table[pid] = entry
            return table.count == 1
        }
        if first { work.signal() }
        return entry
    }

    /// Ends the watch of a provider that has ended. Called before the
    /// provider is reaped: its pid cannot be reused before, so the watch
    /// never signals a process that is not a provider.
    func stop(_ entry: Watched) {
        watched.withLock { table in
            if table[entry.pid] === entry { table[entry.pid] = nil }
        }
    }

    private func look() {
        for entry in watched.withLock({ Array($0.values) }) where Self.residentBytes(ofTree: entry.pid) > entry.limit {
            watched.withLock { table in
                guard table[entry.pid] === entry else { return }
                entry.killed.store(true, ordering: .releasing)
                try? Processes.signal(group: entry.pid, SIGKILL)
            }
        }
    }

    /// The resident size of a process and every process below it.
    static func residentBytes(ofTree root: pid_t) -> UInt64 {
        var total: UInt64 = 0
        var pending = [root]
        var visited = 0
        while let pid = pending.popLast(), visited < 4096 {
            visited += 1
            total += residentBytes(pid) ?? 0
            pending += children(of: pid)
        }
        return total
    }

    /// Every process below `root` (not `root` itself), at most 4096.
    static func descendants(of root: pid_t) -> [pid_t] {
        var found: [pid_t] = []
        var pending = children(of: root)
        while let pid = pending.popLast(), found.count < 4096 {
            found.append(pid)
            pending += children(of: pid)
        }
        return found
    }

    /// The children of a process, from /proc/<pid>/task/<tid>/children.
    static func children(of pid: pid_t) -> [pid_t] {
        var result: [pid_t] = []
        for task in (try? Files.entries("/proc/\(pid)/task")) ?? [] where task.first?.isNumber == true {
            guard let bytes = try? Files.head("/proc/\(pid)/task/\(task)/children", limit: 4096) else { continue }
            result += bytes.split(whereSeparator: { $0 == 0x20 || $0 == 0x0A }).compactMap { pid_t(String(decoding: $0, as: UTF8.self)) }
        }
        return result
    }

    /// The resident size of a process, from /proc/<pid>/statm.
    static func residentBytes(_ pid: pid_t) -> UInt64? {
        guard let bytes = try? Files.head("/proc/\(pid)/statm", limit: 128), !bytes.isEmpty else { return nil }
        let fields = bytes.split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = UInt64(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }
}
