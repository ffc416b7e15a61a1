import CDBus
import Synchronization

/// The objects one connection exports, and the dispatch of method calls to
/// them. Every call gets a reply: a result, or an error with its standard name.
public final class ObjectServer: Sendable {
    private let state = Mutex(State())
    /// Reply stencils by caller (`makeReply`).
    fileprivate let replyStencils = Mutex<[String: MessageStencil]>([:])

    private struct State {
        weak var connection: Connection?
        var objects: [ObjectPath: [ExportedInterface]] = [:]
        var managers: Set<ObjectPath> = []
        var gate: Gate?
    }

    /// What a gate says about a call before it is dispatched.
    public enum Admission: Sendable {
        case allow
        case deny(DBusError)
        /// The answer needs a round trip (to the bus, for instance): the
        /// call waits for it while other calls go on.
        case ask(@Sendable () async -> DBusError?)
    }

    /// Decides, on the loop thread, whether a call to any exported object
    /// may proceed, from the call's header (its body is read later, once
    /// its method is found).
    public typealias Gate = @Sendable (Message) -> Admission

    /// Sets the check every incoming method call passes before dispatch.
    public func setGate(_ gate: Gate?) {
        state.withLock { $0.gate = gate }
    }

    var connection: Connection? {
        get { state.withLock { $0.connection } }
        set { state.withLock { $0.connection = newValue } }
    }

    /// Exports interfaces at `path` (adding to those already there). An
    /// object manager above it announces them with InterfacesAdded.
    public func export(_ path: ObjectPath, _ interfaces: [ExportedInterface]) {
        let (connection, managers) = state.withLock { state -> (Connection?, [ObjectPath]) in
            let existing = state.objects[path] ?? []
            let names = Set(interfaces.map(\.interface.name))
            state.objects[path] = existing.filter { !names.contains($0.interface.name) } + interfaces
            return (state.connection, state.managers.filter { path.isDescendant(of: $0) })
        }
        guard let connection else { return }
        for interface in interfaces { interface.attach(to: connection, at: path) }
        let added = Value.dictionary(
            key: .string, value: .dictionary(key: .string, value: .variant),
            interfaces.map { DictionaryEntry(.string($0.interface.name.rawValue), .vardict($0.publicProperties)) })
        for manager in managers {
            try? connection.emit(
                path: manager, interface: .objectManager, member: .interfacesAdded,
                [.objectPath(path), added])
        }
    }

    /// Removes the object at `path`; an object manager above it announces
    /// that with InterfacesRemoved.
    public func unexport(_ path: ObjectPath) {
        let (connection, removed, managers) = state.withLock {
            state -> (Connection?, [ExportedInterface], [ObjectPath]) in
            let removed = state.objects.removeValue(forKey: path) ?? []
            return (state.connection, removed, state.managers.filter { path.isDescendant(of: $0) })
        }
        for interface in removed { interface.detach() }
        guard let connection, !removed.isEmpty else { return }
        for manager in managers {
            try? connection.emit(
                path: manager, interface: .objectManager, member: .interfacesRemoved,
                [.objectPath(path), .strings(removed.map(\.interface.name.rawValue))])
        }
    }

    /// Makes `path` an `org.freedesktop.DBus.ObjectManager` for the objects below it.
    public func addObjectManager(at path: ObjectPath) {
        state.withLock { _ = $0.managers.insert(path) }
    }

    /// The interfaces exported at `path`.
    public func interfaces(at path: ObjectPath) -> [ExportedInterface] {
        state.withLock { $0.objects[path] ?? [] }
    }

    public var paths: [ObjectPath] { state.withLock { Array($0.objects.keys) } }

    // MARK: Dispatch (on the connection's loop thread)

    /// The call's header is read here; its body once its method is found
    /// (`route`), by the method's declared types.
    func dispatch(_ handle: ReceivedMessage, on connection: Connection) {
        let message = handle.header
        switch state.withLock({ $0.gate })?(message) ?? .allow {
        case .allow:
            proceed(message, handle: handle, on: connection)
        case .deny(let error):
            reply(to: handle, noReply: message.noReplyExpected, .failure(error), on: connection)
        case .ask(let question):
            Task {
                if let error = await question() {
                    self.reply(to: handle, noReply: message.noReplyExpected, .failure(error), on: connection)
                } else {
                    connection.submit { self.proceed(message, handle: handle, on: connection) }
                }
            }
        }
    }

    private func proceed(_ message: Message, handle: ReceivedMessage, on connection: Connection) {
        let outcome = route(message, handle: handle, on: connection)
        switch outcome {
        case .done(let result):
            reply(to: handle, noReply: message.noReplyExpected, result, on: connection)
        case .prepared(let make):
            guard !message.noReplyExpected else { return }
            do {
                connection.send(try make(handle))
            } catch {
                reply(to: handle, noReply: false, .failure(error), on: connection)
            }
        case .later(let work):
            let noReply = message.noReplyExpected
            Task {
                let result: Result<([Value], String?), any Error>
                do { result = .success(try await work()) } catch { result = .failure(error) }
                self.reply(to: handle, noReply: noReply, result, on: connection)
            }
        case .deferred(let handler, let call, let outputs):
            let answer = PendingAnswer { [self] result in
                reply(to: handle, noReply: message.noReplyExpected, result.map { ($0, outputs) }, on: connection)
            }
            do {
                try handler(call, answer)
            } catch {
                answer.fail(error)
            }
        }
    }

    private enum Outcome {
        /// Values, and the signature they must have (nil: not checked).
        case done(Result<([Value], String?), any Error>)
        /// A reply made ready beforehand, addressed to the call.
        case prepared(@Sendable (ReceivedMessage) throws -> MessageHandle)
        case later(@Sendable () async throws -> ([Value], String?))
        /// A handler that answers later, and the signature of its answer.
        case deferred(DeferredMethodHandler, MethodCall, String)
    }

    private func route(_ header: Message, handle: ReceivedMessage, on connection: Connection) -> Outcome {
        var message = header
        let member = message.member ?? ""
        guard let path = message.path else { return .done(.failure(DBusError.invalidArgs("a call without a path"))) }
        let exported = state.withLock { $0.objects[path] }
        let interfaces = exported ?? []
        // Whether the path is an object manager, and the standard
        // interfaces, looked up only where the call names none of the
        // object's own, and then once.
        lazy var isManager = state.withLock { $0.managers.contains(path) }
        lazy var standard: [Interface] = {
            var standard: [Interface] = [.introspectable, .peer]
            if exported != nil { standard.append(.properties) }
            if isManager { standard.append(.objectManager) }
            return standard
        }()

        // Only a path with nothing of its own needs the (linear) look for
        // objects below it, the rest of every call does without it.
        // Peer answers on every path, as libdbus answers it for a
        // connection that does not route it to its objects.
        let isPeer = message.interface == Interface.peer.name.rawValue
        guard exported != nil || isPeer || isManager || !children(of: path).isEmpty else {
            return .done(.failure(DBusError(.unknownObject, "no object at '\(path.rawValue)'")))
        }

        // Find the interface and method the call names.
        let target: (Interface, ExportedInterface?, Method)?
        if let name = message.interface {
            if let own = interfaces.first(where: { $0.interface.name.rawValue == name }) {
                guard let method = own.interface.method(named: member) else {
                    return .done(.failure(DBusError(.unknownMethod, "interface '\(name)' has no method '\(member)'")))
                }
                target = (own.interface, own, method)
            } else if let declared = standard.first(where: { $0.name.rawValue == name }) {
                guard let method = declared.method(named: member) else {
                    return .done(.failure(DBusError(.unknownMethod, "interface '\(name)' has no method '\(member)'")))
                }
                target = (declared, nil, method)
            } else {
                return .done(
                    .failure(DBusError(.unknownInterface, "object '\(path.rawValue)' has no interface '\(name)'")))
            }
        } else {
            let own = interfaces.lazy.compactMap { e in e.interface.method(named: member).map { (e.interface, e, $0) } }
                .first
            let std = standard.lazy.compactMap { i in i.method(named: member).map { (i, nil as ExportedInterface?, $0) } }
                .first
            target = own ?? std
        }
        guard let (interface, implementation, method) = target else {
            return .done(.failure(DBusError(.unknownMethod, "object '\(path.rawValue)' has no method '\(member)'")))
        }
        guard message.signature == method.inputSignature else {
            return .done(
                .failure(
                    DBusError.invalidArgs(
                        "\(interface.name.rawValue).\(member) takes arguments of type '\(method.inputSignature)', not '\(message.signature)'"
                    )))
        }
        let outputs = method.outputSignature
        if implementation?.readsArguments != true {
            do {
                message.body = try handle.decodeBody(as: method)
            } catch {
                return .done(.failure(error))
            }
        }
        let call = MethodCall(message: message, handle: handle, connection: connection)

        if let implementation {
            switch implementation.handlers[member] {
            case .immediate(let handler):
                return .done(Result { (try handler(call), outputs) })
            case .task(let handler):
                return .later { (try await handler(call), outputs) }
            case .deferred(let handler):
                return .deferred(handler, call, outputs)
            case .template(let handler):
                do {
                    let template = try handler(call)
                    return .prepared { call in try template.message.reply(to: call) }
                } catch {
                    return .done(.failure(error))
                }
            case nil:
                return .done(.failure(DBusError(.unknownMethod, "no handler for \(member)")))
            }
        }
        return standardCall(interface.name, member, call, path: path, interfaces: interfaces, standard: standard)
    }

    private func standardCall(
        _ interface: InterfaceName, _ member: String, _ call: MethodCall, path: ObjectPath,
        interfaces: [ExportedInterface], standard: [Interface]
    ) -> Outcome {
        let arguments = call.arguments
        switch (interface, member) {
        case (.introspectable, "Introspect"):
            var xml = Interface.introspectionDocType + "<node>\n"
            for declared in standard { xml += declared.introspectionXML() }
            for exported in interfaces { xml += exported.interface.introspectionXML() }
            for child in children(of: path) { xml += " <node name=\"\(child)\"/>\n" }
            xml += "</node>\n"
            return .done(.success(([.string(xml)], "s")))
        case (.peer, "Ping"):
            return .done(.success(([], "")))
        case (.peer, "GetMachineId"):
            guard let raw = dbus_get_local_machine_id() else {
                return .done(.failure(DBusError.failed("this machine has no machine id")))
            }
            defer { dbus_free(raw) }
            return .done(.success(([.string(String(cString: raw))], "s")))
        case (.properties, "Get"), (.properties, "GetAll"), (.properties, "Set"):
            let interfaceName = arguments.first?.string ?? ""
            guard let exported = interfaces.first(where: { $0.interface.name.rawValue == interfaceName }) else {
                if member == "GetAll", standard.contains(where: { $0.name.rawValue == interfaceName }) {
                    return .done(.success(([.vardict([])], "a{sv}")))
                }
                return .done(
                    .failure(
                        DBusError(.unknownInterface, "object '\(path.rawValue)' has no interface '\(interfaceName)'")))
            }
            if member == "GetAll" {
                guard let readGuard = exported.readGuard else {
                    return .prepared { call in try exported.getAllReply(to: call) }
                }
                let call = call
                return .later {
                    try await readGuard(call)
                    return ([.vardict(exported.allProperties)], "a{sv}")
                }
            }
            let name = arguments.count > 1 ? arguments[1].string ?? "" : ""
            guard let property = exported.interface.property(named: name) else {
                return .done(
                    .failure(DBusError(.unknownProperty, "interface '\(interfaceName)' has no property '\(name)'")))
            }
            if member == "Get" {
                guard property.isReadable, let value = exported[property: name] else {
                    return .done(.failure(DBusError(.accessDenied, "property '\(name)' is write-only")))
                }
                if exported.guardedProperties.contains(name), let readGuard = exported.readGuard {
                    let call = call
                    return .later {
                        try await readGuard(call)
                        return ([.variant(value)], "v")
                    }
                }
                return .done(.success(([.variant(value)], "v")))
            }
            guard property.isWritable, let setter = exported.setters[name] else {
                return .done(.failure(DBusError(.propertyReadOnly, "property '\(name)' is read-only")))
            }
            let value = arguments[2].unwrapped
            guard value.type == property.type else {
                return .done(
                    .failure(
                        DBusError.invalidArgs(
                            "property '\(name)' has type '\(property.type.signature)', not '\(value.type.signature)'")))
            }
            let call = call
            return .later {
                try await setter(call, value)
                exported.set(name, value)
                return ([], "")
            }
        case (.objectManager, "GetManagedObjects"):
            let objects = state.withLock { state in
                state.objects.filter { $0.key.isDescendant(of: path) }.sorted { $0.key < $1.key }
            }
            let standardNames = [Interface.introspectable, .peer, .properties].map(\.name.rawValue)
            let entries = objects.map { (objectPath, exported) in
                DictionaryEntry(
                    .objectPath(objectPath),
                    .dictionary(
                        key: .string, value: .dictionary(key: .string, value: .variant),
                        standardNames.map { DictionaryEntry(.string($0), .vardict([])) }
                            + exported.map {
                                DictionaryEntry(.string($0.interface.name.rawValue), .vardict($0.publicProperties))
                            }))
            }
            return .done(
                .success(
                    ([.dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), entries)],
                     "a{oa{sa{sv}}}")))
        default:
            return .done(.failure(DBusError(.unknownMethod, "no method '\(member)' in '\(interface.rawValue)'")))
        }
    }

    /// The names of the nodes directly below `path` that lead to objects.
    private func children(of path: ObjectPath) -> [String] {
        state.withLock { Self.children(of: path, in: $0) }
    }

    private static func children(of path: ObjectPath, in state: State) -> [String] {
        var names = Set<String>()
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        for candidate in state.objects.keys where candidate.rawValue.hasPrefix(prefix) && candidate != path {
            let rest = candidate.rawValue.dropFirst(prefix.count)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        for candidate in state.managers where candidate.rawValue.hasPrefix(prefix) && candidate != path {
            let rest = candidate.rawValue.dropFirst(prefix.count)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }

    private func reply(
        to call: ReceivedMessage, noReply: Bool, _ result: Result<([Value], String?), any Error>,
        on connection: Connection
    ) {
        guard !noReply else { return }
        do {
            let (values, expected) = try result.get()
            if let expected {
                var actual = ""
                for value in values { actual += value.type.signature }
                guard actual == expected else {
                    throw DBusError.failed("the service answered with '\(actual)' where '\(expected)' is declared")
                }
            }
            try sendReply(to: call, values, on: connection)
        } catch {
            let dbusError = (error as? any DBusErrorConvertible)?.dbusError ?? DBusError.failed("\(error)")
            guard let reply = try? call.errorReply(dbusError) else { return }
            connection.send(reply)
        }
    }
}

extension ObjectServer {
    /// How many callers' reply stencils are kept; beyond it they are
    /// dropped and made again as callers call.
    static let stencilsKept = 256

    /// Sends the reply to `call` carrying `values`: where all are numbers,
    /// a copy of the stencil kept for its caller (`MessageStencil`), made
    /// from the first such reply to it, laid out in the outbox; else built.
    fileprivate func sendReply(to call: ReceivedMessage, _ values: [Value], on connection: Connection) throws {
        guard !values.isEmpty, values.allSatisfy({ $0.fixedBits != nil }), let caller = call.header.sender else {
            let reply = try call.methodReturn()
            try reply.append(values)
            connection.send(reply)
            return
        }
        if let stencil = replyStencils.withLock({ $0[caller] }), stencil.types.count == values.count,
            connection.send(stencil, replyingTo: call.serial, values)
        {
            return
        }
        let reply = try call.methodReturn()
        try reply.append(values)
        if let stencil = MessageStencil(copying: reply.pointer, types: values.map(\.type)) {
            replyStencils.withLock { stencils in
                if stencils.count >= Self.stencilsKept { stencils.removeAll() }
                stencils[caller] = stencil
            }
        }
        connection.send(reply)
    }
}

/// The answer a deferred method handler owes its caller: given once, from
/// any thread, with `succeed` or `fail`. Later answers are ignored; an
/// answer never given becomes an error when the last reference goes, so
/// the caller is not left waiting.
public final class PendingAnswer: Sendable {
    private let send: Mutex<(@Sendable (Result<[Value], any Error>) -> Void)?>

    init(_ send: @escaping @Sendable (Result<[Value], any Error>) -> Void) {
        self.send = Mutex(send)
    }

    /// Answers with the method's output values.
    public func succeed(_ values: [Value]) { complete(.success(values)) }

    /// Answers with an error: a `DBusError` keeps its name, anything else
    /// is `org.freedesktop.DBus.Error.Failed`.
    public func fail(_ error: any Error) { complete(.failure(error)) }

    /// Answers with output values or an error, whichever `result` holds.
    public func complete(_ result: Result<[Value], any Error>) {
        let send = send.withLock { send in
            defer { send = nil }
            return send
        }
        send?(result)
    }

    deinit {
        send.withLock { $0 }?(.failure(DBusError.failed("the service dropped the call without an answer")))
    }
}
