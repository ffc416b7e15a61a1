import CDBus

/// A message received from the bus, decoded into Swift values.
public struct Message: Sendable {
    public enum Kind: Sendable { case methodCall, methodReturn, error, signal }

    /// The header's fields, in one box its copies share: a call is copied
    /// from its dispatch to its route, its `MethodCall` and its handler,
    /// and each copy is then one reference rather than one per string.
    private final class Header: Sendable {
        let kind: Kind
        let serial: UInt32
        let replySerial: UInt32
        let sender: String?
        let destination: String?
        let path: ObjectPath?
        let interface: String?
        let member: String?
        let errorName: String?
        let signature: String
        let noReplyExpected: Bool

        init(
            kind: Kind, serial: UInt32, replySerial: UInt32, sender: String?, destination: String?, path: ObjectPath?, interface: String?,
            member: String?, errorName: String?, signature: String, noReplyExpected: Bool
        ) {
            self.kind = kind
            self.serial = serial
            self.replySerial = replySerial
            self.sender = sender
            self.destination = destination
            self.path = path
            self.interface = interface
            self.member = member
            self.errorName = errorName
            self.signature = signature
            self.noReplyExpected = noReplyExpected
        }
    }

    private let header: Header
    public var body: [Value]

    init(
        kind: Kind, serial: UInt32, replySerial: UInt32, sender: String?, destination: String?, path: ObjectPath?, interface: String?,
        member: String?, errorName: String?, signature: String, body: [Value], noReplyExpected: Bool
    ) {
        header = Header(
            kind: kind, serial: serial, replySerial: replySerial, sender: sender, destination: destination, path: path, interface: interface,
            member: member, errorName: errorName, signature: signature, noReplyExpected: noReplyExpected)
        self.body = body
    }

    public var kind: Kind { header.kind }
    public var serial: UInt32 { header.serial }
    public var replySerial: UInt32 { header.replySerial }
    public var sender: String? { header.sender }
    public var destination: String? { header.destination }
    public var path: ObjectPath? { header.path }
    public var interface: String? { header.interface }
    public var member: String? { header.member }
    public var errorName: String? { header.errorName }
    public var signature: String { header.signature }
    public var noReplyExpected: Bool { header.noReplyExpected }

    /// The remote error this message carries, when it is an error reply.
    public var error: DBusError? {
        guard kind == .error else { return nil }
        let name = errorName.flatMap(ErrorName.init(rawValue:)) ?? .failed
        let text = body.first?.string ?? "(no message)"
        return DBusError(name, text)
    }
}

/// The libdbus message handle. Owned by one Swift object; released with it.
/// @unchecked Sendable: a message is built on one thread and then handed over
/// whole; no two threads use it at once.
final class MessageHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over one reference.
    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    deinit { dbus_message_unref(pointer) }

    static func methodCall(
        destination: String?, path: ObjectPath, interface: InterfaceName?, member: MemberName
    ) throws -> MessageHandle {
        guard
            let pointer = dbus_message_new_method_call(
                destination, path.rawValue, interface?.rawValue, member.rawValue)
        else { throw DBusError(.noMemory, "out of memory creating a method call") }
        return MessageHandle(owning: pointer)
    }

    static func signal(path: ObjectPath, interface: InterfaceName, member: MemberName) throws -> MessageHandle {
        guard let pointer = dbus_message_new_signal(path.rawValue, interface.rawValue, member.rawValue) else {
            throw DBusError(.noMemory, "out of memory creating a signal")
        }
        return MessageHandle(owning: pointer)
    }

    /// A signal carrying `arguments`. The body goes in before the path,
    /// interface and member: libdbus rewrites the header's signature field
    /// after each argument, and rewriting it where it is the header's only
    /// field costs about a quarter less than behind the other three (a
    /// NotificationClosed, two arguments, made 200,000 times in C: 6.3 to
    /// 7.0 µs each against 8.3 to 9.4). The names reach libdbus through
    /// `withCString`, which lends a string's own bytes, where passing a
    /// `String` as a C string would copy each into an array first.
    static func signal(path: ObjectPath, interface: InterfaceName, member: MemberName, _ arguments: [Value]) throws -> MessageHandle {
        guard let pointer = dbus_message_new(DBUS_MESSAGE_TYPE_SIGNAL) else {
            throw DBusError(.noMemory, "out of memory creating a signal")
        }
        let message = MessageHandle(owning: pointer)
        try message.append(arguments)
        let addressed =
            path.rawValue.withCString { dbus_message_set_path(pointer, $0) } != 0
            && interface.rawValue.withCString { dbus_message_set_interface(pointer, $0) } != 0
            && member.rawValue.withCString { dbus_message_set_member(pointer, $0) } != 0
        guard addressed else { throw DBusError(.noMemory, "out of memory addressing a signal") }
        return message
    }

    /// A method return with only a body, copied as the reply to many calls
    /// (see `reply(to:)`), so the body is marshalled once.
    static func replyTemplate(_ values: [Value]) throws -> MessageHandle {
        guard let pointer = dbus_message_new(DBUS_MESSAGE_TYPE_METHOD_RETURN) else {
            throw DBusError(.noMemory, "out of memory creating a reply")
        }
        let template = MessageHandle(owning: pointer)
        try template.append(values)
        return template
    }

    /// A copy of this template addressed as the reply to `call`, as
    /// `dbus_message_new_method_return` would address it.
    func reply(to call: ReceivedMessage) throws -> MessageHandle {
        guard let copy = dbus_message_copy(pointer) else { throw DBusError(.noMemory, "out of memory copying a reply") }
        let reply = MessageHandle(owning: copy)
        guard dbus_message_set_reply_serial(copy, call.serial) != 0 else {
            throw DBusError(.noMemory, "out of memory addressing a reply")
        }
        if let sender = call.header.sender, dbus_message_set_destination(copy, sender) == 0 {
            throw DBusError(.noMemory, "out of memory addressing a reply")
        }
        dbus_message_set_no_reply(copy, 1)
        return reply
    }

    var signature: String { String(cString: dbus_message_get_signature(pointer)) }

    func setDestination(_ destination: String) {
        _ = dbus_message_set_destination(pointer, destination)
    }

    /// Appends `values`; on failure the message must not be sent.
    func append(_ values: [Value]) throws {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(pointer, &iterator)
        for value in values {
            try Marshal.append(value, to: &iterator)
        }
    }

    /// The message with its body's values, as libdbus holds it (one
    /// demarshalled from bytes; the connection reads what the bus sends
    /// itself, `ReceivedMessage`).
    func decode() throws -> Message {
        var message = decodeHeader()
        message.body = try decodeBody()
        return message
    }

    /// The message's header, with an empty body.
    private func decodeHeader() -> Message {
        let kind: Message.Kind
        switch dbus_message_get_type(pointer) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: kind = .error
        default: kind = .signal
        }
        return Message(
            kind: kind,
            serial: dbus_message_get_serial(pointer),
            replySerial: dbus_message_get_reply_serial(pointer),
            sender: dbus_message_get_sender(pointer).map { String(cString: $0) },
            destination: dbus_message_get_destination(pointer).map(HeaderStrings.shared.string),
            path: dbus_message_get_path(pointer).map { ObjectPath(unchecked: HeaderStrings.shared.string($0)) },
            interface: dbus_message_get_interface(pointer).map(HeaderStrings.shared.string),
            member: dbus_message_get_member(pointer).map(HeaderStrings.shared.string),
            errorName: dbus_message_get_error_name(pointer).map(HeaderStrings.shared.string),
            signature: signature,
            body: [],
            noReplyExpected: dbus_message_get_no_reply(pointer) != 0
        )
    }

    /// The body's values, read from its bytes (`WireReader`), or through
    /// libdbus's iterators where it carries file descriptors.
    func decodeBody() throws -> [Value] {
        if let values = try WireReader.body(of: pointer, signature: signature) { return values }
        return try decodeBodyThroughIterators()
    }

    /// The body's values as libdbus's iterators read them.
    func decodeBodyThroughIterators() throws -> [Value] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(pointer, &iterator) != 0 else { return [] }
        var values: [Value] = []
        repeat {
            values.append(try Marshal.read(&iterator))
        } while dbus_message_iter_next(&iterator) != 0
        return values
    }
}
