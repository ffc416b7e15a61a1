import CDBus
import Foundation
import Posix
import Synchronization
import TestSupport
import Testing
@testable import DBus

/// What the connection reads from the bus's socket itself (`Inbox`,
/// `ReceivedMessage`): messages come whole however the stream is cut, with
/// the header libdbus would read and the body's values; a message larger
/// than a read waits for the rest; bytes that are no message end the
/// stream with an error, and no mangled message ever traps.
@Suite struct InboxTests {
    /// The bytes of `message`, with serial `serial`, as the bus would send them.
    static func bytes(of message: MessageHandle, serial: UInt32, sender: String? = nil) throws -> [UInt8] {
        dbus_message_set_serial(message.pointer, serial)
        if let sender { dbus_message_set_sender(message.pointer, sender) }
        var marshalled: UnsafeMutablePointer<CChar>?
        var count: Int32 = 0
        try #require(dbus_message_marshal(message.pointer, &marshalled, &count) != 0)
        let pointer = try #require(marshalled)
        defer { dbus_free(pointer) }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    /// A call of `Notify`-like shape, a signal with `padding` bytes, and an
    /// error reply, from `:1.7`.
    static func sample(padding: Int = 40) throws -> (bytes: [UInt8], expected: [Message]) {
        let call = try MessageHandle.methodCall(
            destination: "org.freedesktop.Notifications", path: ObjectPath("/org/freedesktop/Notifications"),
            interface: InterfaceName("org.freedesktop.Notifications"), member: MemberName("Notify"))
        let callBody: [Value] = [
            .string("app"), .uint32(0), .string(""), .string("a summary of more than fifteen bytes"), .string("body"),
            .strings(["default", "Open"]), .vardict([("urgency", .byte(2)), ("category", .string("im"))]), .int32(-1),
        ]
        try call.append(callBody)
        let signal = try MessageHandle.signal(
            path: ObjectPath("/org/example/Inbox"), interface: InterfaceName("org.example.Inbox"), member: MemberName("Sent"),
            [.uint32(7), .bytes(Data(repeating: 0xA5, count: padding))])
        var stream = try bytes(of: call, serial: 11, sender: ":1.7")
        stream += try bytes(of: signal, serial: 12, sender: ":1.7")
        // An error answering the call, as libdbus builds it.
        let error = try MessageHandle.error(to: call, DBusError(.limitsExceeded, "too many"))
        stream += try bytes(of: error, serial: 13, sender: ":1.7")
        return (stream, [try call.decode(), try signal.decode(), try error.decode()])
    }

    /// A connected pair of sockets: the test writes to `theirs`, the inbox reads `ours`.
    final class Pair {
        let ours: FileDescriptor
        let theirs: FileDescriptor

        init() throws {
            var fds: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
            ours = FileDescriptor(owning: fds[0])
            theirs = FileDescriptor(owning: fds[1])
        }

        func write(_ bytes: ArraySlice<UInt8>) throws {
            try bytes.withUnsafeBytes { try theirs.write(all: $0) }
        }
    }

    /// Feeds `stream` to an inbox `piece` bytes at a time, reading after
    /// each piece; the messages it gave.
    static func received(_ stream: [UInt8], piece: Int) throws -> [ReceivedMessage] {
        let pair = try Pair()
        let inbox = Inbox()
        var messages: [ReceivedMessage] = []
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + piece)
            try pair.write(stream[offset..<end])
            offset = end
            while try inbox.read(from: pair.ours) == .read {}
            while let message = try inbox.next() { messages.append(message) }
        }
        return messages
    }

    static func expectSame(_ received: ReceivedMessage, _ expected: Message) throws {
        let message = try received.decode()
        #expect(message.kind == expected.kind)
        #expect(message.serial == expected.serial)
        #expect(message.replySerial == expected.replySerial)
        #expect(message.sender == expected.sender)
        #expect(message.destination == expected.destination)
        #expect(message.path == expected.path)
        #expect(message.interface == expected.interface)
        #expect(message.member == expected.member)
        #expect(message.errorName == expected.errorName)
        #expect(message.signature == expected.signature)
        #expect(message.noReplyExpected == expected.noReplyExpected)
        #expect(message.body == expected.body)
    }

    @Test(arguments: [1, 7, 16, 333, 1 << 16])
    func messagesCutAnywhereComeWhole(piece: Int) throws {
        let (stream, expected) = try Self.sample()
        let messages = try Self.received(stream, piece: piece)
        try #require(messages.count == expected.count)
        for (message, wanted) in zip(messages, expected) { try Self.expectSame(message, wanted) }
    }

    @Test func aMessageLargerThanTheInboxComesWhole() throws {
        // Four times what the inbox keeps, then a small one behind it.
        let (stream, expected) = try Self.sample(padding: 4 * 2 * Inbox.readSize)
        let messages = try Self.received(stream, piece: 5000)
        try #require(messages.count == expected.count)
        for (message, wanted) in zip(messages, expected) { try Self.expectSame(message, wanted) }
        let again = try Self.received(stream + stream, piece: 100_000)
        #expect(again.count == 2 * expected.count)
    }

    @Test func aBigEndianMessageReads() throws {
        let (bytes, body) = WireReaderTests.bigEndianSignal()
        let messages = try Self.received(bytes, piece: 3)
        let message = try #require(messages.first).decode()
        #expect(message.kind == .signal && message.serial == 1 && message.path == ObjectPath("/t"))
        #expect(message.interface == "org.example.T" && message.member == "M" && message.signature == "qusa{sv}")
        #expect(message.body == body)
    }

    @Test func aMessageOfAKindToComeIsSkipped() throws {
        let (stream, expected) = try Self.sample()
        var unknown = stream
        unknown[1] = 9
        let messages = try Self.received(unknown, piece: 1 << 16)
        // The first message (the call) is of kind 9 now: the other two remain.
        try #require(messages.count == expected.count - 1)
        try Self.expectSame(messages[0], expected[1])
    }

    @Test func bytesThatAreNoMessageEndTheStream() throws {
        let (stream, _) = try Self.sample()
        for (offset, value, what) in [(0, UInt8(ascii: "x"), "byte order"), (3, 2, "version")] {
            var broken = stream
            broken[offset] = value
            #expect(throws: DBusError.self, "a wrong \(what)") { try Self.received(broken, piece: 1 << 16) }
        }
        // A body longer than any message may be.
        var huge = stream
        huge.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(1 << 28).littleEndian, Array.init))
        #expect(throws: DBusError.self) { try Self.received(huge, piece: 1 << 16) }
    }

    @Test func aMessageThatSaysItCarriesDescriptorsWithoutThemIsRefused() throws {
        let call = try MessageHandle.methodCall(
            destination: nil, path: ObjectPath("/t"), interface: InterfaceName("org.example.T"), member: MemberName("M"))
        dbus_message_set_serial(call.pointer, 3)
        _ = dbus_message_set_sender(call.pointer, ":1.3")
        var bytes = try Self.bytes(of: call, serial: 3)
        // A UNIX_FDS field (9, "u", 1) appended to the header fields.
        let fieldsLength = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self) })
        var fields = Array(bytes[16..<16 + fieldsLength])
        while fields.count % 8 != 0 { fields.append(0) }
        fields += [9, 1, UInt8(ascii: "u"), 0] + withUnsafeBytes(of: UInt32(1).littleEndian, Array.init)
        bytes = Array(bytes[0..<12]) + withUnsafeBytes(of: UInt32(fields.count).littleEndian, Array.init) + fields
        while bytes.count % 8 != 0 { bytes.append(0) }
        #expect(throws: DBusError.self) { try Self.received(bytes, piece: 1 << 16) }
    }

    @Test func mangledMessagesNeverTrap() throws {
        let (stream, _) = try Self.sample()
        var generator = SeededGenerator(state: 0x1B0C)
        var refused = 0
        for _ in 0..<3000 {
            var mangled = stream
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<mangled.count, using: &generator)
                mangled[index] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                for message in try Self.received(mangled, piece: 1 << 16) { _ = try? message.decode() }
            } catch {
                refused += 1
            }
        }
        // Most changes land in bodies and strings and are read; some break the framing.
        #expect(refused > 0)
    }
}

/// A connection against a bus played by the test on a socket of its own:
/// Hello is answered after a signal (which waits for the loop's first
/// turn), the unique name comes from the answer, and bytes that are no
/// message end the connection and tell whoever waits for its end.
@Suite struct HandMadeBusTests {
    /// Listens at a socket path, authenticates one client as dbus-daemon
    /// would (EXTERNAL, file descriptors agreed) and hands the socket to `serve`.
    final class FakeBus: @unchecked Sendable {
        let path: String
        private let listener: Int32

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("fake-bus-\(UUID().uuidString)").path
            listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            try #require(bound == 0 && listen(listener, 1) == 0)
        }

        deinit {
            close(listener)
            unlink(path)
        }

        var address: String { "unix:path=\(path)" }

        /// Accepts the client, answers its authentication, and returns its
        /// socket once it has said BEGIN.
        func accept() -> Int32 {
            let client = Glibc.accept(listener, nil, nil)
            var text = ""
            var byte: UInt8 = 0
            while recv(client, &byte, 1, 0) == 1 {
                guard byte != 0 else { continue }
                text.append(Character(UnicodeScalar(byte)))
                guard text.hasSuffix("\r\n") else { continue }
                let line = text
                text = ""
                if line.hasPrefix("AUTH EXTERNAL") {
                    send(client, "OK 0123456789abcdef0123456789abcdef\r\n")
                } else if line.hasPrefix("AUTH") {
                    send(client, "REJECTED EXTERNAL\r\n")
                } else if line.hasPrefix("NEGOTIATE_UNIX_FD") {
                    send(client, "AGREE_UNIX_FD\r\n")
                } else if line.hasPrefix("BEGIN") {
                    break
                }
            }
            return client
        }

        func send(_ client: Int32, _ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, 0) }
        }

        func send(_ client: Int32, _ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, 0) }
        }
    }

    /// Hello's answer (to serial 1), naming the client `name`.
    static func helloReply(_ name: String) throws -> [UInt8] {
        let reply = try #require(dbus_message_new(DBUS_MESSAGE_TYPE_METHOD_RETURN))
        let handle = MessageHandle(owning: reply)
        dbus_message_set_reply_serial(reply, 1)
        _ = dbus_message_set_sender(reply, "org.freedesktop.DBus")
        try handle.append([.string(name)])
        return try InboxTests.bytes(of: handle, serial: 1)
    }

    @Test func helloIsAnsweredAfterASignalAndGarbageEndsTheConnection() async throws {
        let bus = try FakeBus()
        let served = DispatchSemaphore(value: 0)
        let client = Mutex<Int32>(-1)
        DispatchQueue.global().async {
            let socket = bus.accept()
            client.withLock { $0 = socket }
            do {
                // A signal before the answer, as NameAcquired may come.
                let signal = try MessageHandle.signal(
                    path: ObjectPath("/org/freedesktop/DBus"), interface: InterfaceName("org.freedesktop.DBus"),
                    member: MemberName("NameAcquired"), [.string(":1.77")])
                bus.send(socket, try InboxTests.bytes(of: signal, serial: 2, sender: "org.freedesktop.DBus") + Self.helloReply(":1.77"))
            } catch {
                Issue.record("the fake bus could not answer: \(error)")
            }
            served.signal()
        }
        let connection = try await Connection.connect(address: bus.address)
        #expect(connection.uniqueName == ":1.77")
        #expect(served.wait(timeout: .now() + 5) == .success)
        let lost = DispatchSemaphore(value: 0)
        connection.onDisconnect { lost.signal() }
        #expect(connection.isOpen)
        // Sixteen bytes that cannot start a message.
        bus.send(client.withLock { $0 }, Array("not a message...".utf8))
        #expect(lost.wait(timeout: .now() + 5) == .success, "the connection did not end")
        #expect(!connection.isOpen)
        close(client.withLock { $0 })
    }

    @Test func aBusThatClosesBeforeHelloIsAnsweredFailsTheConnect() async throws {
        let bus = try FakeBus()
        DispatchQueue.global().async { close(bus.accept()) }
        await #expect(throws: DBusError.self) { _ = try await Connection.connect(address: bus.address) }
    }
}
