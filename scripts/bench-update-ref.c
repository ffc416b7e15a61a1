/* The least a PerformUpdate over D-Bus can cost: a libdbus service that,
 * on any method call, starts the provider as bench-spawn does (the same
 * bench_run_provider, from bench-provider.h), announces the outcome as todayd
 * does (PropertiesChanged of the widget's LastUpdated, then Updated) and
 * replies with the result. No limits, no parsing, no threads: the floor
 * that todayd's figure is compared with, on the same bus in the same run.
 *   bench-update-ref NAME EXECUTABLE */
#include <dbus/dbus.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "bench-provider.h"

static const char *executable;

static void announce(DBusConnection *connection, const char *path, const char *result) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    dbus_uint64_t updated = (dbus_uint64_t)now.tv_sec * 1000000 + (dbus_uint64_t)now.tv_nsec / 1000;
    const char *interface = "io.github.todayd.Today1.Widget", *name = "LastUpdated";
    DBusMessage *changed = dbus_message_new_signal(path, "org.freedesktop.DBus.Properties", "PropertiesChanged");
    DBusMessageIter it, array, entry, variant, none;
    dbus_message_iter_init_append(changed, &it);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &interface);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &array);
    dbus_message_iter_open_container(&array, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &name);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "t", &variant);
    dbus_message_iter_append_basic(&variant, DBUS_TYPE_UINT64, &updated);
    dbus_message_iter_close_container(&entry, &variant);
    dbus_message_iter_close_container(&array, &entry);
    dbus_message_iter_close_container(&it, &array);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &none);
    dbus_message_iter_close_container(&it, &none);
    dbus_connection_send(connection, changed, NULL);
    dbus_message_unref(changed);
    DBusMessage *signal = dbus_message_new_signal(path, interface, "Updated");
    dbus_message_append_args(signal, DBUS_TYPE_STRING, &result, DBUS_TYPE_INVALID);
    dbus_connection_send(connection, signal, NULL);
    dbus_message_unref(signal);
}

static DBusHandlerResult on_message(DBusConnection *connection, DBusMessage *message, void *data) {
    (void)data;
    if (dbus_message_get_type(message) != DBUS_MESSAGE_TYPE_METHOD_CALL) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    bench_run_provider(executable);
    const char *result = "no-data";
    announce(connection, dbus_message_get_path(message), result);
    DBusMessage *reply = dbus_message_new_method_return(message);
    dbus_message_append_args(reply, DBUS_TYPE_STRING, &result, DBUS_TYPE_INVALID);
    dbus_connection_send(connection, reply, NULL);
    dbus_message_unref(reply);
    return DBUS_HANDLER_RESULT_HANDLED;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: bench-update-ref NAME EXECUTABLE\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    executable = argv[2];
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_bus_get(DBUS_BUS_SESSION, &error);
    if (!connection) {
        fprintf(stderr, "%s\n", error.message);
        return 1;
    }
    dbus_connection_set_exit_on_disconnect(connection, TRUE);
    if (dbus_bus_request_name(connection, argv[1], DBUS_NAME_FLAG_DO_NOT_QUEUE, &error) !=
        DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "could not own %s\n", argv[1]);
        return 1;
    }
    dbus_connection_add_filter(connection, on_message, NULL, NULL);
    while (dbus_connection_read_write_dispatch(connection, -1)) {}
    return 0;
}
