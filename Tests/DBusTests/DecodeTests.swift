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
