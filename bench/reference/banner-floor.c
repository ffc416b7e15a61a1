/* banner-floor: the fastest a notification becomes a window on screen on
 * this machine, the floor todayd's banners are measured against.
 *
 *   banner-floor
 *
 * Owns org.freedesktop.Notifications on the session bus
 * (DBUS_SESSION_BUS_ADDRESS) and, on the X display (DISPLAY), keeps one
 * override-redirect window of 380x120, made and filled once at start.
 * Notify(susssasa{sv}i) answers the next number of a counter, then maps
 * that window; CloseNotification unmaps it. It draws no text and lays
 * nothing out: what is left is the call, the answer and the map request.
 * Ends when the bus goes away. */
#include <X11/Xlib.h>
#include "notify-name.h"
#include <stdint.h>


int main(void) {
    Display *display = XOpenDisplay(NULL);
    if (!display) {
        fprintf(stderr, "banner-floor: cannot open the X display\n");
        return 1;
    }
    int screen = DefaultScreen(display);
    XSetWindowAttributes attributes = {.override_redirect = True, .background_pixel = WhitePixel(display, screen)};
    Window window = XCreateWindow(display, RootWindow(display, screen), DisplayWidth(display, screen) - 392, 12, 380, 120, 0,
                                  CopyFromParent, InputOutput, CopyFromParent, CWOverrideRedirect | CWBackPixel, &attributes);
    XFlush(display);

    DBusConnection *bus = own_notifications_name("banner-floor");
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
            int map = 0, unmap = 0;
            if (dbus_message_is_method_call(message, notifications_name, "Notify") && dbus_message_has_signature(message, "susssasa{sv}i")) {
                reply = dbus_message_new_method_return(message);
                counter = counter == UINT32_MAX ? 1 : counter + 1;
                dbus_message_append_args(reply, DBUS_TYPE_UINT32, &counter, DBUS_TYPE_INVALID);
                map = 1;
            } else if (dbus_message_is_method_call(message, notifications_name, "CloseNotification")) {
                reply = dbus_message_new_method_return(message);
                unmap = 1;
            } else {
                reply = dbus_message_new_error(message, DBUS_ERROR_UNKNOWN_METHOD, "banner-floor answers Notify and CloseNotification only");
            }
            if (!dbus_message_get_no_reply(message)) dbus_connection_send(bus, reply, NULL);
            dbus_connection_flush(bus);
            dbus_message_unref(reply);
            dbus_message_unref(message);
            if (map) XMapRaised(display, window);
            if (unmap) XUnmapWindow(display, window);
            if (map || unmap) XFlush(display);
        }
    }
    return 0;
}
