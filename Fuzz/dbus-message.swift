// libFuzzer target: bytes -> dbus_message_demarshal -> our decoding of
// every D-Bus type -> our encoding again. What libdbus accepts must decode
// without a crash, and encode back to the same values.
import CDBus
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBusMessage(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let raw = bytes.withMemoryRebound(to: CChar.self, capacity: count) { dbus_message_demarshal($0, Int32(count), &error) }
    guard let raw else { return 0 }
    let handle = MessageHandle(owning: raw)
    guard let message = try? handle.decode() else { return 0 }
    guard
        let copy = try? MessageHandle.signal(
            path: ObjectPath("/fuzz"), interface: InterfaceName("org.example.Fuzz"), member: MemberName("Copy"))
    else { return 0 }
    do {
        try copy.append(message.body)
    } catch {
        preconditionFailure("values decoded from a valid message do not encode again: \(error)")
    }
    precondition(copy.signature == message.signature, "signature \(copy.signature) is not \(message.signature)")
    let again = try? copy.decodeBody()
    precondition(again.map { "\($0)" == "\(message.body)" } ?? false, "a round trip changed the values")
    return 0
}
