/* dbus-bench: a load client for one method, with a fixed number of calls
 * outstanding on one connection.
 *
 *   dbus-bench DEST PATH IFACE METHOD [--arg S]... [--options] [--notify APPS [--rich]] [-n CALLS] [-k INFLIGHT]
 *
 * Sends CALLS calls (default 10000), each with the string arguments given
 * and, with --options, an empty a{sv} after them (platform data); with
 * --notify, Notify's eight arguments instead (app_name "bench-N", N going
 * round APPS names so that no app passes a server's rate limit, a summary
 * numbered by the call, a short body, no actions, no hints, the default
 * expiry); with --rich, a notification as a mail client sends it (an icon,
 * a body with markup, two actions, the urgency, category and sound-name
 * hints),
 * keeping INFLIGHT (default 1) unanswered at a time, and prints
 *   calls=… errors=… seconds=… calls_per_s=… p50_us=… p99_us=… max_us=…
 * where the times are from sending a call to reading its reply. */
#include <dbus/dbus.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Sent calls awaiting replies, by serial modulo this (more than INFLIGHT). */
#define SLOTS 65536

static double now_us(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec * 1e6 + (double)time.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long parse_count(const char *text, const char *what, long most) {
    char *end;
    long value = text ? strtol(text, &end, 10) : 0;
    if (!text || *text == '\0' || *end != '\0' || value < 1 || value > most) {
        fprintf(stderr, "dbus-bench: %s must be a number from 1 to %ld\n", what, most);
        exit(2);
    }
    return value;
}

/* --rich: Open and Reply. */
static void append_actions(DBusMessageIter *array) {
    const char *actions[] = {"default", "Open", "reply", "Reply"};
    for (int i = 0; i < 4; i++) dbus_message_iter_append_basic(array, DBUS_TYPE_STRING, &actions[i]);
}

/* One hint `key` of type `type` (a one-letter signature). */
static void append_hint(DBusMessageIter *dictionary, const char *key, int type, const void *value) {
    DBusMessageIter entry, variant;
    char signature[2] = {(char)type, 0};
    dbus_message_iter_open_container(dictionary, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, signature, &variant);
    dbus_message_iter_append_basic(&variant, type, value);
    dbus_message_iter_close_container(&entry, &variant);
    dbus_message_iter_close_container(dictionary, &entry);
}

/* --rich: urgency normal, a mail's category and sound. */
static void append_hints(DBusMessageIter *dictionary) {
    unsigned char urgency = 1;
    const char *category = "email.arrived", *sound = "message-new-email";
    append_hint(dictionary, "urgency", DBUS_TYPE_BYTE, &urgency);
    append_hint(dictionary, "category", DBUS_TYPE_STRING, &category);
    append_hint(dictionary, "sound-name", DBUS_TYPE_STRING, &sound);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: dbus-bench DEST PATH IFACE METHOD [--arg S]... [--options] [--notify APPS [--rich]] [-n CALLS] [-k INFLIGHT]\n");
        return 2;
    }
    const char *destination = argv[1], *path = argv[2], *interface = argv[3], *method = argv[4];
    const char **arguments = calloc((size_t)argc, sizeof *arguments);
    int argument_count = 0;
    long calls = 10000, inflight = 1;
    int options = 0;
    long notify_apps = 0;
    int rich = 0;
    for (int i = 5; i < argc; i++) {
        if (strcmp(argv[i], "--arg") == 0 && i + 1 < argc) {
            arguments[argument_count++] = argv[++i];
        } else if (strcmp(argv[i], "--options") == 0) {
            options = 1;
        } else if (strcmp(argv[i], "--notify") == 0) {
            notify_apps = parse_count(i + 1 < argc ? argv[++i] : NULL, "--notify", 1000000);
        } else if (strcmp(argv[i], "--rich") == 0) {
            rich = 1;
        } else if (strcmp(argv[i], "-n") == 0) {
            calls = parse_count(i + 1 < argc ? argv[++i] : NULL, "-n", 100000000);
        } else if (strcmp(argv[i], "-k") == 0) {
            inflight = parse_count(i + 1 < argc ? argv[++i] : NULL, "-k", SLOTS / 2);
        } else {
            fprintf(stderr, "dbus-bench: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }

    DBusError error;
    dbus_error_init(&error);
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
    if (!bus) {
        fprintf(stderr, "dbus-bench: cannot reach the session bus: %s\n", error.message);
        return 1;
    }
    dbus_connection_set_exit_on_disconnect(bus, FALSE);
    double *sent_at = calloc(SLOTS, sizeof *sent_at);
    double *latencies = malloc((size_t)calls * sizeof *latencies);
    long sent = 0, answered = 0, errors = 0;

    double started = now_us();
    while (answered < calls) {
        while (sent < calls && sent - answered < inflight) {
            DBusMessage *call = dbus_message_new_method_call(destination, path, interface, method);
            if (!call) {
                fprintf(stderr, "dbus-bench: '%s %s %s %s' is not a valid call\n", destination, path, interface, method);
                return 2;
            }
            for (int i = 0; i < argument_count; i++) {
                dbus_message_append_args(call, DBUS_TYPE_STRING, &arguments[i], DBUS_TYPE_INVALID);
            }
            if (notify_apps) {
                char app[32], summary[40];
                snprintf(app, sizeof app, "bench-%ld", sent % notify_apps);
                snprintf(summary, sizeof summary, "Notification %ld", sent);
                const char *app_name = app, *icon = rich ? "mail-unread" : "", *summary_text = summary,
                           *body_text = rich ? "<b>Ana</b> wrote: a body of <i>a few</i> words." : "A body of a few words.";
                dbus_uint32_t replaces = 0;
                dbus_int32_t timeout = -1;
                DBusMessageIter body, empty;
                dbus_message_append_args(call, DBUS_TYPE_STRING, &app_name, DBUS_TYPE_UINT32, &replaces, DBUS_TYPE_STRING, &icon,
                                         DBUS_TYPE_STRING, &summary_text, DBUS_TYPE_STRING, &body_text, DBUS_TYPE_INVALID);
                dbus_message_iter_init_append(call, &body);
                dbus_message_iter_open_container(&body, DBUS_TYPE_ARRAY, "s", &empty);
                if (rich) append_actions(&empty);
                dbus_message_iter_close_container(&body, &empty);
                dbus_message_iter_open_container(&body, DBUS_TYPE_ARRAY, "{sv}", &empty);
                if (rich) append_hints(&empty);
                dbus_message_iter_close_container(&body, &empty);
                dbus_message_iter_append_basic(&body, DBUS_TYPE_INT32, &timeout);
            }
            if (options) {
                DBusMessageIter body, empty;
                dbus_message_iter_init_append(call, &body);
                dbus_message_iter_open_container(&body, DBUS_TYPE_ARRAY, "{sv}", &empty);
                dbus_message_iter_close_container(&body, &empty);
            }
            dbus_uint32_t serial = 0;
            double at = now_us();
            if (!dbus_connection_send(bus, call, &serial)) {
                fprintf(stderr, "dbus-bench: out of memory\n");
                return 1;
            }
            sent_at[serial % SLOTS] = at;
            dbus_message_unref(call);
            sent++;
        }
        if (!dbus_connection_read_write(bus, -1)) {
            fprintf(stderr, "dbus-bench: the bus went away after %ld replies\n", answered);
            return 1;
        }
        DBusMessage *message;
        while ((message = dbus_connection_pop_message(bus))) {
            int type = dbus_message_get_type(message);
            if (type == DBUS_MESSAGE_TYPE_METHOD_RETURN || type == DBUS_MESSAGE_TYPE_ERROR) {
                double at = now_us();
                latencies[answered++] = at - sent_at[dbus_message_get_reply_serial(message) % SLOTS];
                if (type == DBUS_MESSAGE_TYPE_ERROR) {
                    if (errors == 0) fprintf(stderr, "dbus-bench: first error: %s\n", dbus_message_get_error_name(message));
                    errors++;
                }
            }
            dbus_message_unref(message);
        }
    }
    double seconds = (now_us() - started) / 1e6;
    qsort(latencies, (size_t)calls, sizeof *latencies, compare);
    printf("calls=%ld errors=%ld seconds=%.3f calls_per_s=%.0f p50_us=%.1f p99_us=%.1f max_us=%.1f\n", calls, errors, seconds,
           (double)calls / seconds, latencies[calls / 2], latencies[(calls * 99) / 100], latencies[calls - 1]);
    return errors == 0 ? 0 : 1;
}
