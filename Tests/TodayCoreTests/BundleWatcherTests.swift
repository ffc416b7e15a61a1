import Glibc
import Posix
import Testing

@testable import TodayCore

/// What todayd logs when it cannot watch its folders: the cause a user can
/// act on, not just errno's words.
@Suite struct BundleWatcherTests {
    @Test func tooManyInstancesNamesBothLimitsAndTheCurrentOne() throws {
        let text = BundleWatcher.explain(Errno(EMFILE))
        let limit = try #require(try String(contentsOfFile: "/proc/sys/fs/inotify/max_user_instances", encoding: .utf8)
            .split(whereSeparator: \.isWhitespace).first)
        #expect(text.contains("fs.inotify.max_user_instances is \(limit)"))
        #expect(text.contains("sysctl fs.inotify.max_user_instances=512"))
        #expect(text.contains("ulimit -n"))
    }

    @Test func aFolderPastTheWatchLimitNamesTheLimitAndAFolderGoneIsQuiet() throws {
        let text = try #require(BundleWatcher.explainUnwatched("/home/u/.local/share/todayd/bundles", Errno(ENOSPC)))
        let limit = try #require(try String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8)
            .split(whereSeparator: \.isWhitespace).first)
        #expect(text.hasPrefix("cannot watch /home/u/.local/share/todayd/bundles: "))
        #expect(text.contains("fs.inotify.max_user_watches is \(limit)"))
        // Removed or replaced by a file while being watched: the next rescan sees it.
        #expect(BundleWatcher.explainUnwatched("/gone", Errno(ENOENT)) == nil)
        #expect(BundleWatcher.explainUnwatched("/gone", Errno(ENOTDIR)) == nil)
        #expect(BundleWatcher.explainUnwatched("/x", Errno(EACCES)) == "cannot watch /x: \(Errno(EACCES)); changes there are not seen until todayd restarts")
    }

    @Test func otherFailuresSayWhatTheSystemSaid() {
        #expect(BundleWatcher.explain(Errno(ENFILE)).contains("fs.file-max"))
        #expect(BundleWatcher.explain(Errno(ENOMEM)) == "inotify: \(Errno(ENOMEM))")
    }
}
