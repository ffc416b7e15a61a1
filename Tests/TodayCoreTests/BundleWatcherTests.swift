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

    @Test func otherFailuresSayWhatTheSystemSaid() {
        #expect(BundleWatcher.explain(Errno(ENFILE)).contains("fs.file-max"))
        #expect(BundleWatcher.explain(Errno(ENOMEM)) == "inotify: \(Errno(ENOMEM))")
    }
}
