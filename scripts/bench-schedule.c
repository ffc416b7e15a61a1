/* Schedule against Group.Set, both durable writes before the answer (SPEC
 * sections 18 and 4), from one app on one connection, the two alternated
 * call by call: Schedule of one of 100 request ids (a notification an hour
 * away) and Group.Set of one of 100 keys (a short string, new each
 * time, so that each Set writes).
 *   bench-schedule APP_ID GROUP_ID CALLS
 * prints: schedule_p50_us=… set_p50_us=… schedule_p90_us=… set_p90_us=… */
#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const todayd = "io.github.todayd.Today1";
static const char *const manager = "/io/github/todayd/Today1";

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
    return values[(int)(p * (count - 1) + 0.5)];
}

static void fail(const char *what, DBusError *error) {
    fprintf(stderr, "bench-schedule: %s: %s\n", what, error && dbus_error_is_set(error) ? error->message : "failed");
    exit(1);
}

/* Sends MESSAGE, waits for its reply; the reply, or exits saying what failed. */
static DBusMessage *call(DBusConnection *bus, DBusMessage *message, const char *what) {
    DBusError error;
    dbus_error_init(&error);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(bus, message, 25000, &error);
    dbus_message_unref(message);
    if (!reply) fail(what, &error);
    return reply;
}

/* One {key: <value>} entry of an a{sv}. */
static void entry(DBusMessageIter *dictionary, const char *key, int type, const char *signature, const void *value) {
    DBusMessageIter pair, variant;
    dbus_message_iter_open_container(dictionary, DBUS_TYPE_DICT_ENTRY, NULL, &pair);
    dbus_message_iter_append_basic(&pair, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&pair, DBUS_TYPE_VARIANT, signature, &variant);
    dbus_message_iter_append_basic(&variant, type, value);
    dbus_message_iter_close_container(&pair, &variant);
    dbus_message_iter_close_container(dictionary, &pair);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: bench-schedule APP_ID GROUP_ID CALLS\n");
        return 2;
    }
    const char *app = argv[1], *group = argv[2];
    int calls = atoi(argv[3]);
    if (calls < 1) return 2;
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
    if (!bus) fail("the session bus", &error);

    DBusMessage *m = dbus_message_new_method_call(todayd, manager, "io.github.todayd.Today1.Center", "RegisterApp");
    dbus_message_append_args(m, DBUS_TYPE_STRING, &app, DBUS_TYPE_INVALID);
    dbus_message_unref(call(bus, m, "RegisterApp"));
    m = dbus_message_new_method_call(todayd, manager, "io.github.todayd.Today1.Center", "GroupObject");
    dbus_message_append_args(m, DBUS_TYPE_STRING, &group, DBUS_TYPE_INVALID);
    DBusMessage *reply = call(bus, m, "GroupObject");
    const char *found;
    if (!dbus_message_get_args(reply, &error, DBUS_TYPE_OBJECT_PATH, &found, DBUS_TYPE_INVALID)) fail("GroupObject's answer", &error);
    char *group_path = strdup(found);
    dbus_message_unref(reply);

    double *schedule = calloc((size_t)calls, sizeof *schedule), *set = calloc((size_t)calls, sizeof *set);
    char id[32], key[32], value[64];
    const char *title = "Bench";
    double hour = 3600;
    for (int i = 0; i < calls; i++) {
        snprintf(id, sizeof id, "r%d", i % 100);
        const char *request = id;
        m = dbus_message_new_method_call(todayd, manager, "io.github.todayd.Today1.Notifications", "Schedule");
        DBusMessageIter args, dictionary;
        dbus_message_iter_init_append(m, &args);
        dbus_message_iter_append_basic(&args, DBUS_TYPE_STRING, &request);
        dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dictionary);
        entry(&dictionary, "title", DBUS_TYPE_STRING, "s", &title);
        dbus_message_iter_close_container(&args, &dictionary);
        dbus_message_iter_open_container(&args, DBUS_TYPE_ARRAY, "{sv}", &dictionary);
        entry(&dictionary, "after", DBUS_TYPE_DOUBLE, "d", &hour);
        dbus_message_iter_close_container(&args, &dictionary);
        double start = now_us();
        dbus_message_unref(call(bus, m, "Schedule"));
        schedule[i] = now_us() - start;

        /* A new value each time: a Set of the value already there writes nothing. */
        snprintf(key, sizeof key, "k%d", i % 100);
        snprintf(value, sizeof value, "a value of a few words, the %dth", i);
        const char *name = key, *text = value;
        m = dbus_message_new_method_call(todayd, group_path, "io.github.todayd.Today1.Group", "Set");
        DBusMessageIter variant;
        dbus_message_iter_init_append(m, &args);
        dbus_message_iter_append_basic(&args, DBUS_TYPE_STRING, &name);
        dbus_message_iter_open_container(&args, DBUS_TYPE_VARIANT, "s", &variant);
        dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &text);
        dbus_message_iter_close_container(&args, &variant);
        start = now_us();
        dbus_message_unref(call(bus, m, "Group.Set"));
        set[i] = now_us() - start;
    }
    printf("schedule_p50_us=%.0f set_p50_us=%.0f", percentile(schedule, calls, 0.5), percentile(set, calls, 0.5));
    printf(" schedule_p90_us=%.0f set_p90_us=%.0f\n", percentile(schedule, calls, 0.9), percentile(set, calls, 0.9));
    free(group_path);
    return 0;
}
