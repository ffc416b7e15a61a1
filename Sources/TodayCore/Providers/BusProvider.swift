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
    /// The instance served, where the kind is configurable: the `…In`
    /// methods are called with it (SPEC section 16).
    var context: VariantDictionary?

    func run(previous: PlistDictionary) async -> ProviderOutcome {
        await withCheckedContinuation { continuation in run(previous: previous) { continuation.resume(returning: $0) } }
    }

    /// `run` for callers that wait without a task: the call leaves from
    /// this thread, and `done` gets the outcome on the connection's loop
    /// thread, exactly once.
    func run(previous: PlistDictionary, done: @escaping @Sendable (ProviderOutcome) -> Void) {
        guard let previous = VariantDictionary(ValueMapping.dbus(previous)) else { return done(.failed(.noProvider)) }
        switch (timeline, context) {
        case (true, let context?): call(Today.Provider.getTimelineIn, context, previous, done: done)
        case (true, nil): call(Today.Provider.getTimeline, previous, done: done)
        case (false, let context?): call(Today.Provider.performUpdateIn, context, previous, done: done)
        case (false, nil): call(Today.Provider.performUpdate, previous, done: done)
        }
    }

    /// `PerformAction(action_id, arguments, previous_snapshot)` (SPEC
    /// section 10); `done` as `run`'s.
    func runAction(_ id: String, arguments: PlistDictionary, previous: PlistDictionary, done: @escaping @Sendable (ProviderOutcome) -> Void) {
        guard let arguments = VariantDictionary(ValueMapping.dbus(arguments)), let previous = VariantDictionary(ValueMapping.dbus(previous)) else {
            return done(.failed(.noProvider))
        }
        if let context { return call(Today.Provider.performActionIn, context, id, arguments, previous, done: done) }
        call(Today.Provider.performAction, id, arguments, previous, done: done)
    }

    /// The context of `instance` for the `…In` methods.
    static func context(_ instance: ProviderInstance, preview: Bool = false) -> VariantDictionary {
        VariantDictionary([
            ("instance", .string(instance.id.environmentValue)), ("configuration", ValueMapping.dbus(instance.configuration)),
            ("family", .string(instance.family.rawValue)), ("preview", .boolean(preview)),
        ])
    }

    /// Calls `method` of the Provider interface and reads its answer: `(s
    /// result, a{sv} snapshot)`, or for GetTimeline `(s result, aa{sv}
    /// entries, a{sv} policy)`.
    private func call<each Input: DBusArgument>(
        _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input, done: @escaping @Sendable (ProviderOutcome) -> Void
    ) {
        guard let bus = BusName(rawValue: name) else { return done(.failed(.noProvider)) }
        let isTimeline = [Today.Provider.getTimeline.method.name, Today.Provider.getTimelineIn.method.name].contains(method.method.name)
        connection.call(
            bus, path: Today.providerPath, interface: Today.provider.name, member: method.method.name, method.values(repeat each inputs),
            timeout: timeout
        ) { result in
            done(Self.outcome(of: result, isTimeline: isTimeline))
        }
    }

    /// What a provider's reply (or the call's failure) comes to.
    private static func outcome(of result: Result<Message, any Error>, isTimeline: Bool) -> ProviderOutcome {
        let reply: Message
        do {
            reply = try result.get()
        } catch let error as DBusError {
            switch error.name {
            case .noReply, .timeout: return .failed(.timeout)
            case .serviceUnknown, .nameHasNoOwner: return .failed(.noProvider)
            default: return .failed(.reported)
            }
        } catch {
            return .failed(.reported)
        }
        let expected = isTimeline ? "saa{sv}a{sv}" : "sa{sv}"
        guard reply.signature == expected, let result = reply.body[0].string else {
            return .failed(.badOutput("the provider answered '\(reply.signature)' where '(\(expected))' is expected"))
        }
        do {
            var answer = PlistDictionary()
            answer["result"] = .string(result)
            if isTimeline {
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
