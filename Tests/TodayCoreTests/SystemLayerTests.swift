import Foundation
import Testing

/// Every system call goes through Posix, where one seam can make it fail
/// (`Faults`): the rest of the code calls no libc file, process or signal
/// function itself.
@Suite struct SystemLayerTests {
    static let calls = """
        open read write close poll ppoll fcntl ioctl kill waitpid waitid timerfd_create timerfd_settime eventfd fsync fdatasync \
        rename renameat unlink unlinkat stat lstat fstat fstatat mkdir mkdirat rmdir dup dup2 dup3 pipe pipe2 clock_gettime \
        nanosleep usleep sleep sigaction signal chmod fchmod ftruncate openat sigwaitinfo pthread_sigmask inotify_init1 \
        inotify_add_watch inotify_rm_watch readlink realpath opendir readdir closedir lseek pread pwrite access symlink \
        sigemptyset sigaddset
        """.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }

    /// The direct calls in `file`: a listed name called as a function, not
    /// as a method, not a declaration, an enum case or a call of a Swift
    /// function of the same name (`try read(`), outside comments.
    static func directCalls(in file: String) throws -> [String] {
        let pattern = try NSRegularExpression(pattern: #"(?<![\w.])(?:Glibc\.)?("# + calls.joined(separator: "|") + #")\("#)
        var found: [String] = []
        for (number, line) in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = String(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            for match in pattern.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                guard let range = Range(match.range, in: code) else { continue }
                let before = code[..<range.lowerBound]
                if before.hasSuffix("func ") || before.hasSuffix("case ") || before.hasSuffix("try ") || before.hasSuffix("\"") { continue }
                // A Swift function of the module with the same name: `.variant(try read(&sub))`.
                if before.hasSuffix("(try ") || before.hasSuffix("(") && code[range.upperBound...].hasPrefix("&sub") { continue }
                found.append("\(file.replacingOccurrences(of: Paths.root.path + "/", with: "")):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        return found
    }

    @Test func noSystemCallOutsidePosix() throws {
        let sources = Paths.root.appendingPathComponent("Sources").path
        let enumerator = FileManager.default.enumerator(atPath: sources)
        var found: [String] = []
        while let relative = enumerator?.nextObject() as? String {
            guard relative.hasSuffix(".swift"), !relative.hasPrefix("Posix/") else { continue }
            found += try Self.directCalls(in: sources + "/" + relative)
        }
        // What is left are Swift functions and cases that share a name.
        let known = ["case open(URLHandler)", "case signal(Int32)", "open(url)", "symlink(top)", "read(value)", "try write("]
        let unexpected = found.filter { line in !known.contains { line.contains($0) } }
        #expect(unexpected.isEmpty, "call these through Posix (and its Faults seam):\n\(unexpected.joined(separator: "\n"))")
    }
}
