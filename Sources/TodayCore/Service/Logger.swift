import DBus
import FoundationEssentials
import Posix
import Glibc
import PropertyList
import Synchronization

/// Log lines to standard error, at four of syslog's priorities: errors
/// (todayd cannot go on), warnings (something was refused or failed),
/// info (what an administrator wants to see: starting, rescans, stopping)
/// and debug (every change, one line each; only with --verbose). When
/// standard error is the journal (JOURNAL_STREAM names it), each line
/// starts with its priority, which journald reads: `<3>`, `<4>`, `<6>`,
/// `<7>`; elsewhere lines are plain.
public struct Logger: Sendable {
    public var verbose: Bool
    public var journal: Bool

    public init(verbose: Bool, journal: Bool = false) {
        self.verbose = verbose
        self.journal = journal
    }

    public func error(_ message: String) { send(line(message, priority: 3)) }
    public func warning(_ message: String) { send(line(message, priority: 4)) }
    public func info(_ message: String) { send(line(message, priority: 6)) }
    public func debug(_ message: String) { if verbose { send(line(message, priority: 7)) } }

    /// The line as written: with its priority for the journal, else plain.
    public func line(_ message: String, priority: Int) -> String {
        let text = message.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " ")
        return journal ? "<\(priority)>\(text)\n" : "todayd: \(text)\n"
    }

    /// Whether standard error is the journal stream that JOURNAL_STREAM
    /// (`device:inode`) names, as systemd sets it for a service.
    public static func standardErrorIsJournal(_ environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        guard let info = try? FileDescriptor.standardError.status() else { return false }
        return stream == "\(info.st_dev):\(info.st_ino)"
    }

    private func send(_ text: String) { FileSystem.writeAll(2, text) }
}
