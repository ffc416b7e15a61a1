import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// Log lines journald understands: a priority prefix when standard error
/// is the journal, plain text otherwise.
@Suite struct LoggingTests {
    @Test func priorities() {
        let journal = Logger(verbose: true, journal: true)
        #expect(journal.line("a provider failed", priority: 4) == "<4>a provider failed\n")
        #expect(journal.line("two\nlines", priority: 6) == "<6>two lines\n")
        #expect(Logger(verbose: true).line("plain", priority: 4) == "todayd: plain\n")
    }

    @Test func todaydWritesPrioritiesToTheJournal() async throws {
        let folder = try temporaryDirectory("journal")
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("stderr")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        var info = stat()
        #expect(stat(log.path, &info) == 0)
        // As systemd starts a service: standard error is the stream JOURNAL_STREAM names.
        let todayd = Paths.todayd
        let script = "JOURNAL_STREAM=\(info.st_dev):\(info.st_ino) exec \"$0\" --address unix:path=/nonexistent --verbose 2>>\"$1\""
        _ = try await run(["sh", "-c", script, todayd, log.path])
        let journal = try String(contentsOf: log, encoding: .utf8)
        #expect(journal.hasPrefix("<4>cannot connect to the bus at unix:path=/nonexistent"), "\(journal)")
        // Anywhere else, plain lines.
        let plain = try await run([todayd, "--address", "unix:path=/nonexistent"])
        #expect(plain.error.hasPrefix("todayd: cannot connect"), "\(plain.error)")
    }
}
