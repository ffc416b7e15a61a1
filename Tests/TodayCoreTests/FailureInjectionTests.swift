import Foundation
import Posix
import Testing
@testable import TodayCore

/// The failure paths of durable writes and provider pipes, reached through
/// the system layer's seam (`Faults`): a full disk, an interrupted call, a
/// pipe that has nothing to read yet.
@Suite struct FailureInjectionTests {
    static func folder() throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("faults-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url.path
    }

    /// What is left in `folder` besides `file`.
    static func others(in folder: String, than file: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0 != file }
    }

    @Test func aFullDiskLeavesTheOldFileAsItWas() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/record.plist"
        try DurableFile.write(Data("old".utf8), to: path)
        for (call, step) in [(SystemCall.write, "write"), (.fsync, "sync"), (.rename, "replace")] {
            do {
                try Faults.inject(call, .noSpace) { try DurableFile.write(Data("new".utf8), to: path) }
                Issue.record("a write that hit ENOSPC at \(step) should fail")
            } catch let failure as DurableFile.Failure {
                #expect(failure.description == "cannot \(step) \(path): No space left on device")
            }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "old", "after ENOSPC at \(step)")
            #expect(Self.others(in: folder, than: "record.plist").isEmpty, "no temporary file left after \(step)")
        }
    }

    /// A user's file kept in a dotfiles folder, behind symbolic links: the
    /// file they lead to is replaced and the links stay. Relative and
    /// chained links are followed, a dangling one gets its file, a loop is
    /// refused with what to look at, and a failure leaves the file as it was.
    @Test func aUsersFileBehindLinksIsWrittenThroughThem() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let files = FileManager.default
        try files.createDirectory(atPath: folder + "/config", withIntermediateDirectories: true)
        try files.createDirectory(atPath: folder + "/dotfiles", withIntermediateDirectories: true)
        let kept = folder + "/dotfiles/settings.plist"
        try DurableFile.write(Data("old".utf8), to: kept)
        #expect(symlink("../dotfiles/settings.plist", folder + "/config/middle.plist") == 0)
        #expect(symlink("middle.plist", folder + "/config/settings.plist") == 0)

        try DurableFile.write(Data("new".utf8), toUsersFile: folder + "/config/settings.plist")
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == "new")
        #expect(try files.destinationOfSymbolicLink(atPath: folder + "/config/settings.plist") == "middle.plist")
        #expect(try files.destinationOfSymbolicLink(atPath: folder + "/config/middle.plist") == "../dotfiles/settings.plist")
        #expect(Self.others(in: folder + "/dotfiles", than: "settings.plist").isEmpty)

        do {
            try Faults.inject(.rename, .noSpace) { try DurableFile.write(Data("newer".utf8), toUsersFile: folder + "/config/settings.plist") }
            Issue.record("a write that cannot be put in place should fail")
        } catch let failure as DurableFile.Failure {
            #expect(failure.description == "cannot replace \(kept): No space left on device")
        }
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == "new")
        #expect(try files.destinationOfSymbolicLink(atPath: folder + "/config/settings.plist") == "middle.plist")

        // A link made before its file: the file is made where it points.
        #expect(symlink(folder + "/dotfiles/layout.plist", folder + "/config/layout.plist") == 0)
        try DurableFile.write(Data("first".utf8), toUsersFile: folder + "/config/layout.plist")
        #expect(try String(contentsOfFile: folder + "/dotfiles/layout.plist", encoding: .utf8) == "first")

        #expect(symlink("b", folder + "/config/a") == 0)
        #expect(symlink("a", folder + "/config/b") == 0)
        do {
            try DurableFile.write(Data("x".utf8), toUsersFile: folder + "/config/a")
            Issue.record("a loop of links should be refused")
        } catch let failure as DurableFile.Failure {
            #expect(failure.description.hasPrefix("cannot follow the links of \(folder)/config/a: "), "\(failure)")
        }
        // A file that is no link is written in place, as before.
        try DurableFile.write(Data("plain".utf8), toUsersFile: folder + "/config/plain.plist")
        #expect(try String(contentsOfFile: folder + "/config/plain.plist", encoding: .utf8) == "plain")
    }

    @Test func interruptedCallsStillWriteEverything() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/nested/record.plist"
        let data = Data((0..<100_000).map { UInt8($0 % 251) })
        try Faults.inject([.mkdir: [.interrupted], .open: [.interrupted], .write: [.interrupted, .interrupted], .fsync: [.interrupted], .rename: [.interrupted]]) {
            try DurableFile.write(data, to: path)
        }
        #expect(FileManager.default.contents(atPath: path) == data)
        #expect(Self.others(in: folder + "/nested", than: "record.plist").isEmpty)
    }

    @Test func aFolderThatCannotBeMadeSaysWhich() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            try Faults.inject(.mkdir, .noSpace) { try DurableFile.write(Data("x".utf8), to: folder + "/new/file") }
            Issue.record("the write should fail")
        } catch let failure as DurableFile.Failure {
            #expect(failure.description == "cannot create the folder \(folder)/new: No space left on device")
        }
    }

    /// Runs `script` as a provider would be run, with `faults` planned on
    /// this thread, the one that reads its pipes.
    static func run(_ script: String, input: Data = Data(), faults: [SystemCall: [Errno]]) throws -> (SpawnedProcess.Ending, Data, [String]) {
        var child = try SpawnedProcess(
            "/bin/sh", arguments: CStrings(["sh", "-c", script]), directory: nil, environment: CStrings(["PATH=/usr/bin:/bin"]))
        var lines: [String] = []
        let (ending, output) = Faults.inject(faults) {
            child.communicate(input: input, limits: ProviderLimits(), quietPeriod: .zero, log: { lines.append($0) }, beforeReap: {})
        }
        return (ending, output, lines)
    }

    @Test func aPipeWithNothingYetIsReadWhenItHas() throws {
        // EAGAIN and EINTR on the first reads of output and error: the
        // provider's answer still arrives whole.
        let (ending, output, lines) = try Self.run(
            #"echo problem >&2; head -c 200000 /dev/zero | tr '\0' a"#,
            faults: [.read: [.wouldBlock, .interrupted, .wouldBlock, .wouldBlock, .interrupted]])
        #expect(ending == .exited(0))
        #expect(output.count == 200_000 && output.allSatisfy { $0 == 0x61 })
        #expect(lines == ["problem"])
    }

    @Test func inputThePipeCannotTakeYetIsWrittenLater() throws {
        // 300 KB of input, the first writes refused for now or interrupted.
        let (ending, output, _) = try Self.run(
            "wc -c", input: Data(repeating: 0x78, count: 300_000), faults: [.write: [.wouldBlock, .interrupted, .wouldBlock]])
        #expect(ending == .exited(0))
        #expect(String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "300000")
    }

    @Test func aProviderThatStopsReadingItsInputIsStillHeard() throws {
        // EPIPE on the input: the rest is dropped, the answer is read.
        let (ending, output, _) = try Self.run("echo answer", input: Data(repeating: 0x78, count: 300_000), faults: [.write: [Errno(EPIPE)]])
        #expect(ending == .exited(0))
        #expect(String(decoding: output, as: UTF8.self) == "answer\n")
    }

    @Test func aBrokenOutputPipeEndsTheReadNotTheWait() throws {
        // EIO on reading its output: todayd stops reading that pipe, and
        // still waits for the provider and reaps it.
        let (ending, output, _) = try Self.run("head -c 1000 /dev/zero; exit 3", faults: [.read: [Errno(EIO)]])
        #expect(ending == .exited(3))
        #expect(output.count <= 1000)
    }
}
