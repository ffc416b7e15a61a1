/* notify-floor: the fastest a notification server answers on this machine,
 * the floor todayd's Notify is measured against.
 *
 *   notify-floor
 *
 * Owns org.freedesktop.Notifications on the session bus
 * (DBUS_SESSION_BUS_ADDRESS) and answers Notify(susssasa{sv}i) with the
 * next number of a counter, reading nothing of the notification, keeping
 * nothing and showing nothing; GetServerInformation says who it is, and
 * anything else is UnknownMethod. Ends when the bus goes away. */
#include "notify-name.h"
#include <stdint.h>


int main(void) {
    DBusConnection *bus = own_notifications_name("notify-floor");
    if (!bus) return 1;
    dbus_uint32_t counter = 0;
    while (dbus_connection_read_write(bus, -1)) {
        DBusMessage *message;
        while ((message = dbus_connection_pop_message(bus))) {
            if (dbus_message_get_type(message) != DBUS_MESSAGE_TYPE_METHOD_CALL) {
                dbus_message_unref(message);
                continue;
            }
            DBusMessage *reply;
            if (dbus_message_is_method_call(message, notifications_name, "Notify") && dbus_message_has_signature(message, "susssasa{sv}i")) {
                reply = dbus_message_new_method_return(message);
                counter = counter == UINT32_MAX ? 1 : counter + 1;
                dbus_message_append_args(reply, DBUS_TYPE_UINT32, &counter, DBUS_TYPE_INVALID);
            } else if (dbus_message_is_method_call(message, notifications_name, "GetServerInformation")) {
                const char *who = "notify-floor", *version = "1", *spec = "1.2";
                reply = dbus_message_new_method_return(message);
                dbus_message_append_args(reply, DBUS_TYPE_STRING, &who, DBUS_TYPE_STRING, &who, DBUS_TYPE_STRING, &version,
                                         DBUS_TYPE_STRING, &spec, DBUS_TYPE_INVALID);
            } else {
                reply = dbus_message_new_error(message, DBUS_ERROR_UNKNOWN_METHOD, "notify-floor answers Notify only");
            }
            if (!dbus_message_get_no_reply(message)) dbus_connection_send(bus, reply, NULL);
            dbus_message_unref(reply);
            dbus_message_unref(message);
        }
    }
    return 0;
}
