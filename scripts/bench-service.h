/* What the C references that stand in for todayd share: a libdbus
 * service owning NAME on the session bus, every message to HANDLER, and
 * a method reply carrying one result string. */
#ifndef BENCH_SERVICE_H
#define BENCH_SERVICE_H

#include <dbus/dbus.h>
#include <stdio.h>

/* Replies to CALL with (s RESULT). */
static void bench_reply_result(DBusConnection *connection, DBusMessage *call, const char *result) {
    DBusMessage *reply = dbus_message_new_method_return(call);
    dbus_message_append_args(reply, DBUS_TYPE_STRING, &result, DBUS_TYPE_INVALID);
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
}

/* Owns NAME and dispatches to HANDLER until the bus goes; 1 when the bus
 * or the name cannot be had, with the reason on standard error. */
static int bench_serve(const char *program, const char *name, DBusHandleMessageFunction handler) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_bus_get(DBUS_BUS_SESSION, &error);
    if (!connection) {
        fprintf(stderr, "%s: %s\n", program, error.message);
        return 1;
    }
    dbus_connection_set_exit_on_disconnect(connection, TRUE);
    if (dbus_bus_request_name(connection, name, DBUS_NAME_FLAG_DO_NOT_QUEUE, &error) != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "%s: could not own %s\n", program, name);
        return 1;
    }
    dbus_connection_add_filter(connection, handler, NULL, NULL);
    while (dbus_connection_read_write_dispatch(connection, -1)) {}
    return 0;
}

#endif
