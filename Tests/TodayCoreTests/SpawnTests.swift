import Foundation
import Glibc
import TestSupport
import Testing
@testable import TodayCore

/// How a provider process is started (`today_spawn_provider`).
@Suite struct SpawnTests {
    func run(_ script: String, directory: String? = nil) throws -> (SpawnedProcess.Ending, String) {
        var child = try SpawnedProcess(
            "/bin/sh", arguments: CStrings(["sh", "-c", script]), directory: directory, environment: CStrings(["A=1"]))
        let (ending, output) = child.communicate(input: Data(), limits: ProviderLimits(), log: { _ in }, beforeReap: {})
        return (ending, String(decoding: output, as: UTF8.self))
    }

    @Test func theChildStartsClean() throws {
        // todayd ignores SIGPIPE and blocks signals in its threads; none of
        // that reaches the child.
        signal(SIGPIPE, SIG_IGN)
        let (ending, output) = try run(
            #"grep -E '^Sig(Blk|Ign)' /proc/self/status; echo "pgid $(ps -o pgid= -p $$ | tr -d ' ') pid $$"; pwd; echo "env $A $(env | wc -l)""#,
            directory: "/tmp")
        #expect(ending == .exited(0))
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.contains("SigBlk:\t0000000000000000"), "\(output)")
        #expect(lines.contains("SigIgn:\t0000000000000000"), "\(output)")
        let ids = lines.first { $0.hasPrefix("pgid ") }?.split(separator: " ") ?? []
        #expect(ids.count == 4 && ids[1] == ids[3], "its own process group: \(output)")
        #expect(lines.contains("/tmp"))
        #expect(lines.contains("env 1 2"), "exactly the environment given (and sh's PWD): \(output)")
    }

    @Test func aProgramThatCannotRunIsAnError() throws {
        let text = FileManager.default.temporaryDirectory.appendingPathComponent("text-\(UUID().uuidString)").path
        try writeExecutable("not a program\n", to: text)
        defer { unlink(text) }
        #expect {
            _ = try SpawnedProcess(text, arguments: CStrings(["x"]), directory: nil, environment: CStrings([]))
        } throws: { error in
            (error as? SpawnedProcess.Failure)?.code == ENOEXEC
        }
        #expect {
            _ = try SpawnedProcess("/bin/sh", arguments: CStrings(["sh"]), directory: "/nonexistent-folder", environment: CStrings([]))
        } throws: { error in
            (error as? SpawnedProcess.Failure)?.code == ENOENT
        }
    }
}
