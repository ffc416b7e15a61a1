// libFuzzer target: bytes -> dbus_message_demarshal -> our decoding of
// every D-Bus type (from the bytes, and through libdbus's iterators, which
// must agree) -> our encoding again. What libdbus accepts must decode
// without a crash, and encode back to the same values; and the
// connection's own reading of the same bytes (`ReceivedMessage`, which
// reads what the bus sends) must find the header and body libdbus finds.
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
    compareReceived(UnsafeRawBufferPointer(start: bytes, count: count), with: message)
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

/// The message `bytes` as the connection reads it, against `message` as
/// libdbus read it: the same header, and the same body where it carries no
/// descriptor (none come with the bytes here).
func compareReceived(_ bytes: UnsafeRawBufferPointer, with message: Message) {
    guard let size = ReceivedMessage.size(fixedHeader: bytes), size <= bytes.count else {
        preconditionFailure("libdbus read a message whose lengths the connection refuses")
    }
    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
    copy.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<size]))
    let received: ReceivedMessage
    do {
        received = try ReceivedMessage(taking: copy) { _ in [] }
    } catch is ReceivedMessage.UnknownKind {
        // A kind later versions may add: libdbus keeps it, the connection skips it.
        precondition(!(1...4).contains(bytes[1]), "the connection took a known kind for one to come")
        return
    } catch {
        preconditionFailure("libdbus read a message the connection refuses: \(error)")
    }
    let header = received.header
    precondition(
        header.kind == message.kind && header.serial == message.serial && header.replySerial == message.replySerial
            && header.sender == message.sender && header.destination == message.destination && header.path == message.path
            && header.interface == message.interface && header.member == message.member && header.errorName == message.errorName
            && header.signature == message.signature && header.noReplyExpected == message.noReplyExpected,
        "the connection and libdbus read different headers")
    guard !message.signature.contains("h") else { return }
    precondition((try? received.decodeBody()).map { "\($0)" == "\(message.body)" } ?? false, "the connection and libdbus read different bodies")
}
