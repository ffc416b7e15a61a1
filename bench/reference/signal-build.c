/* signal-build: what building NotificationClosed(id, reason) costs in
 * libdbus, each way the library allows, with no bus and nothing sent.
 *
 *   signal-build [COUNT]
 *
 * Builds COUNT signals each way and prints the nanoseconds a signal:
 *   new-signal   dbus_message_new_signal, then the two arguments (what most
 *                services do);
 *   body-first   dbus_message_new, the two arguments, then path, interface
 *                and member (what todayd and notify-floor --keep do);
 *   demarshal    the whole message written beforehand as bytes, the id
 *                patched in, and dbus_message_demarshal reading it back.
 * Under `valgrind --tool=callgrind` the functions new_signal, body_first
 * and demarshal give the instructions of each. */
#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *path = "/org/freedesktop/Notifications";
static const char *interface = "org.freedesktop.Notifications";
static const char *member = "NotificationClosed";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void check(DBusMessage *message, const char *way) {
    if (!message) {
        fprintf(stderr, "signal-build: %s: out of memory\n", way);
        exit(1);
    }
}

__attribute__((noinline)) static void new_signal(dbus_uint32_t id) {
    dbus_uint32_t reason = 4;
    DBusMessage *signal = dbus_message_new_signal(path, interface, member);
    check(signal, "new-signal");
    dbus_message_append_args(signal, DBUS_TYPE_UINT32, &id, DBUS_TYPE_UINT32, &reason, DBUS_TYPE_INVALID);
    dbus_message_unref(signal);
}

__attribute__((noinline)) static void body_first(dbus_uint32_t id) {
    dbus_uint32_t reason = 4;
    DBusMessage *signal = dbus_message_new(DBUS_MESSAGE_TYPE_SIGNAL);
    check(signal, "body-first");
    dbus_message_append_args(signal, DBUS_TYPE_UINT32, &id, DBUS_TYPE_UINT32, &reason, DBUS_TYPE_INVALID);
    dbus_message_set_path(signal, path);
    dbus_message_set_interface(signal, interface);
    dbus_message_set_member(signal, member);
    dbus_message_unref(signal);
}

static char *prepared;
static int prepared_length;

__attribute__((noinline)) static void demarshal(dbus_uint32_t id) {
    DBusError error;
    dbus_error_init(&error);
    /* The body is the last 8 bytes: id, then reason. */
    memcpy(prepared + prepared_length - 8, &id, 4);
    DBusMessage *signal = dbus_message_demarshal(prepared, prepared_length, &error);
    if (!signal) {
        fprintf(stderr, "signal-build: demarshal: %s\n", error.message);
        exit(1);
    }
    dbus_message_unref(signal);
}

int main(int argc, char **argv) {
    long count = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
    if (count <= 0) {
        fprintf(stderr, "usage: signal-build [COUNT]\n");
        return 2;
    }
    dbus_uint32_t id = 1, reason = 4;
    DBusMessage *model = dbus_message_new_signal(path, interface, member);
    check(model, "model");
    dbus_message_append_args(model, DBUS_TYPE_UINT32, &id, DBUS_TYPE_UINT32, &reason, DBUS_TYPE_INVALID);
    dbus_message_set_serial(model, 1);
    if (!dbus_message_marshal(model, &prepared, &prepared_length)) {
        fprintf(stderr, "signal-build: cannot marshal the model\n");
        return 1;
    }
    struct {
        const char *name;
        void (*build)(dbus_uint32_t);
    } ways[] = {{"new-signal", new_signal}, {"body-first", body_first}, {"demarshal", demarshal}};
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        for (long i = 0; i < count / 10; i++) ways[w].build((dbus_uint32_t)i);
        double start = now();
        for (long i = 0; i < count; i++) ways[w].build((dbus_uint32_t)i);
        printf("%-11s %.0f ns a signal\n", ways[w].name, (now() - start) / (double)count);
    }
    dbus_free(prepared);
    dbus_message_unref(model);
    return 0;
}
