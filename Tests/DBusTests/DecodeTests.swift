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
