// libFuzzer target: bytes -> dbus_message_demarshal -> our decoding of
// every D-Bus type (from the bytes, and through libdbus's iterators, which
// must agree) -> our encoding again. What libdbus accepts must decode
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
    // The body read from its bytes is the body libdbus's iterators read.
    let throughIterators = try? handle.decodeBodyThroughIterators()
    guard let message = try? handle.decode() else {
        precondition(throughIterators == nil || handle.signature.contains("h"), "libdbus reads a body the wire reader refuses")
        return 0
    }
    if !handle.signature.contains("h") {
        precondition(throughIterators.map { "\($0)" == "\(message.body)" } ?? false, "the wire reader and libdbus read different values")
    }
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
