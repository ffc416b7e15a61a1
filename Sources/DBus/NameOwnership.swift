import FoundationEssentials
import Synchronization

/// The well-known names a connection asks for, each with its own policy,
/// and whether it has each now: the bus hands a queued name over when its
/// owner leaves (NameAcquired) and takes a replaceable one away when
/// another connection asks to replace it (NameLost). A change of one name
/// touches no other.
public final class NameOwnership: Sendable {
    /// How a name is asked for.
    public enum Policy: Sendable, Equatable {
        /// Owned at once or not at all (no queue), and kept: another
        /// connection takes it only when this one allows it
        /// (`allowReplacement`), and then it is gone for good. With
        /// `replaceExisting` it is taken from an owner that allows that.
        case exclusive(replaceExisting: Bool = false, allowReplacement: Bool = true)
        /// Queued behind an owner and replaceable: served while the bus
        /// gives it, waited for again when another server takes it.
        case queued
    }

    /// Where a name stands.
    public enum Standing: Sendable, Equatable {
        case owned
        /// Waiting in the bus's queue behind another owner.
        case queued
        /// Not ours, and not waited for.
        case lost
    }

    private let connection: Connection
    private let state = Mutex<[BusName: (policy: Policy, standing: Standing)]>([:])
    private let changed: @Sendable (BusName, Standing) -> Void

    /// Follows the names of `connection`; `changed` hears every change of
    /// a name asked for here, on the connection's loop thread.
    public init(connection: Connection, changed: @escaping @Sendable (BusName, Standing) -> Void) async throws {
        self.connection = connection
        self.changed = changed
        // Sent to this connection only: no rule on the bus is needed.
        try await connection.subscribe(MatchRule(interface: .bus, member: MemberName("NameAcquired")), addToBus: false) { [weak self] message in
            guard let name = (try? message.value(String.self)).flatMap(BusName.init(rawValue:)) else { return }
            self?.move(name, to: .owned)
        }
        try await connection.subscribe(MatchRule(interface: .bus, member: MemberName("NameLost")), addToBus: false) { [weak self] message in
            guard let name = (try? message.value(String.self)).flatMap(BusName.init(rawValue:)) else { return }
            self?.lost(name)
        }
    }

    /// Asks the bus for `name`; returns where it stands.
    @discardableResult
    public func request(_ name: BusName, _ policy: Policy) async throws -> Standing {
        var flags: Connection.RequestNameFlags = []
        switch policy {
        case .exclusive(let replaceExisting, let allowReplacement):
            flags.insert(.doNotQueue)
            if replaceExisting { flags.insert(.replaceExisting) }
            if allowReplacement { flags.insert(.allowReplacement) }
        case .queued:
            flags.insert(.allowReplacement)
        }
        state.withLock { $0[name] = (policy, $0[name]?.standing ?? .lost) }
        let standing: Standing =
            switch try await connection.requestName(name, flags: flags) {
            case .primaryOwner, .alreadyOwner: .owned
            case .inQueue: .queued
            case .exists: .lost
            }
        move(name, to: standing)
        return standing
    }

    /// Gives `name` up, and its place in the queue.
    public func release(_ name: BusName) async throws {
        state.withLock { $0[name] = nil }
        try await connection.callBus(MemberName("ReleaseName"), [.string(name.rawValue)])
    }

    /// Where `name` stands; nil for a name never asked for here.
    public func standing(of name: BusName) -> Standing? {
        state.withLock { $0[name]?.standing }
    }

    /// The bus took `name` away: a queued name is waited for again (the
    /// bus put this connection back in its queue), an exclusive one is gone.
    private func lost(_ name: BusName) {
        guard let policy = state.withLock({ $0[name]?.policy }) else { return }
        move(name, to: policy == .queued ? .queued : .lost)
    }

    private func move(_ name: BusName, to standing: Standing) {
        let moved = state.withLock { names -> Bool in
            guard let entry = names[name], entry.standing != standing else { return false }
            names[name] = (entry.policy, standing)
            return true
        }
        if moved { changed(name, standing) }
    }
}
