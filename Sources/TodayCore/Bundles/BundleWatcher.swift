import FoundationEssentials
import Glibc
import Posix
import Synchronization

/// Watches the bundle folders with inotify and calls `changed` once things
/// settle (debounced) after a bundle is installed, changed or removed. A
/// folder that does not exist yet is watched through its nearest existing
/// parent, so it is picked up when it appears; one that is deleted is
/// watched for again the same way.
public final class BundleWatcher: Sendable {
    private let folders: [String]
    private let settle: Duration
    private let changed: @Sendable () -> Void
    /// Told, once until it is watched again, of a folder that cannot be
    /// watched for a reason the user can act on (the watch limit).
    private let unwatched: @Sendable (String) -> Void
    private let reported = Mutex<Set<String>>([])
    /// The inotify instance, owned here: closed when the watcher goes,
    /// never under a `watchAlso` that comes after `stop()`.
    private let events: FileDescriptor
    private let watches = Mutex<[Int32: String]>([:])
    private let stopped = Mutex(false)
    /// Other folders watched on the same inotify instance (instances are
    /// few per user: 128 by default), each change reported at once to the
    /// clients that watch that folder (the mime-apps index, the
    /// notification settings), each under a name of its own.
    private let others = Mutex(Others())

    private struct Others {
        var watches: [Int32: String] = [:]
        var clients: [String: (folders: Set<String>, changed: @Sendable () -> Void)] = [:]

        /// The callbacks of the clients that watch one of `folders`.
        func callbacks(for folders: Set<String>) -> [@Sendable () -> Void] {
            clients.values.filter { !$0.folders.isDisjoint(with: folders) }.map(\.changed)
        }
    }
    /// Held while events are read and handed out, by the watcher's thread
    /// or by `drain()`: the buffer they are read into, and whether
    /// `drain()` read bundle events that the thread's debounced rescan has
    /// yet to take.
    private let reading = Mutex((buffer: [UInt8](repeating: 0, count: 64 * 1024), bundlesPending: false))

    /// Starts watching. Throws, with nothing watched, where inotify or the
    /// watcher's thread is unavailable; `explain` says why to a user.
    /// `unwatched` hears of each folder that cannot be watched, other than
    /// one removed meanwhile, with why and what to do.
    public init(
        folders: [String], settle: Duration = .milliseconds(200), unwatched: @escaping @Sendable (String) -> Void = { _ in },
        changed: @escaping @Sendable () -> Void
    ) throws(Errno) {
        self.events = try FileDescriptor.fileEvents()
        self.folders = folders
        self.settle = settle
        self.unwatched = unwatched
        self.changed = changed
        rearm()
        try Threads.detach { [self] in loop() }
    }

    /// Why a watcher could not start, and what to do, for the log.
    /// inotify_init1's EMFILE is either limit on a user's inotify
    /// instances (128 by default, shared with editors, file managers and
    /// sync clients) or on the process's open files.
    public static func explain(_ error: Errno) -> String {
        switch error.code {
        case EMFILE:
            let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_instances", encoding: .utf8))
                .flatMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
            return "no inotify instance is left: this user's are all in use (fs.inotify.max_user_instances is \(limit ?? "unknown"); "
                + "raise it, e.g. `sysctl fs.inotify.max_user_instances=512`) or todayd's open files are at their limit (`ulimit -n`); "
                + "restart todayd after"
        case ENFILE:
            return "the system's open files are at their limit (fs.file-max); close some programs and restart todayd"
        default:
            return "inotify: \(error)"
        }
    }

    /// Why `path` could not be watched, for the log; nil where it was
    /// removed or replaced by a file meanwhile, which the next rescan
    /// sees. ENOSPC from inotify_add_watch is the per-user limit on
    /// watches, shared with every other program that watches folders.
    static func explainUnwatched(_ path: String, _ error: Errno) -> String? {
        switch error.code {
        case ENOENT, ENOTDIR:
            return nil
        case ENOSPC:
            let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8))
                .flatMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
            return "cannot watch \(path): this user's inotify watches are all in use (fs.inotify.max_user_watches is \(limit ?? "unknown"); "
                + "raise it, e.g. `sysctl fs.inotify.max_user_watches=524288`); changes there are not seen until todayd restarts"
        default:
            return "cannot watch \(path): \(error); changes there are not seen until todayd restarts"
        }
    }

    /// Watches `path` on the instance: its watch's number, or nil where it
    /// cannot be watched (reported once until it is watched again).
    private func watch(_ path: String, mask: UInt32) -> Int32? {
        do {
            let descriptor = try events.addWatch(path, mask: mask)
            reported.withLock { _ = $0.remove(path) }
            return descriptor
        } catch {
            if let problem = Self.explainUnwatched(path, error), reported.withLock({ $0.insert(path).inserted }) { unwatched(problem) }
            return nil
        }
    }

    /// Watches `folders` too (or, for a missing one, its nearest existing
    /// parent) for the client `client`, in place of those it gave before,
    /// and calls `changed` on the watcher's thread as soon as something in
    /// one of them changes.
    public func watchAlso(_ folders: [String], for client: String, changed: @escaping @Sendable () -> Void) {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
        var wanted = Set<String>()
        for folder in folders {
            var existing = folder
            while !isDirectory(existing), existing != "/", !existing.isEmpty { existing = PathText.parent(of: existing) }
            wanted.insert(existing.isEmpty ? "/" : existing)
        }
        let bundleWatches = Set(watches.withLock { $0.keys })
        others.withLock { others in
            others.clients[client] = (wanted, changed)
            let all = others.clients.values.reduce(into: Set<String>()) { $0.formUnion($1.folders) }
            for (descriptor, path) in others.watches where !all.contains(path) && !bundleWatches.contains(descriptor) {
                events.removeWatch(descriptor)
            }
            others.watches = [:]
            for path in all {
                if let descriptor = watch(path, mask: mask) { others.watches[descriptor] = path }
            }
        }
    }

    public func stop() {
        stopped.withLock { $0 = true }
    }

    /// Hands out, on the calling thread, every event the kernel has queued
    /// so far: once this returns, a change made before the call has been
    /// reported to `watchAlso`'s callback (a desktop entry written just
    /// before an OpenURL is seen by it). Bundle events go on to the
    /// thread's debounced rescan.
    func drain() {
        reading.withLock { reading in
            let (bundles, other) = readEvents(into: &reading.buffer)
            for changed in others.withLock({ $0.callbacks(for: other) }) { changed() }
            if bundles { reading.bundlesPending = true }
        }
    }

    /// Reads every queued event: whether they touch the bundle folders, and
    /// which of the other folders they touch. Called with `reading` held,
    /// with its buffer.
    private func readEvents(into buffer: inout [UInt8]) -> (bundles: Bool, others: Set<String>) {
        var bundles = false
        var other = Set<String>()
        while true {
            let count = (try? buffer.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in try events.read(into: raw) }) ?? 0
            guard count > 0 else { break }
            let (inBundles, inOthers) = sort(events: buffer.prefix(count))
            bundles = bundles || inBundles
            other.formUnion(inOthers)
        }
        return (bundles, other)
    }

    /// Watches every folder that can hold a bundle or one of its files:
    /// each bundle folder, its `.app` bundles, their `PlugIns` and `.appex`
    /// folders; for a missing bundle folder, its nearest existing parent.
    private func rearm() {
        var wanted = Set<String>()
        for folder in folders {
            var existing = folder
            while !isDirectory(existing), existing != "/" {
                existing = PathText.parent(of: existing)
                if existing.isEmpty { existing = "/" }
            }
            wanted.insert(existing)
            guard existing == folder else { continue }
            for app in entries(folder) where app.hasSuffix(".app") {
                let appPath = folder + "/" + app
                guard isDirectory(appPath) else { continue }
                wanted.insert(appPath)
                let plugIns = appPath + "/PlugIns"
                guard isDirectory(plugIns) else { continue }
                wanted.insert(plugIns)
                for appex in entries(plugIns) where appex.hasSuffix(".appex") && isDirectory(plugIns + "/" + appex) {
                    wanted.insert(plugIns + "/" + appex)
                }
            }
        }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
        let otherWatches = others.withLock { Set($0.watches.keys) }
        watches.withLock { watches in
            let current = Set(watches.values)
            for (descriptor, path) in watches where !wanted.contains(path) {
                if !otherWatches.contains(descriptor) { events.removeWatch(descriptor) }
                watches[descriptor] = nil
            }
            for path in wanted.subtracting(current) {
                if let descriptor = watch(path, mask: mask) { watches[descriptor] = path }
            }
        }
    }

    private func loop() {
        var pendingSince: ContinuousClock.Instant?
        while !stopped.withLock({ $0 }) {
            let wait: Int32
            if let pendingSince {
                wait = (pendingSince + settle).pollTimeout
            } else {
                wait = 500
            }
            let ready = ((try? Poll.wait([Poll.Entry(events)], timeout: wait)) ?? [0])[0] != 0
            let bundles = reading.withLock { reading in
                defer { reading.bundlesPending = false }
                guard ready else { return reading.bundlesPending }
                let (bundles, other) = readEvents(into: &reading.buffer)
                for changed in others.withLock({ $0.callbacks(for: other) }) { changed() }
                return bundles || reading.bundlesPending
            }
            // Later events push the rescan back until things are quiet.
            if bundles {
                pendingSince = .now
                continue
            }
            if ready { continue }
            if let since = pendingSince, ContinuousClock.now - since >= settle {
                pendingSince = nil
                rearm()
                changed()
            }
        }
    }

    /// Whether the events read touch the bundle folders' watches, and which
    /// of the other folders they touch. An overflow (watch -1) counts for
    /// every folder.
    private func sort(events bytes: ArraySlice<UInt8>) -> (bundles: Bool, others: Set<String>) {
        let otherWatches = others.withLock { $0.watches }
        var bundles = false
        var other = Set<String>()
        var offset = bytes.startIndex
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= bytes.endIndex {
            var event = inotify_event()
            withUnsafeMutableBytes(of: &event) { $0.copyBytes(from: bytes[offset..<offset + header]) }
            if event.wd == -1 {
                other.formUnion(otherWatches.values)
            } else if let folder = otherWatches[event.wd] {
                other.insert(folder)
            }
            if event.wd == -1 || otherWatches[event.wd] == nil || watches.withLock({ $0[event.wd] != nil }) { bundles = true }
            offset += header + Int(event.len)
        }
        return (bundles, other)
    }

    private func isDirectory(_ path: String) -> Bool { FileSystem.isDirectory(path) }

    private func entries(_ folder: String) -> [String] { FileSystem.entries(folder) }
}
