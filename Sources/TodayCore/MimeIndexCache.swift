import FoundationEssentials
import Glibc
import Synchronization

/// The `MimeIndex` of one configuration, read again only after inotify
/// reports a change in one of the folders it was read from (a desktop
/// file or mimeapps.list added, written, renamed or removed). A folder
/// that does not exist yet is watched through its nearest existing parent.
/// Without inotify, every call reads the folders afresh.
final class MimeIndexCache: Sendable {
    let configuration: MimeApps
    private let state: Mutex<State>

    private struct State {
        var fd: Int32
        var index: MimeIndex?
        var watched: [String: Int32] = [:]
    }

    init(configuration: MimeApps) {
        self.configuration = configuration
        state = Mutex(State(fd: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))))
    }

    deinit {
        state.withLock { if $0.fd >= 0 { close($0.fd) } }
    }

    /// The index, read again when something changed since the last read.
    func current() -> MimeIndex {
        state.withLock { state in
            guard state.fd >= 0 else { return configuration.index() }
            if let index = state.index, !Self.drain(state.fd) { return index }
            // Watch first, then read: a change while reading is seen next time.
            for descriptor in state.watched.values { inotify_rm_watch(state.fd, descriptor) }
            state.watched = [:]
            watch(configuration.levelFolders + (state.index?.folders ?? []), state: &state)
            var index = configuration.index()
            if watch(index.folders, state: &state) {
                // Folders the first read did not know of are watched now; read again
                // so that nothing written into them meanwhile is missed.
                index = configuration.index()
            }
            _ = Self.drain(state.fd)
            state.index = index
            return index
        }
    }

    /// Adds watches for `folders` (or their nearest existing parents);
    /// true when one of them was not watched before.
    @discardableResult
    private func watch(_ folders: [String], state: inout State) -> Bool {
        var added = false
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
        for folder in folders {
            var existing = folder
            while !FileSystem.isDirectory(existing), existing != "/", !existing.isEmpty { existing = PathText.parent(of: existing) }
            if existing.isEmpty { existing = "/" }
            guard state.watched[existing] == nil else { continue }
            let descriptor = inotify_add_watch(state.fd, existing, mask)
            if descriptor >= 0 {
                state.watched[existing] = descriptor
                added = true
            }
        }
        return added
    }

    /// Reads every pending event; true when there was one.
    private static func drain(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var any = false
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                any = true
                continue
            }
            if count < 0 && errno == EINTR { continue }
            return any
        }
    }
}
