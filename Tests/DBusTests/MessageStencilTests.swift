import CDBus
import Foundation
import TestSupport
import Testing
@testable import DBus

/// Replies and signals of numbers are a stencil's bytes with the numbers
/// written in (`MessageStencil`): they are the messages libdbus itself
/// builds, byte for byte, and they reach the right callers and listeners
/// through a real bus.
@Suite struct MessageStencilTests {
    /// A reply built through libdbus's API, to a caller `sender`.
    static func built(_ values: [Value], replyingTo serial: UInt32, from sender: String) throws -> MessageHandle {
        let call = try MessageHandle.methodCall(destination: "org.example", path: ObjectPath("/"), interface: nil, member: MemberName("M"))
        dbus_message_set_serial(call.pointer, serial)
        _ = dbus_message_set_sender(call.pointer, sender)
        let reply = try MessageHandle.methodReturn(to: call)
        try reply.append(values)
        return reply
    }

    static let numbers: [[Value]] = [
        [.uint32(0)], [.uint32(.max)], [.int32(-7)], [.boolean(true)], [.boolean(false)], [.byte(255)], [.int16(-2)], [.uint16(9)],
        [.int64(-1 << 40)], [.uint64(1 << 63)], [.double(-0.5)],
        // Each aligned after the one before: 1, 2, 4 and 8 bytes wide.
        [.byte(1), .uint16(2), .uint32(3), .uint64(4)], [.byte(1), .double(2.5), .byte(3), .int32(-4)],
    ]

    @Test func thisLibdbusLayoutIsKnown() {
        // Debian 12's libdbus 1.14: were this nil, every message the
        // outbox sends would be marshalled again first, correct but slower.
        #expect(MessageLayout.current != nil)
    }

    @Test(arguments: numbers) func aReplyCopyIsTheMessageLibdbusBuilds(_ values: [Value]) throws {
        let first = try Self.built(values.map(Self.zero), replyingTo: 3, from: ":1.77")
        let stencil = try #require(MessageStencil(copying: first.pointer, types: values.map(\.type)))
        for serial: UInt32 in [1, 0xFFFF_FFFF, 40_000] {
            let expected = try Self.built(values, replyingTo: serial, from: ":1.77").marshalled()
            // Laid out as bytes (what the outbox sends) after others.
            var laidOut: [UInt8] = [0xEE]
            #expect(stencil.write(into: &laidOut, serial: 1, replyingTo: serial, values))
            #expect(Data(laidOut.dropFirst()) == expected)
            // And read back through libdbus, the values and the serials.
            let message = try Self.demarshal(Array(laidOut.dropFirst()))
            #expect(try message.decodeBody() == values)
            #expect(dbus_message_get_reply_serial(message.pointer) == serial)
            #expect(dbus_message_get_serial(message.pointer) == 1)
        }
        // The stencil is left as it was made.
        let kept = try MessageHandle(owning: try #require(dbus_message_copy(first.pointer))).decodeBody()
        #expect(kept == values.map(Self.zero))
    }

    @Test func aSignalCopyIsTheMessageLibdbusBuilds() throws {
        let path = ObjectPath("/org/freedesktop/Notifications")
        let interface = InterfaceName("org.freedesktop.Notifications")
        let member = MemberName("NotificationClosed")
        let first = try MessageHandle.signal(path: path, interface: interface, member: member, [.uint32(1), .uint32(4)])
        let stencil = try #require(MessageStencil(copying: first.pointer, types: [.uint32, .uint32]))
        for (id, reason) in [(UInt32(2), UInt32(1)), (77_000, 3), (.max, 2)] {
            let built = try MessageHandle.signal(path: path, interface: interface, member: member, [.uint32(id), .uint32(reason)])
            let expected = try built.marshalled()
            var laidOut: [UInt8] = []
            #expect(stencil.write(into: &laidOut, serial: 1, [.uint32(id), .uint32(reason)]))
            #expect(Data(laidOut) == expected)
        }
    }

    @Test func valuesOfOtherTypesAreRefused() throws {
        let first = try Self.built([.uint32(1)], replyingTo: 3, from: ":1.5")
        let stencil = try #require(MessageStencil(copying: first.pointer, types: [.uint32]))
        var laidOut: [UInt8] = []
        #expect(!stencil.write(into: &laidOut, serial: 1, replyingTo: 4, [.int32(1)]))
        #expect(!stencil.write(into: &laidOut, serial: 1, replyingTo: 4, [.string("1")]))
        #expect(!stencil.write(into: &laidOut, serial: 1, replyingTo: 4, [.uint32(1), .uint32(2)]))
        #expect(laidOut.isEmpty)
        // A message already sent has its serial: no stencil of it.
        dbus_message_set_serial(first.pointer, 9)
        #expect(MessageStencil(copying: first.pointer, types: [.uint32]) == nil)
    }

    @Test func repliesReachEachCallerAndSignalsEachListenerWithTheirNumbers() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let first = try bus.connect()
            let second = try bus.connect()
            defer {
                first.close()
                second.close()
            }
            let d = BusName(rawValue: server.uniqueName)
            // Alternating callers: each reply is a copy of its own caller's
            // stencil, with that call's serial and sum.
            for i in Int32(0)..<40 {
                let client = i % 2 == 0 ? first : second
                let reply = try await client.call(
                    d, path: TestObject.path, interface: TestObject.name, member: MemberName("Add"), [.int32(i), .int32(1000)])
                let sum: [Value] = [.int32(i + 1000)]
                #expect(reply.body == sum)
            }
            let heard = Locked<[[Value]]>([])
            try await second.subscribe(MatchRule(interface: TestObject.name, member: MemberName("Counted"))) { message in
                heard.withLock { $0.append(message.body) }
            }
            for n in UInt32(1)...30 {
                try await first.call(d, path: TestObject.path, interface: TestObject.name, member: MemberName("Count"), [.uint32(n)])
            }
            // The signals went out before the replies; a ping from the
            // listener returns after them.
            try await second.call(d, path: TestObject.path, interface: InterfaceName("org.freedesktop.DBus.Peer"), member: MemberName("Ping"))
            let expected: [[Value]] = (UInt32(1)...30).map { n in
                [.uint32(n), .boolean(n % 2 == 1), .double(Double(n) / 2), .byte(UInt8(n))]
            }
            #expect(heard.value == expected)
        }
    }

    /// The message `bytes` hold, read by libdbus.
    static func demarshal(_ bytes: [UInt8]) throws -> MessageHandle {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let pointer = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32(buffer.count), &error) }
        }
        return MessageHandle(owning: try #require(pointer, "libdbus cannot read the bytes"))
    }

    /// A value of the same type as `value`, zero.
    static func zero(_ value: Value) -> Value {
        switch value {
        case .byte: .byte(0)
        case .boolean: .boolean(false)
        case .int16: .int16(0)
        case .uint16: .uint16(0)
        case .int32: .int32(0)
        case .uint32: .uint32(0)
        case .int64: .int64(0)
        case .uint64: .uint64(0)
        default: .double(0)
        }
    }
}
