/* How soon an applet sees a toggle change: the time from sending
 * PerformAction(ACTION) to the first PropertiesChanged of the widget that
 * reaches this client (todayd publishes the new state before the provider
 * answers), against a GetAll round trip on the same connection, the two
 * alternated call by call. Each press waits for its reply, and for every
 * signal before it, so the next press starts from a quiet connection.
 *   bench-toggle DEST PATH ACTION CALLS
 * prints: toggle_p50_us=… getall_p50_us=… toggle_p90_us=… getall_p90_us=… late=…
 * where late counts presses whose reply came before the change. */
#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *values, int count, double p) {
    qsort(values, (size_t)count, sizeof *values, compare);
    int index = (int)(p * (count - 1) + 0.5);
    return values[index];
}

static void fail(const char *what, DBusError *error) {
    fprintf(stderr, "bench-toggle: %s: %s\n", what, error && dbus_error_is_set(error) ? error->message : "failed");
    exit(1);
}

/* Sends MESSAGE and reads until its reply; *changed gets the time of the
 * first PropertiesChanged on PATH before it (0 when none came first).
 * Returns the time of the reply. */
static double exchange(DBusConnection *connection, DBusMessage *message, const char *path, double *changed) {
    dbus_uint32_t serial = 0;
    if (!dbus_connection_send(connection, message, &serial)) fail("send", NULL);
    *changed = 0;
    for (;;) {
        if (!dbus_connection_read_write(connection, -1)) fail("the connection closed", NULL);
        DBusMessage *in;
        while ((in = dbus_connection_pop_message(connection)) != NULL) {
            int type = dbus_message_get_type(in);
            double at = now_us();
            if (type == DBUS_MESSAGE_TYPE_SIGNAL && *changed == 0 &&
                dbus_message_is_signal(in, "org.freedesktop.DBus.Properties", "PropertiesChanged") &&
                dbus_message_has_path(in, path))
                *changed = at;
            int done = (type == DBUS_MESSAGE_TYPE_METHOD_RETURN || type == DBUS_MESSAGE_TYPE_ERROR) &&
                       dbus_message_get_reply_serial(in) == serial;
            if (type == DBUS_MESSAGE_TYPE_ERROR && done) {
                fprintf(stderr, "bench-toggle: %s\n", dbus_message_get_error_name(in));
                exit(1);
            }
            dbus_message_unref(in);
            if (done) return at;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench-toggle DEST PATH ACTION CALLS\n");
        return 2;
    }
    const char *dest = argv[1], *path = argv[2], *action = argv[3];
    int calls = atoi(argv[4]);
    if (calls < 1) return 2;
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_bus_get(DBUS_BUS_SESSION, &error);
    if (!connection) fail("connecting to the session bus", &error);
    char rule[1024];
    snprintf(rule, sizeof rule, "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='%s'", path);
    dbus_bus_add_match(connection, rule, &error);
    if (dbus_error_is_set(&error)) fail("adding the match rule", &error);

    double *toggle = calloc((size_t)calls, sizeof *toggle), *getall = calloc((size_t)calls, sizeof *getall);
    if (!toggle || !getall) return 1;
    const char *interface = "io.github.todayd.Today1.Widget";
    int late = 0;
    for (int i = -10; i < calls; i++) { /* ten presses first, not counted */
        DBusMessage *press = dbus_message_new_method_call(dest, path, interface, "PerformAction");
        DBusMessageIter it, options;
        dbus_message_iter_init_append(press, &it);
        dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &action);
        dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &options);
        dbus_message_iter_close_container(&it, &options);
        double start = now_us(), changed;
        exchange(connection, press, path, &changed);
        dbus_message_unref(press);
        if (changed == 0) late++;
        if (i >= 0) toggle[i] = changed == 0 ? 1e9 : changed - start;

        DBusMessage *get = dbus_message_new_method_call(dest, path, "org.freedesktop.DBus.Properties", "GetAll");
        dbus_message_append_args(get, DBUS_TYPE_STRING, &interface, DBUS_TYPE_INVALID);
        start = now_us();
        double answered = exchange(connection, get, path, &changed);
        dbus_message_unref(get);
        if (i >= 0) getall[i] = answered - start;
    }
    double t50 = percentile(toggle, calls, 0.5), t90 = percentile(toggle, calls, 0.9);
    double g50 = percentile(getall, calls, 0.5), g90 = percentile(getall, calls, 0.9);
    printf("toggle_p50_us=%.1f getall_p50_us=%.1f toggle_p90_us=%.1f getall_p90_us=%.1f late=%d\n", t50, g50, t90, g90, late);
    return 0;
}
