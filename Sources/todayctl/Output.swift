import FoundationEssentials
import Glibc
import PropertyList
import TodayCore

/// What `--json` prints: a property-list value as JSON, with data as
/// base64 strings and dates as ISO 8601 strings. Pretty by default, one
/// line each for `watch`.
enum JSONOutput {
    static func text(_ value: PlistValue, compact: Bool = false) -> String {
        Plist.displayJSON(value, compact: compact)
    }
}

/// Standard output and error, written at once (no buffering surprises
/// when piped).
enum Out {
    static func line(_ text: String) { FileSystem.writeAll(1, text + "\n") }

    static func bytes(_ data: Data) { FileSystem.writeAll(1, Array(data)) }

    static func error(_ text: String) { FileSystem.writeAll(2, text) }

    static func json(_ value: PlistValue, compact: Bool = false) {
        line(JSONOutput.text(value, compact: compact))
    }

    static var isTerminal: Bool { isatty(1) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb" }
}

/// A failure that ends the command with its exit status.
struct Failure: Error {
    var message: String
    var status: Int32

    static func usage(_ message: String) -> Failure { Failure(message: message, status: 2) }
    static func refused(_ message: String) -> Failure { Failure(message: message, status: 1) }
}
