import FoundationEssentials
import Synchronization

/// The `MimeIndex` of one configuration, read again only after a change in
/// one of the folders it was read from (a desktop file or mimeapps.list
/// added, written, renamed or removed). The folders are watched on the
/// daemon's BundleWatcher, whose inotify instance they share (instances
/// are few per user). Without a watcher to follow, every call reads the
/// folders afresh.
final class MimeIndexCache: Sendable {
    let configuration: MimeApps
    private let state = Mutex<(index: MimeIndex?, watcher: BundleWatcher?, watched: Set<String>)>((nil, nil, []))
    private let changed = Mutex(false)

    init(configuration: MimeApps) {
        self.configuration = configuration
    }

    /// Keeps the index until `watcher` reports a change in its folders.
    func follow(_ watcher: BundleWatcher) {
        state.withLock { $0.watcher = watcher }
    }

    /// The index, read again when something changed since the last read.
    func current() -> MimeIndex {
        state.withLock { state in
            guard let watcher = state.watcher else { return configuration.index() }
            // What was written before this call counts, however busy the
            // watcher's thread is.
            watcher.drain()
            let stale = changed.withLock { changed in
                defer { changed = false }
                return changed
            }
            if let index = state.index, !stale { return index }
            // Watch first, then read: a change while reading is seen next time.
            let known = Set(configuration.levelFolders + (state.index?.folders ?? []))
            if known != state.watched { watch(known, on: watcher) }
            var index = configuration.index()
            let found = known.union(index.folders)
            if found != known {
                // Folders the first read did not know of are watched now; read
                // again so that nothing written into them meanwhile is missed.
                watch(found, on: watcher)
                index = configuration.index()
            }
            state.watched = found
            state.index = index
            return index
        }
    }

    private func watch(_ folders: Set<String>, on watcher: BundleWatcher) {
        watcher.watchAlso(folders.sorted(), for: "mime-apps") { [weak self] in self?.changed.withLock { $0 = true } }
    }
}
