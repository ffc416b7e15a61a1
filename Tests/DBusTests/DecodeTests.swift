import CDBus
import Foundation
import Testing
@testable import DBus

/// Messages as they arrive from outside: decoded exactly, or refused.
@Suite struct DecodeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A body naming a unix fd the message does not carry (found by the
    /// dbus-message fuzz target) is refused, not turned into a bogus fd.
    @Test func aMissingUnixFDIsRefused() throws {
        let bytes = try Data(contentsOf: Self.root.appendingPathComponent("Fuzz/regressions/dbus-message/missing-unix-fd"))
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let raw = bytes.withUnsafeBytes { buffer in
            dbus_message_demarshal(buffer.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(buffer.count), &error)
        }
        guard let raw else {
            Issue.record("libdbus refused the message")
            return
        }
        let handle = MessageHandle(owning: raw)
        #expect(handle.signature.contains("h"))
        #expect(throws: DBusError.self) { try handle.decode() }
        // Received by a connection and read as a method declaring those
        // types (a call, once routed), the same: refused.
        let types = try DBusType.parseList(handle.signature)
        let method = Method(MemberName("M"), in: types.enumerated().map { Argument("a\($0.offset)", $0.element) })
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
        copy.copyBytes(from: bytes)
        let received = try ReceivedMessage(taking: copy) { _ in [] }
        #expect(throws: DBusError.self) { try received.decodeBody(as: method) }
    }
}

/// A body read from its bytes (`WireReader`) is what libdbus's iterators
/// read, for every type, in both byte orders.
@Suite struct WireReaderTests {
    /// Every type, nested, with empty containers (whose padding still
    /// follows their length) and a variant of each kind.
    static let body: [Value] = [
        .byte(7), .boolean(true), .int16(-2), .uint16(65535), .int32(-70000), .uint32(4_000_000_000), .int64(-1 << 40),
        .uint64(1 << 63), .double(-2.5), .string("héllo ✓"), .string(""), .objectPath(ObjectPath("/a/b")),
        .signature(Signature(["a{sv}", "(iu)"])), .bytes(Data([0, 1, 255])), .bytes(Data()),
        .array(.structure([.int64, .string]), []),
        .array(.structure([.byte, .int64]), [.structure([.byte(1), .int64(2)]), .structure([.byte(3), .int64(4)])]),
        .vardict([
            ("s", .string("x")), ("u", .uint32(1)), ("y", .byte(2)), ("d", .double(0.5)), ("as", .strings(["a", "", "c"])),
            ("st", .structure([.string("k"), .variant(.boolean(false))])), ("nested", .vardict([("n", .int16(3))])),
        ]),
        .dictionary(key: .uint32, value: .array(.string), [DictionaryEntry(.uint32(9), .strings([]))]),
        .array(.uint32, [.uint32(1), .uint32(4_000_000_000)]), .array(.int64, []), .array(.double, [.double(0.25)]),
        .structure([.byte(1), .array(.int64, [.int64(-3)])]),
        .structure([.byte(1), .structure([.uint16(2), .double(3)])]),
    ]

    @Test func everyTypeReadsAsLibdbusReadsIt() throws {
        let message = try MessageHandle.signal(path: ObjectPath("/t"), interface: InterfaceName("org.example.T"), member: MemberName("M"))
        try message.append(Self.body)
        dbus_message_set_serial(message.pointer, 1)
        let fromBytes = try message.decodeBody()
        let throughIterators = try message.decodeBodyThroughIterators()
        #expect(fromBytes == Self.body)
        #expect(throughIterators == Self.body)
    }

    /// A big-endian signal (as a client on another machine may send),
    /// built by hand: header fields path (`/t`), interface
    /// (`org.example.T`), member (`M`), signature; serial 1; and its body's values.
    static func bigEndianSignal() -> (bytes: [UInt8], body: [Value]) {
        var bytes: [UInt8] = [UInt8(ascii: "B"), 4, 0, 1]
        func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
        var fields: [UInt8] = []
        func field(_ code: UInt8, _ type: UInt8, _ text: String) {
            while fields.count % 8 != 0 { fields.append(0) }
            fields += [code, 1, type, 0]
            if type == UInt8(ascii: "g") { fields.append(UInt8(text.utf8.count)) } else { fields += u32(UInt32(text.utf8.count)) }
            fields += Array(text.utf8) + [0]
        }
        field(1, UInt8(ascii: "o"), "/t")
        field(2, UInt8(ascii: "s"), "org.example.T")
        field(3, UInt8(ascii: "s"), "M")
        field(8, UInt8(ascii: "g"), "qusa{sv}")
        // q at 0, u at 4, s at 8 ("abc": 4 + 4 bytes), a{sv} at 16: its
        // length, padding to 8, one entry ("k" → variant u 5).
        var body: [UInt8] = [0x12, 0x34, 0, 0] + u32(0xDEAD_BEEF) + u32(3) + Array("abc".utf8) + [0]
        let entry: [UInt8] = u32(1) + [UInt8(ascii: "k"), 0, 1, UInt8(ascii: "u"), 0, 0, 0, 0] + u32(5)
        body += u32(UInt32(entry.count)) + [0, 0, 0, 0]
        body += entry
        bytes += u32(UInt32(body.count)) + u32(1) + u32(UInt32(fields.count))
        bytes += fields
        while bytes.count % 8 != 0 { bytes.append(0) }
        bytes += body
        return (bytes, [.uint16(0x1234), .uint32(0xDEAD_BEEF), .string("abc"), .vardict([("k", .uint32(5))])])
    }

    @Test func aBigEndianBodyReads() throws {
        let (bytes, expected) = Self.bigEndianSignal()
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let raw = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32($0.count), &error) }
        }
        guard let raw else {
            Issue.record("libdbus refused the message: \(String(cString: error.message))")
            return
        }
        let handle = MessageHandle(owning: raw)
        #expect(try handle.decodeBody() == expected)
        #expect(try handle.decodeBodyThroughIterators() == expected)
    }
}

/// Introspection XML as other programs write it.
@Suite struct IntrospectionTests {
    @Test func theInterfacesAnObjectDeclares() {
        let xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <!-- <interface name="org.example.Commented"/> -->
            <node>
              <interface name='org.freedesktop.DBus.Properties'><method name="Get"/></interface>
              <interface
                 name="org.freedesktop.Application">
                <method name="Activate"><arg type="a{sv}" name="platform_data" direction="in"/></method>
                <annotation name="org.example.Note" value="a &gt; b"/>
              </interface>
              <node name="org.freedesktop.Elsewhere"/>
              <interface name="not a name"/>
            </node>
            """
        #expect(Introspection.interfaces(in: xml).map(\.rawValue) == ["org.freedesktop.DBus.Properties", "org.freedesktop.Application"])
        // A method or argument named like the interface is not it.
        #expect(Introspection.interfaces(in: #"<node><interface name="a.B"><method name="org.freedesktop.Application"/></interface></node>"#).map(\.rawValue) == ["a.B"])
        #expect(Introspection.interfaces(in: "<node><interface name=\"a.B\"").isEmpty)
    }

    @Test func aReplyOfAnotherShapeSaysSo() throws {
        let reply = Message(
            kind: .methodReturn, serial: 2, replySerial: 1, sender: ":1.1", destination: nil, path: nil, interface: nil, member: nil,
            errorName: nil, signature: "u", body: [.uint32(3)], noReplyExpected: false)
        #expect(try reply.value(UInt32.self) == 3)
        #expect(throws: DBus.DBusError.self) { try reply.value(String.self) }
        do {
            _ = try reply.value(String.self, answering: "ListWidgets")
        } catch let error as DBus.DBusError {
            #expect(error.message == "the reply to ListWidgets came as 'u' where 's' was expected: the other side speaks another version")
        }
        let pair = Message(
            kind: .signal, serial: 3, replySerial: 0, sender: ":1.1", destination: nil, path: nil, interface: "org.example.I", member: "Changed",
            errorName: nil, signature: "sb", body: [.string("x"), .boolean(true)], noReplyExpected: true)
        let (text, flag) = try pair.values(String.self, Bool.self)
        #expect(text == "x" && flag)
        #expect(throws: DBus.DBusError.self) { try pair.values(String.self) }
    }
}

/// Header strings handed out again: the same text, whichever was kept.
@Suite struct HeaderStringsTests {
    @Test func longStringsComeBackAsTheyWereAndShortOnesAsMade() {
        let strings = HeaderStrings()
        let texts = ["org.freedesktop.Notifications", "/org/freedesktop/Notifications", "Notify", "héllo wörld, more than fifteen"]
            + (0..<40).map { "org.example.Interface\($0)" }
        // Twice round, more of them than are kept: each comes back as it went in.
        for _ in 0..<2 {
            for text in texts {
                let back = text.withCString { strings.string($0) }
                #expect(back == text)
            }
        }
        // A string that is a prefix of a kept one is not taken for it.
        let prefix = "org.freedesktop.Notification"
        #expect(prefix.withCString { strings.string($0) } == prefix)
    }
}
