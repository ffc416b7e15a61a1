/* replay-floor: the fastest a reply of a given size and shape travels on
 * this machine's bus, the floor for a service's large answers.
 *
 *   replay-floor NAME DEST PATH IFACE METHOD
 *
 * Calls METHOD (no arguments) on DEST once, keeps its reply, then owns NAME
 * on the session bus and answers every method call with a copy of that
 * reply, addressed to the caller: the same bytes the service sent, with no
 * work of its own. Ends when the bus goes away. */
#include <dbus/dbus.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: replay-floor NAME DEST PATH IFACE METHOD\n");
        return 2;
    }
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
    if (!bus) {
        fprintf(stderr, "replay-floor: cannot reach the session bus: %s\n", error.message);
        return 1;
    }
    dbus_connection_set_exit_on_disconnect(bus, FALSE);
    DBusMessage *call = dbus_message_new_method_call(argv[2], argv[3], argv[4], argv[5]);
    if (!call) {
        fprintf(stderr, "replay-floor: '%s %s %s %s' is not a valid call\n", argv[2], argv[3], argv[4], argv[5]);
        return 2;
    }
    DBusMessage *kept = dbus_connection_send_with_reply_and_block(bus, call, 60000, &error);
    dbus_message_unref(call);
    if (!kept) {
        fprintf(stderr, "replay-floor: %s.%s failed: %s\n", argv[4], argv[5], error.message);
        return 1;
    }
    if (dbus_bus_request_name(bus, argv[1], DBUS_NAME_FLAG_DO_NOT_QUEUE, &error) != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "replay-floor: cannot own %s\n", argv[1]);
        return 1;
    }
    while (dbus_connection_read_write(bus, -1)) {
        DBusMessage *message;
        while ((message = dbus_connection_pop_message(bus))) {
            if (dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_CALL && !dbus_message_get_no_reply(message)) {
                DBusMessage *reply = dbus_message_copy(kept);
                dbus_message_set_reply_serial(reply, dbus_message_get_serial(message));
                dbus_message_set_destination(reply, dbus_message_get_sender(message));
                dbus_message_set_sender(reply, NULL);
                dbus_connection_send(bus, reply, NULL);
                dbus_message_unref(reply);
            }
            dbus_message_unref(message);
        }
    }
    return 0;
}
