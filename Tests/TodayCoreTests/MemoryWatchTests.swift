import Foundation
import Glibc
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
        #expect(ending == .killed("memory-limit"))
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
}
