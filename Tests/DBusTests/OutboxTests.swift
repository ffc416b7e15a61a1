import CDBus
import Foundation
import TestSupport
import Testing
@testable import DBus

/// What todayd writes to the bus's socket itself (`Outbox`): messages held
/// through a turn leave in one write, in order, each with a serial of its
/// own; what the socket does not take leaves later, whole; and Peer, no
/// longer answered by libdbus, is answered on every path.
@Suite struct OutboxTests {
    /// A socket pair: the outbox writes to the first, the test reads the second.
    final class Pair {
        let ours: Int32
        let theirs: Int32

        init(sendBuffer: Int32? = nil) throws {
            var fds: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
            ours = fds[0]
            theirs = fds[1]
            if var size = sendBuffer {
                setsockopt(ours, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
        }

        deinit {
            close(ours)
            close(theirs)
        }

        /// What one read of the other end brings, up to `limit` bytes,
        /// without waiting.
        func readOnce(limit: Int = 1 << 20) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: limit)
            let count = recv(theirs, &buffer, limit, Int32(MSG_DONTWAIT))
            return count > 0 ? Array(buffer[..<count]) : []
        }
    }

    /// `count` signals, each with its index and `padding` bytes.
    static func signals(_ count: Int, padding: Int = 0) throws -> [MessageHandle] {
        try (0..<count).map { index in
            try MessageHandle.signal(
                path: ObjectPath("/org/example/Outbox"), interface: InterfaceName("org.example.Outbox"), member: MemberName("Sent"),
                [.uint32(UInt32(index)), .bytes(Data(repeating: UInt8(index % 251), count: padding))])
        }
    }

    /// The messages in `stream`, which must hold whole messages only.
    static func messages(in stream: [UInt8]) throws -> [(serial: UInt32, body: [Value])] {
        var found: [(UInt32, [Value])] = []
        var offset = 0
        while offset < stream.count {
            let rest = Array(stream[offset...])
            let needed = rest.withUnsafeBufferPointer { raw in
                raw.withMemoryRebound(to: CChar.self) { dbus_message_demarshal_bytes_needed($0.baseAddress, Int32($0.count)) }
            }
            try #require(needed > 0 && Int(needed) <= rest.count, "a message cut short at byte \(offset)")
            var error = CDBus.DBusError()
            dbus_error_init(&error)
            defer { dbus_error_free(&error) }
            let pointer = rest.withUnsafeBufferPointer { raw in
                raw.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, needed, &error) }
            }
            let message = MessageHandle(owning: try #require(pointer, "bytes at \(offset) are not a message"))
            found.append((dbus_message_get_serial(message.pointer), try message.decodeBody()))
            offset += Int(needed)
        }
        return found
    }

    /// Reads the other end `readingAtOnce` bytes at a time (an odd amount,
    /// so that writes end mid-message), writing what the outbox has `left`
    /// between reads, until all of it is written and read; what was read.
    static func drain(_ outbox: inout Outbox, into pair: Pair, left: Outbox.Left, readingAtOnce limit: Int) -> [UInt8] {
        var left = left
        var stream: [UInt8] = []
        var rounds = 0
        while left != .nothing, rounds < 10_000 {
            stream += pair.readOnce(limit: limit)
            left = outbox.flush(connection: nil)
            rounds += 1
        }
        #expect(left == .nothing)
        while true {
            let more = pair.readOnce()
            if more.isEmpty { break }
            stream += more
        }
        return stream
    }

    @Test func aTurnsMessagesLeaveInOneWriteInOrder() throws {
        let pair = try Pair()
        var outbox = Outbox(socket: pair.ours)
        outbox.hold()
        var serials: [UInt32] = []
        for signal in try Self.signals(20, padding: 100) { serials.append(outbox.append(signal)) }
        // Held: nothing written yet.
        #expect(outbox.flush(connection: nil) == .nothing)
        #expect(pair.readOnce().isEmpty)
        #expect(outbox.release(connection: nil) == .nothing)
        #expect(outbox.isEmpty)
        // All twenty in what one read brings, in order, each its serial.
        let read = try Self.messages(in: pair.readOnce())
        #expect(read.map(\.serial) == serials)
        #expect(Set(serials).count == 20 && !serials.contains(0))
        #expect(read.map { $0.body.first } == (0..<20).map { .uint32(UInt32($0)) })
        // Not held, a message leaves at once.
        let one = try Self.signals(1)[0]
        _ = outbox.append(one)
        #expect(outbox.flush(connection: nil) == .nothing)
        #expect(try Self.messages(in: pair.readOnce()).count == 1)
    }

    @Test func whatTheSocketDoesNotTakeLeavesLaterWhole() throws {
        let pair = try Pair(sendBuffer: 4096)
        var outbox = Outbox(socket: pair.ours)
        let sent = try Self.signals(300, padding: 1000)
        outbox.hold()
        for signal in sent { _ = outbox.append(signal) }
        let left = outbox.release(connection: nil)
        #expect(left == .waitingForSocket, "300 KiB fit a socket of 4 KiB")
        let read = try Self.messages(in: Self.drain(&outbox, into: pair, left: left, readingAtOnce: 1237))
        #expect(read.count == 300)
        for (index, message) in read.enumerated() {
            #expect(message.body == [.uint32(UInt32(index)), .bytes(Data(repeating: UInt8(index % 251), count: 1000))])
        }
    }

    @Test func stencilCopiesAndBuiltMessagesLeaveInTheirOrder() throws {
        // Built messages are written from libdbus's own bytes.
        try #require(MessageLayout.current != nil)
        let pair = try Pair(sendBuffer: 4096)
        var outbox = Outbox(socket: pair.ours)
        let path = ObjectPath("/org/example/Outbox")
        let first = try MessageHandle.signal(path: path, interface: InterfaceName("org.example.Outbox"), member: MemberName("N"), [.uint32(0)])
        let stencil = try #require(MessageStencil(copying: first.pointer, types: [.uint32]))
        outbox.hold()
        let built = try Self.signals(400, padding: 300)
        for (index, signal) in built.enumerated() {
            _ = outbox.append(signal)
            let fits = outbox.append(stencil, [.uint32(UInt32(index))])
            #expect(fits)
        }
        let refused = !outbox.append(stencil, [.string("not a number")])
        #expect(refused)
        let left = outbox.release(connection: nil)
        let read = try Self.messages(in: Self.drain(&outbox, into: pair, left: left, readingAtOnce: 999))
        #expect(read.count == 800)
        #expect(Set(read.map(\.serial)).count == 800)
        for index in 0..<400 where read.count == 800 {
            #expect(read[2 * index].body.first == .uint32(UInt32(index)) && read[2 * index].body.count == 2)
            #expect(read[2 * index + 1].body == [.uint32(UInt32(index))])
        }
    }

    @Test func aClosedOutboxWritesNothing() throws {
        let pair = try Pair()
        var outbox = Outbox(socket: pair.ours)
        outbox.hold()
        _ = outbox.append(try Self.signals(1)[0])
        outbox.forget()
        #expect(outbox.descriptor == nil)
        #expect(outbox.release(connection: nil) == .nothing)
        #expect(outbox.append(try Self.signals(1)[0]) == 0)
        #expect(pair.readOnce().isEmpty)
    }

    @Test func peerIsAnsweredOnEveryPath() async throws {
        try await withPrivateBus { bus, server in
            let client = try bus.connect()
            defer { client.close() }
            let peer = try #require(BusName(rawValue: server.uniqueName))
            for path in [ObjectPath("/"), ObjectPath("/nothing/here")] {
                let reply = try await client.call(
                    peer, path: path, interface: InterfaceName("org.freedesktop.DBus.Peer"),
                    member: MemberName("Ping"), [])
                #expect(reply.body.isEmpty)
            }
            let id = try await client.call(
                peer, path: ObjectPath("/nothing/here"), interface: InterfaceName("org.freedesktop.DBus.Peer"),
                member: MemberName("GetMachineId"), [])
            #expect(id.body.first?.string?.count == 32)
        }
    }
}
