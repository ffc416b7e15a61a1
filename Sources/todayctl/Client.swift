import DBus
import FoundationEssentials
import PropertyList
import TodayCore
import TodayProtocol

/// todayd as todayctl sees it: calls on a connection of its own.
struct Client {
    let connection: Connection
    /// The bus's address, for the programs todayctl starts (the view).
    let address: String

    init(address: String?) throws {
        guard let address, !address.isEmpty else {
            throw Failure.usage("no bus: set DBUS_SESSION_BUS_ADDRESS or pass --address ADDR")
        }
        self.address = address
        do {
            connection = try Connection(address: address)
        } catch {
            throw Failure.refused("cannot connect to the bus at \(address): \(error)")
        }
    }

    /// Runs a call, turning D-Bus errors into messages a person can act on.
    static func attempt<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DBusError {
            if error.name == .serviceUnknown || error.name == .nameHasNoOwner {
                throw Failure.refused("todayd is not running on this bus: start it with `todayd` (or pass --address)")
            }
            throw Failure.refused(error.message)
        }
    }

    /// Calls a method of the manager object's Center interface.
    @discardableResult
    func center<each Input: DBusArgument>(
        _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input, timeout: Duration = .seconds(120)
    ) async throws -> Message {
        let values = method.values(repeat each inputs)
        return try await Self.attempt {
            try await connection.call(
                Today.busName, path: Today.managerPath, interface: Today.center.name, member: method.method.name, values, timeout: timeout)
        }
    }

    /// Calls a method of a widget's object, or of a placed instance's.
    @discardableResult
    func widget<each Input: DBusArgument>(
        _ id: WidgetInstanceID, _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input, timeout: Duration = .seconds(120)
    ) async throws -> Message {
        let values = method.values(repeat each inputs)
        do {
            return try await Self.attempt {
                try await connection.call(Today.busName, path: id.path, interface: Today.widget.name, member: method.method.name, values, timeout: timeout)
            }
        } catch let failure as Failure where failure.message.contains("no object") {
            throw Failure.refused("no widget '\(id)' is installed; `todayctl list` shows those that are")
        }
    }

    /// A widget id (`id`) or a placed instance's (`id/n`) from the command line.
    static func instanceID(_ text: String) throws -> WidgetInstanceID {
        guard let id = WidgetInstanceID(text) else { throw Failure.usage("'\(text)' is not a widget id; `todayctl list` shows them") }
        return id
    }

    /// A widget id from the command line.
    static func widgetID(_ text: String) throws -> BundleID {
        guard let id = BundleID(rawValue: text) else { throw Failure.usage("'\(text)' is not a widget id; `todayctl list` shows them") }
        return id
    }

    func register(as bundle: String) async throws {
        guard let id = BundleID(rawValue: bundle) else { throw Failure.usage(BundleID.problem(bundle)) }
        try await center(Today.Center.registerApp, id)
    }

    /// Widget ids in the panel's order.
    /// A property of todayd's Center interface, unwrapped.
    func centerProperty(_ name: String) async throws -> Value? {
        try await Self.attempt {
            try await connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: .get, [.string(Today.center.name.rawValue), .string(name)])
        }.body.first?.unwrapped
    }

    func widgetIDs() async throws -> [String] {
        let paths = try await center(Today.Center.listWidgets).value(ObjectPathList.self, answering: "ListWidgets").paths
        var ids: [String] = []
        for path in paths {
            let id = try await properties(path)[Today.Widget.bundleIdentifier.name]?.string
            ids.append(id ?? path.rawValue)
        }
        return ids
    }

    func properties(_ path: ObjectPath) async throws -> [String: Value] {
        try await Self.attempt {
            let reply = try await connection.call(
                Today.busName, path: path, interface: .properties, member: .getAll, [.string(Today.widget.name.rawValue)])
            return try reply.value(VariantDictionary.self, answering: "GetAll").dictionary
        }
    }

    /// The card of a widget (`id`) or a placed instance (`id/n`).
    func card(_ text: String) async throws -> TodayCard {
        guard let id = WidgetInstanceID(text) else { throw Failure.usage("'\(text)' is not a widget id; `todayctl list` shows them") }
        let values: [String: Value]
        do {
            values = try await properties(id.path)
        } catch let failure as Failure where failure.message.contains("no object") {
            throw Failure.refused("no widget '\(id)' is installed; `todayctl list` shows those that are")
        }
        return TodayCard(id: text, properties: values)
    }

    /// Signals that match `rules` from whoever owns todayd's name, now and
    /// after a restart: the bus filters them by the well-known name, and
    /// every such message is taken here (messages carry the owner's unique
    /// name, which a restart changes).
    func subscribeToTodayd(_ rules: [MatchRule], _ handler: @escaping @Sendable (Message) -> Void) async throws {
        try await subscribe(rules, from: Today.busName, handler)
    }

    /// Wakes `events` once now, at every signal that matches `rules` from
    /// todayd, and whenever todayd's name changes owner (a restart);
    /// finishes it when the connection is lost. What a bar waits on
    /// between its lines.
    func follow(_ rules: [MatchRule], waking events: AsyncStream<Void>.Continuation) async throws {
        try await subscribeToTodayd(rules) { _ in events.yield() }
        let connection = connection
        _ = try await Self.attempt {
            try await connection.subscribe(
                MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged, arg0: Today.busName.rawValue)
            ) { _ in events.yield() }
        }
        connection.onDisconnect { events.finish() }
        events.yield()
    }

    /// Signals that match `rules` from whoever owns `name`, as
    /// `subscribeToTodayd`.
    func subscribe(_ rules: [MatchRule], from name: BusName, _ handler: @escaping @Sendable (Message) -> Void) async throws {
        for var rule in rules {
            let local = rule
            rule.sender = name.rawValue
            try await Self.attempt { try await connection.subscribe(rule) { _ in } }
            try await connection.subscribe(local, addToBus: false, handler: handler)
        }
    }

    func close() { connection.close() }
}
