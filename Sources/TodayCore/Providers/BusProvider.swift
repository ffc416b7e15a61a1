import DBus
import PropertyList
import TodayProtocol

/// A widget provider on the bus (`TodayProviderBusName`): todayd calls
/// `io.github.todayd.Today1.Provider.PerformUpdate` on its name, and the bus
/// starts it through D-Bus activation when it is not running.
struct BusProvider {
    let connection: Connection
    let name: String
    let timeout: Duration

    /// Whether to ask with `GetTimeline` (the widget sets TodayTimeline).
    var timeline = false

    func run(previous: PlistDictionary) async -> ProviderOutcome {
        if timeline { return await call("GetTimeline", [ValueMapping.dbus(previous)]) }
        return await call("PerformUpdate", [ValueMapping.dbus(previous)])
    }

    /// `PerformAction(action_id, arguments, previous_snapshot)` (SPEC section 10).
    func runAction(_ id: String, arguments: PlistDictionary, previous: PlistDictionary) async -> ProviderOutcome {
        await call("PerformAction", [.string(id), ValueMapping.dbus(arguments), ValueMapping.dbus(previous)])
    }

    /// Calls `member` of the Provider interface and reads its answer: `(s
    /// result, a{sv} snapshot)`, or for GetTimeline `(s result, aa{sv}
    /// entries, a{sv} policy)`.
    private func call(_ member: String, _ arguments: [Value]) async -> ProviderOutcome {
        guard let bus = BusName(rawValue: name) else { return .failed(.noProvider) }
        let reply: Message
        do {
            reply = try await connection.call(
                bus, path: Today.providerPath, interface: Today.provider.name, member: MemberName(rawValue: member) ?? MemberName("PerformUpdate"),
                arguments, timeout: timeout)
        } catch let error as DBusError {
            switch error.name {
            case .noReply, .timeout: return .failed(.timeout)
            case .serviceUnknown, .nameHasNoOwner: return .failed(.noProvider)
            default: return .failed(.reported)
            }
        } catch {
            return .failed(.reported)
        }
        let expected = member == "GetTimeline" ? "saa{sv}a{sv}" : "sa{sv}"
        guard reply.signature == expected, let result = reply.body[0].string else {
            return .failed(.badOutput("the provider answered '\(reply.signature)' where '(\(expected))' is expected"))
        }
        do {
            var answer = PlistDictionary()
            answer["result"] = .string(result)
            if member == "GetTimeline" {
                answer["timeline"] = try ValueMapping.plist(reply.body[1])
                let policy = try ValueMapping.plist(reply.body[2])
                switch policy["kind"]?.string {
                case "after"?: answer["policy"] = .dictionary(["after": policy["after"] ?? .string("")])
                case let kind?: answer["policy"] = .string(kind)
                case nil: break
                }
            } else {
                answer["snapshot"] = try ValueMapping.plist(reply.body[1])
            }
            return ExecProvider.outcome(of: .dictionary(answer))
        } catch {
            return .failed(.badOutput("\(error)"))
        }
    }
}
