import CDBus
import Testing
@testable import DBus

/// Replies as libdbus builds them, for the tests that compare the
/// connection's own replies and stencils with them.
extension MessageHandle {
    /// The corresponding C function is `dbus_message_new_method_return`.
    static func methodReturn(to call: MessageHandle) throws -> MessageHandle {
        MessageHandle(owning: try #require(dbus_message_new_method_return(call.pointer)))
    }

    /// The corresponding C function is `dbus_message_new_error`.
    static func error(to call: MessageHandle, _ error: DBus.DBusError) throws -> MessageHandle {
        MessageHandle(owning: try #require(dbus_message_new_error(call.pointer, error.name.rawValue, error.message)))
    }
}
