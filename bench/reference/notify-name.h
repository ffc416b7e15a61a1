/* What notify-floor and banner-floor share: the session bus, connected
 * privately, with org.freedesktop.Notifications owned (no queueing: a
 * floor measured behind another server would measure nothing). */
#ifndef NOTIFY_NAME_H
#define NOTIFY_NAME_H
#include <dbus/dbus.h>
#include <stdio.h>

static const char *const notifications_name = "org.freedesktop.Notifications";

/* The bus, with the name owned; NULL, with the reason on standard error
 * after `program`'s name, where either cannot be had. */
static DBusConnection *own_notifications_name(const char *program) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
    if (!bus) {
        fprintf(stderr, "%s: cannot reach the session bus: %s\n", program, error.message);
        return NULL;
    }
    dbus_connection_set_exit_on_disconnect(bus, FALSE);
    int owned = dbus_bus_request_name(bus, notifications_name, DBUS_NAME_FLAG_DO_NOT_QUEUE, &error);
    if (owned != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "%s: cannot own %s: %s\n", program, notifications_name, dbus_error_is_set(&error) ? error.message : "another owner");
        return NULL;
    }
    return bus;
}

#endif
