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
    /// lasts as long as the connection.
    public func subscribe(
        _ rule: MatchRule, addToBus: Bool = true, handler: @escaping @Sendable (Message) -> Void
    ) async throws {
        if addToBus { try await callBus(MemberName("AddMatch"), [.string(rule.text)]) }
        submit { [self] in subscriptions.append(Subscription(rule: rule, handler: handler)) }
    }
}
