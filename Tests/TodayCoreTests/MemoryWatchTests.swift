import Foundation
import Glibc
import TestSupport
import Testing
@testable import TodayCore

/// The one thread that looks at every running provider's resident size.
@Suite struct MemoryWatchTests {
    @Test func aProcessOverItsLimitIsKilledAtTheNextLook() throws {
        var limits = ProviderLimits()
        limits.memory = 4096
        limits.timeout = .seconds(20)
        var child = try SpawnedProcess("/bin/sh", arguments: CStrings(["sh", "-c", "sleep 30"]), directory: nil, environment: CStrings([]))
        let start = ContinuousClock.now
        let (ending, _) = child.communicate(input: Data(), limits: limits, log: { _ in }, beforeReap: {})
        #expect(ending == .killed(.memoryLimit))
        #expect(ContinuousClock.now - start < .seconds(5), "killed long after the first look")
    }

    @Test func aProcessUnderItsLimitRunsToItsEnd() throws {
        var child = try SpawnedProcess("/bin/sh", arguments: CStrings(["sh", "-c", "sleep 0.3; echo done"]), directory: nil, environment: CStrings([]))
        let (ending, output) = child.communicate(input: Data(), limits: ProviderLimits(), log: { _ in }, beforeReap: {})
        #expect(ending == .exited(0))
        #expect(output == Data("done\n".utf8))
    }

    @Test func aWatchThatEndedKillsNothing() throws {
        var child = try SpawnedProcess("/bin/sh", arguments: CStrings(["sh", "-c", "sleep 0.5"]), directory: nil, environment: CStrings([]))
        let watched = MemoryWatch.shared.watch(child.pid, limit: 1)
        MemoryWatch.shared.stop(watched)
        let (ending, _) = child.communicate(input: Data(), limits: ProviderLimits(), log: { _ in }, beforeReap: {})
        #expect(ending == .exited(0))
        #expect(!watched.exceeded)
    }

    @Test func theWatchGivesWayToTheBus() async throws {
        // Its looks read a few hundred /proc files with many providers
        // running; its thread runs at nice 10, the rest of todayd at 0.
        let watched = MemoryWatch.shared.watch(getpid(), limit: .max)
        MemoryWatch.shared.stop(watched)
        // The thread names itself and lowers its priority as it starts.
        func watchThread() throws -> String? {
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
            let stats = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/stat", encoding: .utf8) }
            return stats.first { $0.contains("(memory-watch)") }
        }
        var watch: String?
        _ = try await eventually(2) {
            watch = try watchThread()
            return watch != nil
        }
        // Field 19, nice, counted after the name in parentheses (field 2).
        let fields = watch.map { $0[($0.range(of: ")", options: .backwards)?.upperBound ?? $0.startIndex)...].split(separator: " ") }
        #expect(fields?.count ?? 0 > 17 && fields?[16] == "\(MemoryWatch.nice)", "\(watch ?? "no thread named memory-watch")")
    }
}

