import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// Log lines journald understands: a priority prefix when standard error
/// is the journal, plain text otherwise.
@Suite(.showsDaemonLogs) struct LoggingTests {
    @Test func priorities() {
        let journal = Logger(verbose: true, journal: true)
        #expect(journal.line("a provider failed", priority: 4) == "<4>a provider failed\n")
        #expect(journal.line("two\nlines", priority: 6) == "<6>two lines\n")
        #expect(Logger(verbose: true).line("plain", priority: 4) == "todayd: plain\n")
    }

    /// A test that fails shows what the daemons it started logged.
    @Test func aFailingTestShowsTheDaemonsLog() async throws {
        let daemon = try TodayDaemon(bundles: [])
        defer { daemon.stop() }
        _ = try await daemon.ready()
        // Known-issue matching sees an issue before the suite's trait adds
        // the logs, so the issue is taken here and annotated as the trait does.
        let recorded = Locked<Issue?>(nil)
        withKnownIssue {
            recorded.withLock { $0 = Issue.record("a failure on purpose") }
        }
        let issue = try #require(recorded.value)
        let annotated = try #require(DaemonLogs.current).annotate(issue)
        #expect(
            annotated.comments.contains { comment in
                comment.rawValue.hasPrefix("todayd's log (daemon 1, ") && comment.rawValue.contains("serving io.github.todayd.Today1")
            })
    }

    @Test func debugLinesOnlyWhenVerbose() async throws {
        // The real daemon, as systemd starts it, on a bus of its own with
        // one bundle: info lines always, debug lines (a widget added) only
        // with --verbose, each with its priority.
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Logs", name: "Logs", widgets: [.init(name: "W", script: "exit 0")])
        for verbose in [false, true] {
            let (folder, log, stream) = try Self.journalFile()
            defer { try? FileManager.default.removeItem(at: folder) }
            let daemon = try TodayDaemon(
                bundles: [bundles.path], environment: ["JOURNAL_STREAM": stream], verbose: verbose, standardError: log.path)
            let client = try await daemon.ready()
            client.close()
            daemon.stop()
            let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.hasPrefix("<6>serving io.github.todayd.Today1 with 1 widgets") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("<6>signal 15: exiting") }, "\(lines)")
            #expect(lines.contains("<7>widget added: org.example.Logs.W from \(bundles.path)/Logs.app/PlugIns/W.appex") == verbose, "\(lines)")
            #expect(lines.allSatisfy { $0.hasPrefix("<3>") || $0.hasPrefix("<4>") || $0.hasPrefix("<6>") || $0.hasPrefix("<7>") }, "\(lines)")
        }
    }

    /// A file to stand for the journal: its folder, the file, and the
    /// `device:inode` JOURNAL_STREAM names it by.
    static func journalFile() throws -> (URL, URL, String) {
        let folder = try temporaryDirectory("journal")
        let log = folder.appendingPathComponent("stderr")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        var info = stat()
        #expect(stat(log.path, &info) == 0)
        return (folder, log, "\(info.st_dev):\(info.st_ino)")
    }

    @Test func todaydWritesPrioritiesToTheJournal() async throws {
        let (folder, log, stream) = try Self.journalFile()
        defer { try? FileManager.default.removeItem(at: folder) }
        // As systemd starts a service: standard error is the stream JOURNAL_STREAM names.
        let todayd = Paths.todayd
        let script = "JOURNAL_STREAM=\(stream) exec \"$0\" --address unix:path=/nonexistent --verbose 2>>\"$1\""
        _ = try await run(["sh", "-c", script, todayd, log.path])
        let journal = try String(contentsOf: log, encoding: .utf8)
        #expect(journal.hasPrefix("<3>cannot connect to the bus at unix:path=/nonexistent"), "\(journal)")
        // Anywhere else, plain lines.
        let plain = try await run([todayd, "--address", "unix:path=/nonexistent"])
        #expect(plain.error.hasPrefix("todayd: cannot connect"), "\(plain.error)")
    }
}
