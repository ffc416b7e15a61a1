import CDBus
import Dispatch
import FoundationEssentials
import Glibc
import Posix
import Synchronization

/// What the bus itself offers a connection: names, credentials, match rules.
extension Connection {
    public struct RequestNameFlags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let allowReplacement = RequestNameFlags(rawValue: 1)
        public static let replaceExisting = RequestNameFlags(rawValue: 2)
        public static let doNotQueue = RequestNameFlags(rawValue: 4)
    }

    public enum RequestNameReply: UInt32, Sendable {
        case primaryOwner = 1, inQueue = 2, exists = 3, alreadyOwner = 4
    }

    /// Asks the bus for a well-known name.
    public func requestName(_ name: BusName, flags: RequestNameFlags) async throws -> RequestNameReply {
        let reply = try await callBus(MemberName("RequestName"), [.string(name.rawValue), .uint32(flags.rawValue)])
        guard let result = RequestNameReply(rawValue: try reply.value(UInt32.self, answering: "RequestName")) else {
            throw DBusError.failed("the bus gave an unexpected answer to RequestName")
        }
        return result
    }

    /// Who is on the other end of a connection, as the bus tells it.
    public struct Credentials: Sendable, Hashable {
        public var userID: UInt32?
        public var processID: UInt32?
    }

    /// The credentials of the connection that owns `name`.
    public func credentials(of name: String) async throws -> Credentials {
        let reply = try await callBus(MemberName("GetConnectionCredentials"), [.string(name)])
        let entries = try reply.value(VariantDictionary.self, answering: "GetConnectionCredentials").dictionary
        return Credentials(
            userID: entries["UnixUserID"].flatMap { if case .uint32(let v) = $0 { v } else { nil } },
            processID: entries["ProcessID"].flatMap { if case .uint32(let v) = $0 { v } else { nil } })
    }

    /// Delivers messages that match `rule` to `handler` (on the loop thread;
    /// keep it short). The rule is also added on the bus unless it only
    /// concerns messages sent to this connection anyway. A subscription
    /// lasts as long as the connection. Once this returns, every matching
    /// message the bus sends is delivered: the handler is in place (the
    /// loop takes jobs in order) before the rule reaches the bus, and the
    /// bus has confirmed the rule.
    public func subscribe(
        _ rule: MatchRule, addToBus: Bool = true, handler: @escaping @Sendable (Message) -> Void
    ) async throws {
        submit { [self] in subscriptions.append(Subscription(rule: rule, handler: handler)) }
        if addToBus { try await callBus(MemberName("AddMatch"), [.string(rule.text)]) }
    }

    /// `subscribe`, blocking the calling thread until the bus has the rule.
    public func subscribeBlocking(_ rule: MatchRule, handler: @escaping @Sendable (Message) -> Void) throws {
        submit { [self] in subscriptions.append(Subscription(rule: rule, handler: handler)) }
        try callBusBlocking(MemberName("AddMatch"), [.string(rule.text)])
    }

    /// Waits until `name` has an owner (now, or when one takes it) and
    /// returns the owner's unique name; throws, saying so, once `timeout`
    /// passes without one. Adds a subscription for the connection's life.
    public func waitForOwner(of name: BusName, timeout: Duration) async throws -> String {
        let (owners, continuation) = AsyncStream<String>.makeStream()
        try await subscribe(MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged, arg0: name.rawValue)) {
            if let (_, _, owner) = try? $0.values(String.self, String.self, String.self), !owner.isEmpty { continuation.yield(owner) }
        }
        // Asked after the subscription: an owner that comes in between is
        // heard either way.
        if let owner = try? await callBus(MemberName("GetNameOwner"), [.string(name.rawValue)]).value(String.self) {
            continuation.finish()
            return owner
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            continuation.finish()
        }
        defer { timer.cancel() }
        for await owner in owners { return owner }
        throw DBusError.failed("nobody took \(name.rawValue) within \(timeout)")
    }
}
