import CDBus
import FoundationEssentials
import Glibc

/// Values kept on disk exactly as D-Bus carries them: a hint or an action's
/// target read back after a restart is the same value of the same type,
/// which a property list (no unsigned, no 16-bit, no variants) cannot promise.
extension Value {
    /// The value in D-Bus's wire format (a message that holds only it).
    /// The corresponding C function is `dbus_message_marshal`.
    public func wireBytes() throws -> Data {
        let message = try MessageHandle.signal(
            path: ObjectPath("/io/github/todayd/Value"), interface: InterfaceName("io.github.todayd.Value"), member: MemberName("V"))
        try message.append([self])
        // A message read back must have a serial.
        dbus_message_set_serial(message.pointer, 1)
        var bytes: UnsafeMutablePointer<CChar>?
        var count: Int32 = 0
        guard dbus_message_marshal(message.pointer, &bytes, &count) != 0, let bytes else {
            throw DBusError(.noMemory, "out of memory marshalling a value")
        }
        defer { dbus_free(bytes) }
        return Data(bytes: bytes, count: Int(count))
    }

    /// The value `wireBytes` wrote; throws for anything else.
    /// The corresponding C function is `dbus_message_demarshal`.
    public init(wireBytes data: Data) throws {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let pointer = data.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count <= Int(Int32.max) else { return nil }
            return dbus_message_demarshal(base, Int32(raw.count), &error)
        }
        guard let pointer else { throw Connection.convert(&error, fallback: "not a value in D-Bus's wire format") }
        let body = try MessageHandle(owning: pointer).decodeBody()
        guard body.count == 1 else { throw DBusError.invalidArgs("the kept bytes hold \(body.count) values, not one") }
        self = body[0]
    }
}
