import Foundation
import CSystem
import Glibc
import TestSupport
import Testing
@testable import TodayCore

/// How a provider process is started (`today_spawn`).
@Suite(.showsDaemonLogs) struct SpawnTests {
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

    @Test func leftoversOfTheGroupAreKilledBeforeTheProviderIsReaped() throws {
        // Once reaped, the provider's pid (its group's id) may be reused:
        // what is left of its group is signalled while the ended provider
        // still holds the id, so that `beforeReap` finds it ended.
        let pidFile = FileManager.default.temporaryDirectory.appendingPathComponent("leftover-\(UUID().uuidString)").path
        defer { unlink(pidFile) }
        var child = try SpawnedProcess(
            "/bin/sh", arguments: CStrings(["sh", "-c", "sleep 1000 & echo $! > \"$0\"", pidFile]), directory: nil,
            environment: CStrings(["PATH=/usr/bin:/bin"]))
        var leftover: Int32?
        var endedBeforeReap = false
        let (ending, _) = child.communicate(input: Data(), limits: ProviderLimits(), log: { _ in }) {
            leftover = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard let leftover else { return }
            // SIGKILL is sent by then: its pidfd is readable (the process
            // ended) within moments of it.
            let exit = today_pidfd_open(leftover)
            guard exit >= 0 else { return }
            defer { close(exit) }
            var entry = pollfd(fd: exit, events: Int16(POLLIN), revents: 0)
            endedBeforeReap = poll(&entry, 1, 2_000) == 1
        }
        #expect(ending == .exited(0))
        #expect(leftover != nil, "the script should write its background child's pid")
        #expect(endedBeforeReap, "the group's leftover \(leftover ?? 0) should be killed before the provider is reaped")
        if let leftover { kill(leftover, SIGKILL) }
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

    @Test func aQuickProviderWakesItsThreadOnlyAtItsEnd() throws {
        // Six writes 5 ms apart: within the quiet period they wait in the
        // pipe, and the thread sleeps until the process has ended (read as
        // they come, they wake it about once each: 6 or 7 sleeps). Room
        // for two more: a lock the memory watch holds at that moment.
        var child = try SpawnedProcess(
            "/bin/sh", arguments: CStrings(["sh", "-c", "for i in 1 2 3 4 5 6; do echo $i; sleep 0.005; done"]), directory: nil,
            environment: CStrings(["PATH=/usr/bin:/bin"]))
        let before = voluntarySwitches(task: "/proc/thread-self")
        let (ending, output) = child.communicate(
            input: Data("ignored".utf8), limits: ProviderLimits(), quietPeriod: .seconds(30), log: { _ in }, beforeReap: {})
        let woken = voluntarySwitches(task: "/proc/thread-self") - before
        #expect(ending == .exited(0))
        #expect(String(decoding: output, as: UTF8.self) == "1\n2\n3\n4\n5\n6\n")
        #expect(before >= 0 && woken <= 3, "the thread slept \(woken) times")
    }

    @Test func moreThanAPipeHoldsArrivesWhole() throws {
        // 300 KB in, 1 MiB out and 100 KB of standard error: more than a
        // pipe holds each way, so the provider blocks until the thread
        // reads (after the quiet period) and writes the rest of the input.
        let script = #"echo "in $(wc -c)" >&2; head -c 1048576 /dev/zero | tr '\0' a; head -c 100000 /dev/zero | tr '\0' b >&2"#
        var child = try SpawnedProcess(
            "/bin/sh", arguments: CStrings(["sh", "-c", script]), directory: nil, environment: CStrings(["PATH=/usr/bin:/bin"]))
        var lines: [String] = []
        let (ending, output) = child.communicate(
            input: Data(repeating: 0x78, count: 300_000), limits: ProviderLimits(), log: { lines.append($0) }, beforeReap: {})
        #expect(ending == .exited(0))
        #expect(output.count == 1_048_576 && output.allSatisfy { $0 == 0x61 })
        #expect(lines.first == "in 300000", "\(lines.prefix(1))")
        #expect(lines.last == "(\(100_000 + 10 - ProviderLimits().errorLog) more bytes of standard error dropped)", "\(lines.suffix(1))")
    }

    @Test func theChildHasTheProcesssPriorityNotTheThreads() throws {
        // As root, libdispatch runs its threads at nice -2 and -4, and a
        // thread's children inherit its value: a provider started from
        // such a thread gets todayd's own instead. Without privileges a
        // thread can only be lowered, and a child keeps the lower value.
        let process = SpawnedProcess.processNice
        let threadNice: Int32 = geteuid() == 0 ? process - 3 : process + 3
        let seen = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            guard today_set_thread_nice(threadNice) == 0 else { return }
            seen.withLock { $0 = try? self.run(#"cut -d ' ' -f 19 /proc/$$/stat"#).1 }
        }
        thread.start()
        done.wait()
        let expected = geteuid() == 0 ? process : threadNice
        #expect(seen.value == "\(expected)\n", "thread at \(threadNice), process at \(process)")
    }

    /// The signal lines of /proc/PID/status.
    static func signalLines(_ pid: pid_t) -> [String] {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").map(String.init).filter { $0.hasPrefix("SigBlk") || $0.hasPrefix("SigIgn") }
    }

    @Test func everythingTodaydStartsHasTheDefaultDispositions() async throws {
        // An ignored signal survives execve. todayd is started with glibc's
        // own two (32 and 33, which its sigaction() refuses to touch)
        // ignored; its private bus, an app it opens a URL in and a provider
        // start with every disposition at the default and nothing blocked.
        let out = try temporaryDirectory("signals")
        defer { try? FileManager.default.removeItem(at: out) }
        let launcher = out.appendingPathComponent("ignore-32-33.py")
        try """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            number = {"x86_64": 13, "aarch64": 134}[os.uname().machine]
            ignore = (ctypes.c_ulong * 4)(1, 0, 0, 0)
            for signal in (32, 33):
                if libc.syscall(number, signal, ignore, None, 8) != 0:
                    sys.exit("rt_sigaction: " + os.strerror(ctypes.get_errno()))
            os.execv(sys.argv[1], sys.argv[1:])
            """.write(to: launcher, atomically: true, encoding: .utf8)
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        // grep's own status: sh passes on what it was started with, but
        // blocks every signal for a moment while it forks.
        let record = "grep -E '^Sig(Blk|Ign)' /proc/self/status > \"\(out.path)/app.tmp\"; mv \"\(out.path)/app.tmp\" \"\(out.path)/app\""
        try URLTests.addApp(bundles, "org.example.Signals", name: "Signals", schemes: ["signals"], script: record)
        let daemon = try TodayDaemon(bundles: [bundles.path], launcher: ["/usr/bin/python3", launcher.path])
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let todayd = daemon.process.processIdentifier
        // The setup holds: todayd itself has 32 ignored (bit 31; glibc
        // installs its own handler for 33 as the process starts).
        let ignored = Self.signalLines(todayd).first { $0.hasPrefix("SigIgn") }.flatMap { UInt64($0.dropFirst(8), radix: 16) }
        #expect(ignored.map { $0 & 0x8000_0000 != 0 } == true, "\(Self.signalLines(todayd))")

        let children = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(todayd)/task")) ?? []
        let bus = children.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(todayd)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ")
        }.compactMap { pid_t($0) }.filter { pid in
            (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) == "dbus-daemon\n"
        }
        #expect(bus.count == 1, "todayd's children: \(children)")
        let clean = ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"]
        for pid in bus { #expect(Self.signalLines(pid) == clean, "the private bus") }

        #expect(try await client.center("OpenURL", [.string("signals://x"), .vardict([])]).body == [.string("org.example.Signals")])
        // Waited for as long as a loaded machine may take to start it.
        let recorded = out.appendingPathComponent("app")
        _ = try await eventually(30) { FileManager.default.fileExists(atPath: recorded.path) }
        let seen = try await URLTests.lines(recorded)
        #expect(seen == clean, "the app: \(seen) \(String(decoding: (try? Data(contentsOf: recorded)) ?? Data(), as: UTF8.self))")
    }
}
