import Synchronization

/// A method call as a handler sees it.
public struct MethodCall: Sendable {
    public let message: Message
    public let connection: Connection
    /// The message as it came: a method declared with Swift types reads
    /// its arguments from its bytes (`MethodDeclaration.decode`), and the
    /// message's body is then not decoded as `Value`s at all.
    let handle: ReceivedMessage

    init(message: Message, handle: ReceivedMessage, connection: Connection) {
        self.message = message
        self.handle = handle
        self.connection = connection
    }

    /// The unique bus name of the caller.
    public var sender: String { message.sender ?? "" }

    /// The arguments as `Value`s: read when the call was routed, or here,
    /// for a call whose handler reads them as its own types.
    public var arguments: [Value] {
        guard message.body.isEmpty, !message.signature.isEmpty else { return message.body }
        return (try? handle.decodeBody()) ?? []
    }
}

/// Answers a method call with the values of its declared outputs.
public typealias MethodHandler = @Sendable (MethodCall) async throws -> [Value]
/// Answers a method call at once, on the connection's loop thread. Only for
/// work that cannot block.
public typealias ImmediateMethodHandler = @Sendable (MethodCall) throws -> [Value]
/// Takes a method call on the connection's loop thread and answers it
/// later, from any thread, through `answer`: for calls whose answer comes
/// from a thread of the service's own, so that it needs no task to wait
/// on. Throwing answers the call with that error. Only for work that
/// cannot block.
public typealias DeferredMethodHandler = @Sendable (MethodCall, PendingAnswer) throws -> Void
/// Answers a method call at once, on the connection's loop thread, with a
/// reply body marshalled beforehand (`ReplyTemplate`), which is copied and
/// addressed to the caller: for large answers asked for often between
/// changes. Only for work that cannot block.
public typealias TemplateMethodHandler = @Sendable (MethodCall) throws -> ReplyTemplate

/// A reply's body, marshalled once, to be copied as the answer to many
/// calls (`MethodDeclaration.replying`).
public final class ReplyTemplate: Sendable {
    let message: MessageHandle

    /// `values` as a reply body; fails only where libdbus has no memory,
    /// or a value breaks its type's rules.
    public init(_ values: [Value]) throws {
        message = try MessageHandle.replyTemplate(values)
    }
}

/// Accepts or refuses a new value for a writable property; the value is
/// stored and announced once this returns.
public typealias PropertySetter = @Sendable (MethodCall, Value) async throws -> Void

/// One interface of one exported object: its declaration, the handlers of
/// its methods and the current values of its properties.
public final class ExportedInterface: Sendable {
    public let interface: Interface

    @usableFromInline
    enum Handler: Sendable {
        case task(MethodHandler)
        case immediate(ImmediateMethodHandler)
        case deferred(DeferredMethodHandler)
        case template(TemplateMethodHandler)
    }

    let handlers: [String: Handler]
    /// Whether the handlers read their calls' arguments themselves, as the
    /// bindings of `MethodDeclaration`s do, as Swift types straight from
    /// the message: the body is then not decoded before the call is handed
    /// over.
    let readsArguments: Bool
    let setters: [String: PropertySetter]
    /// Properties only some callers may read: left out of
    /// GetManagedObjects and InterfacesAdded, and read through Get or
    /// GetAll only once `readGuard` accepts the caller.
    let guardedProperties: Set<String>
    let readGuard: (@Sendable (MethodCall) async throws -> Void)?
    private let state: Mutex<State>

    private struct State {
        var values: [String: Value]
        weak var connection: Connection?
        var path: ObjectPath?
        /// GetAll's reply body, marshalled at the first GetAll after a
        /// change, unless it is large (`keptReplyLimit`).
        var getAllReply: MessageHandle?
        /// Properties changed by `setUnannounced` whose PropertiesChanged
        /// has not gone yet, in the order they first changed.
        var unannounced: [String] = []
        /// The signals of fixed-width arguments sent to everyone, by name,
        /// as stencils of the first one sent from the current path.
        var stencils: [String: MessageStencil] = [:]

        /// Where the object is exported, while it is.
        var target: (Connection, ObjectPath)? {
            guard let connection, let path else { return nil }
            return (connection, path)
        }
    }

    /// Binds handlers, by method name, to an interface declared with plain
    /// `Method`s (one known only at run time, or a test's). Every declared
    /// method needs exactly one handler, every readable property an initial
    /// value, and every writable one a setter.
    public convenience init(
        _ interface: Interface,
        properties: [String: Value] = [:],
        methods: [String: MethodHandler] = [:],
        immediate: [String: ImmediateMethodHandler] = [:],
        deferred: [String: DeferredMethodHandler] = [:],
        setters: [String: PropertySetter] = [:],
        guarded: Set<String> = [],
        readGuard: (@Sendable (MethodCall) async throws -> Void)? = nil
    ) {
        var handlers: [String: Handler] = methods.mapValues { .task($0) }
        for (name, handler) in immediate { handlers[name] = .immediate(handler) }
        for (name, handler) in deferred { handlers[name] = .deferred(handler) }
        self.init(
            interface, properties: properties, handlers: handlers, readsArguments: false, setters: setters, guarded: guarded, readGuard: readGuard)
    }

    /// Binds handlers made by the methods' `MethodDeclaration`s, which hand
    /// them typed arguments; otherwise as above.
    public convenience init(
        _ interface: Interface,
        properties: [String: Value] = [:],
        bindings: [MethodBinding],
        setters: [String: PropertySetter] = [:],
        guarded: Set<String> = [],
        readGuard: (@Sendable (MethodCall) async throws -> Void)? = nil
    ) {
        var handlers: [String: Handler] = [:]
        for binding in bindings {
            precondition(handlers[binding.name.rawValue] == nil, "\(binding.name) of \(interface.name) is bound twice")
            handlers[binding.name.rawValue] = binding.handler
        }
        self.init(
            interface, properties: properties, handlers: handlers, readsArguments: true, setters: setters, guarded: guarded, readGuard: readGuard)
    }

    private init(
        _ interface: Interface, properties: [String: Value], handlers: [String: Handler], readsArguments: Bool, setters: [String: PropertySetter],
        guarded: Set<String>, readGuard: (@Sendable (MethodCall) async throws -> Void)?
    ) {
        precondition(guarded.isEmpty || readGuard != nil, "guarded properties need a read guard")
        precondition(
            Set(handlers.keys) == Set(interface.methods.map(\.name.rawValue)),
            "handlers of \(interface.name) do not match its declared methods")
        for property in interface.properties {
            if property.isReadable {
                precondition(properties[property.name]?.type == property.type, "no \(property.type) value for \(property.name)")
            }
            if property.isWritable { precondition(setters[property.name] != nil, "no setter for \(property.name)") }
        }
        self.interface = interface
        self.handlers = handlers
        self.readsArguments = readsArguments
        self.setters = setters
        self.guardedProperties = guarded
        self.readGuard = readGuard
        self.state = Mutex(State(values: properties))
    }

    /// The current value of a property.
    public subscript(property name: String) -> Value? {
        state.withLock { $0.values[name] }
    }

    /// All readable properties, in declaration order.
    public var allProperties: [(String, Value)] {
        state.withLock { readable($0) }
    }

    private func readable(_ state: State) -> [(String, Value)] {
        interface.properties.compactMap { property in
            guard property.isReadable, let value = state.values[property.name] else { return nil }
            return (property.name, value)
        }
    }

    /// The reply to a GetAll `call`: a copy of the body marshalled at the
    /// first GetAll since the last change, addressed to the caller. A panel
    /// reading many widgets many times pays for marshalling once per change.
    /// A large body (a picture's megabyte) is marshalled for each call
    /// instead: that is one copy of the bytes, as copying the kept body
    /// would be, and keeping it would hold the bytes twice.
    func getAllReply(to call: ReceivedMessage) throws -> MessageHandle {
        try state.withLock { state in
            if let kept = state.getAllReply { return try kept.reply(to: call) }
            let values = readable(state)
            let body = Value.vardict(values)
            guard body.approximateSize < Self.keptReplyLimit else {
                // The large values last: the body then grows to its size
                // once, where a value after them would double it past that.
                let isLarge = { (entry: (String, Value)) in entry.1.approximateSize >= Self.keptReplyLimit }
                let reply = try call.methodReturn()
                try reply.append([.vardict(values.filter { !isLarge($0) } + values.filter(isLarge))])
                return reply
            }
            let template = try MessageHandle.replyTemplate([body])
            state.getAllReply = template
            return try template.reply(to: call)
        }
    }

    /// GetAll bodies of about this many bytes or more are not kept.
    static let keptReplyLimit = 64 << 10

    /// The readable properties any caller may see.
    var publicProperties: [(String, Value)] {
        guardedProperties.isEmpty ? allProperties : allProperties.filter { !guardedProperties.contains($0.0) }
    }

    /// Changes properties and announces the change in one PropertiesChanged
    /// signal, as each property's declaration says. Unchanged values are
    /// not announced.
    public func set(_ changes: [(String, Value)]) {
        var changed: [(String, Value)] = []
        var invalidated: [String] = []
        let target = state.withLock { state -> (Connection, ObjectPath)? in
            for (name, value) in changes {
                guard let signal = store(name, value, in: &state) else { continue }
                // Announced now, with this value: nothing is left to send.
                state.unannounced.removeAll { $0 == name }
                switch signal {
                case .emits: changed.append((name, value))
                case .invalidates: invalidated.append(name)
                case .const, .none: break
                }
            }
            return state.target
        }
        announce(changed, invalidated, to: target)
    }

    public func set(_ name: String, _ value: Value) { set([(name, value)]) }

    /// Changes properties as `set` does, at once for Get and GetAll, but
    /// leaves their PropertiesChanged to the next `announce()`, which
    /// sends the values of then: a property that changes with every call
    /// of a burst (a count) costs its listeners one signal for the burst.
    public func setUnannounced(_ changes: [(String, Value)]) {
        state.withLock { state in
            for (name, value) in changes {
                guard let signal = store(name, value, in: &state), signal == .emits || signal == .invalidates,
                    !state.unannounced.contains(name)
                else { continue }
                state.unannounced.append(name)
            }
        }
    }

    /// Sends PropertiesChanged for what `setUnannounced` changed since the
    /// last announcement, with the values as they are now.
    public func announce() {
        var changed: [(String, Value)] = []
        var invalidated: [String] = []
        let target = state.withLock { state -> (Connection, ObjectPath)? in
            for name in state.unannounced {
                switch interface.property(named: name)?.changeSignal {
                case .emits: if let value = state.values[name] { changed.append((name, value)) }
                case .invalidates: invalidated.append(name)
                default: break
                }
            }
            state.unannounced.removeAll(keepingCapacity: true)
            return state.target
        }
        announce(changed, invalidated, to: target)
    }

    /// Stores `value` as property `name`'s; how its change is announced,
    /// or nil where the value is the same.
    private func store(_ name: String, _ value: Value, in state: inout State) -> Property.ChangeSignal? {
        guard let property = interface.property(named: name) else {
            preconditionFailure("\(interface.name) has no property \(name)")
        }
        precondition(value.type == property.type, "\(name) is \(property.type), not \(value.type)")
        guard state.values.updateValue(value, forKey: name) != value else { return nil }
        state.getAllReply = nil
        return property.changeSignal
    }

    private func announce(_ changed: [(String, Value)], _ invalidated: [String], to target: (Connection, ObjectPath)?) {
        guard let (connection, path) = target, !(changed.isEmpty && invalidated.isEmpty) else { return }
        try? connection.emit(
            path: path, interface: .properties, member: .propertiesChanged,
            [.string(interface.name.rawValue), .vardict(changed), .strings(invalidated)])
    }

    /// Emits one of the interface's signals from its object, to everyone or
    /// only to `destination`.
    /// Emits `signal` of this interface from its object.
    public func emit(_ signal: Signal, _ arguments: [Value], to destination: BusName? = nil) throws {
        try emit(signal.name.rawValue, arguments, to: destination)
    }

    public func emit(_ name: String, _ arguments: [Value], to destination: BusName? = nil) throws {
        guard let signal = interface.signal(named: name) else {
            preconditionFailure("\(interface.name) has no signal \(name)")
        }
        guard arguments.count == signal.arguments.count, zip(arguments, signal.arguments).allSatisfy({ $0.type == $1.type }) else {
            throw DBusError.invalidArgs("signal \(name) takes \(signal.arguments.map(\.type.signature).joined())")
        }
        // A signal of numbers to everyone is a copy of the first one's
        // stencil with its numbers written in (`MessageStencil`).
        let stenciled = destination == nil && !arguments.isEmpty && arguments.allSatisfy { $0.fixedBits != nil }
        let target = state.withLock { state in (state.connection, state.path, stenciled ? state.stencils[name] : nil) }
        guard let connection = target.0, let path = target.1 else { return }
        if let stencil = target.2, connection.send(stencil, arguments) { return }
        let message = try MessageHandle.signal(path: path, interface: interface.name, member: signal.name, arguments)
        if let destination { message.setDestination(destination.rawValue) }
        if stenciled, let stencil = MessageStencil(copying: message.pointer, types: arguments.map(\.type)) {
            state.withLock { state in
                if state.path == path { state.stencils[name] = stencil }
            }
        }
        connection.send(message)
    }

    func attach(to connection: Connection, at path: ObjectPath) {
        state.withLock { state in
            state.connection = connection
            state.path = path
            state.stencils = [:]
        }
    }

    func detach() {
        state.withLock { state in
            state.connection = nil
            state.path = nil
            state.stencils = [:]
        }
    }
}
