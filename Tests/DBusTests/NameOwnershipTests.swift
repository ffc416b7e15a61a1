@testable import DBus
import Foundation
import Testing

/// Names with policies of their own (NameOwnership), on a real dbus-daemon:
/// each follows the bus's hand-overs, and a change of one leaves the others.
@Suite(.timeLimit(.minutes(1))) struct NameOwnershipTests {
    @Test func eachNameFollowsItsOwnPolicy() async throws {
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        let ours = try bus.connect()
        defer { ours.close() }
        let other = try bus.connect()
        defer { other.close() }
        let rival = try bus.connect()
        defer { rival.close() }
        let (changes, continuation) = AsyncStream<String>.makeStream()
        let names = try await NameOwnership(connection: ours) { name, standing in continuation.yield("\(name.rawValue) \(standing)") }
        var seen = changes.makeAsyncIterator()
        let own = BusName("org.example.Own")
        let shared = BusName("org.example.Shared")

        // Another server has the shared name first: ours waits in the queue.
        #expect(try await other.requestName(shared, flags: [.allowReplacement]) == .primaryOwner)
        #expect(try await names.request(own, .exclusive()) == .owned)
        #expect(await seen.next() == "org.example.Own owned")
        #expect(try await names.request(shared, .queued) == .queued)
        #expect(await seen.next() == "org.example.Shared queued")

        // The other server leaves the name: the bus hands it over.
        try await other.callBus(MemberName("ReleaseName"), [.string(shared.rawValue)])
        #expect(await seen.next() == "org.example.Shared owned")

        // A server that asks to replace it gets it, and ours queues again,
        // keeping its own name.
        #expect(try await rival.requestName(shared, flags: [.replaceExisting, .doNotQueue]) == .primaryOwner)
        #expect(await seen.next() == "org.example.Shared queued")
        #expect(names.standing(of: own) == .owned)

        // An exclusive name taken over is gone for good; the queued one stays queued.
        #expect(try await rival.requestName(own, flags: [.replaceExisting, .doNotQueue]) == .primaryOwner)
        #expect(await seen.next() == "org.example.Own lost")
        #expect(names.standing(of: shared) == .queued)

        // The rival leaves: the queued name comes back, the exclusive one does not.
        rival.close()
        #expect(await seen.next() == "org.example.Shared owned")
        #expect(names.standing(of: own) == .lost)
        #expect(names.standing(of: BusName("org.example.Never")) == nil)
    }

    @Test func anExclusiveNameThatIsTakenIsNotWaitedFor() async throws {
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        let ours = try bus.connect()
        defer { ours.close() }
        let other = try bus.connect()
        defer { other.close() }
        let names = try await NameOwnership(connection: ours) { _, _ in }
        let name = BusName("org.example.Taken")
        #expect(try await other.requestName(name, flags: [.doNotQueue]) == .primaryOwner)
        #expect(try await names.request(name, .exclusive(replaceExisting: true)) == .lost, "the owner does not allow replacement")
        #expect(try await other.requestName(name, flags: [.doNotQueue]) == .alreadyOwner)
    }
}
