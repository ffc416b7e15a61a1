import DBus
import PropertyList

/// A widget provider on the bus (`TodayProviderBusName`): todayd calls
/// `io.github.todayd.Today1.Provider.PerformUpdate` on its name, and the bus
/// starts it through D-Bus activation when it is not running.
struct BusProvider {
    let connection: Connection
    let name: String
    let timeout: Duration

    func run(previous: PlistDictionary) async -> ProviderOutcome {
        guard let bus = BusName(rawValue: name) else { return .failed("no-provider") }
        let reply: Message
        do {
            reply = try await connection.call(
                bus, path: Today.providerPath, interface: Today.provider.name, member: MemberName("PerformUpdate"),
                [ValueMapping.dbus(previous)], timeout: timeout)
        } catch let error as DBusError {
            switch error.name {
            case .noReply, .timeout: return .failed("timeout")
            case .serviceUnknown, .nameHasNoOwner: return .failed("no-provider")
            default: return .failed("reported")
            }
        } catch {
            return .failed("reported")
        }
        guard reply.signature == "sa{sv}", let result = reply.body[0].string else {
            return .failed("bad-output: the provider answered '\(reply.signature)' where '(sa{sv})' is expected")
        }
        do {
            var answer = PlistDictionary()
            answer["result"] = .string(result)
            answer["snapshot"] = try ValueMapping.plist(reply.body[1])
            return ExecProvider.outcome(of: .dictionary(answer))
        } catch {
            return .failed("bad-output: \(error)")
        }
    }
}
