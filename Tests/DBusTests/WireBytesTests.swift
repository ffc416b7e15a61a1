import CDBus
import Foundation
import Testing
@testable import DBus

/// Values kept as bytes (`Value.wireBytes`: a notification's hints, a
/// GNotification's targets) are laid out by todayd's own `WireWriter`; the
/// bytes are the ones libdbus marshals for the same message, and they read
/// back through libdbus as the value they were.
@Suite struct WireBytesTests {
    static let picture = Value.structure([.int32(2), .int32(1), .int32(8), .boolean(true), .int32(8), .int32(4), .bytes(Data(0..<8))])

    static let values: [Value] = [
        .byte(7), .boolean(true), .boolean(false), .int16(-2), .uint16(65535), .int32(-5), .uint32(4_000_000_000),
        .int64(-1 << 40), .uint64(1 << 63), .double(3.25),
        .string(""), .string("héllo wörld, a string past the first alignment"), .objectPath(ObjectPath("/io/github/todayd")),
        .signature(Signature([.dictionary(key: .string, value: .variant)])),
        .bytes(Data([1, 2, 3])), .bytes(Data()),
        // An empty array of 8-byte elements is still padded to 8.
        .array(.uint64, []), .array(.uint64, [.uint64(1), .uint64(2)]), .array(.string, [.string("a"), .string("bc")]),
        .array(.structure([.byte, .uint64]), [.structure([.byte(1), .uint64(2)]), .structure([.byte(3), .uint64(4)])]),
        .vardict([]),
        .vardict([
            ("urgency", .byte(1)), ("category", .string("email.arrived")), ("value", .int32(40)), ("resident", .boolean(true)),
            ("image-data", picture), ("x-kde-urls", .strings(["file:///a", "file:///b"])),
        ]),
        .dictionary(key: .uint32, value: .string, [DictionaryEntry(.uint32(1), .string("x")), DictionaryEntry(.uint32(2), .string("yz"))]),
        .variant(.variant(.uint16(3))),
        .structure([.string("a"), .array(.int64, [.int64(5)]), .variant(.double(1.5)), .byte(9)]),
    ]

    /// What libdbus marshals for a signal holding `value`, as `wireBytes`
    /// was made before it had a writer of its own.
    static func libdbus(_ value: Value) throws -> Data {
        let message = try MessageHandle.signal(
            path: ObjectPath("/io/github/todayd/Value"), interface: InterfaceName("io.github.todayd.Value"), member: MemberName("V"))
        try message.append([value])
        return try message.marshalled()
    }

    @Test(arguments: values) func theBytesAreLibdbussAndReadBack(_ value: Value) throws {
        let bytes = try value.wireBytes()
        #expect(bytes == (try Self.libdbus(value)))
        #expect(try Value(wireBytes: bytes) == value)
    }

    @Test func whatCannotBeKeptIsRefused() {
        #expect(throws: DBusError.self) { try Value.string("a\0b").wireBytes() }
        #expect(throws: DBusError.self) { try Value.array(.string, [.uint32(1)]).wireBytes() }
        #expect(throws: DBusError.self) { try Value.structure([]).wireBytes() }
    }
}

extension MessageHandle {
    /// The message's bytes as libdbus marshals them, with serial 1.
    func marshalled() throws -> Data {
        dbus_message_set_serial(pointer, 1)
        var bytes: UnsafeMutablePointer<CChar>?
        var count: Int32 = 0
        guard dbus_message_marshal(pointer, &bytes, &count) != 0, let bytes else { throw DBusError(.noMemory, "marshal") }
        defer { dbus_free(bytes) }
        return Data(bytes: bytes, count: Int(count))
    }
}
