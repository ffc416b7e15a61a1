/* dbus-echo-ref: the fastest a D-Bus service answers on this machine, the
 * reference todayd's benchmarks are measured against.
 *
 *   dbus-echo-ref NAME [ENTRIES [IMAGE_BYTES]]
 *
 * Owns NAME on the session bus (DBUS_SESSION_BUS_ADDRESS) and answers every
 * method call with an a{sv} of ENTRIES string entries (default 10), the
 * shape of a Properties.GetAll reply; with IMAGE_BYTES, one entry more,
 * "image", holds an ay of that many bytes. io.github.todayd.Bench1.Echo
 * answers with its own string arguments; org.freedesktop.DBus.Properties.Get
 * with a variant holding an ao of ENTRIES object paths, the shape of
 * todayd's Layout. Ends when the bus goes away. */
#include <dbus/dbus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reply_shape {
    int entries;
    char **keys;
    char **values;
    unsigned char *image;
    int image_bytes;
    char **paths;
};

static int parse_count(const char *text, const char *what) {
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < 0 || value > 100000000) {
        fprintf(stderr, "dbus-echo-ref: %s must be a number from 0 to 100000000, not '%s'\n", what, text);
        exit(2);
    }
    return (int)value;
}

/* Appends the a{sv} of `shape` to `message`. */
static dbus_bool_t append_properties(DBusMessage *message, const struct reply_shape *shape) {
    DBusMessageIter body, array, entry, variant, bytes;
    dbus_message_iter_init_append(message, &body);
    if (!dbus_message_iter_open_container(&body, DBUS_TYPE_ARRAY, "{sv}", &array)) return FALSE;
    for (int i = 0; i < shape->entries; i++) {
        dbus_message_iter_open_container(&array, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
        dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &shape->keys[i]);
        dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "s", &variant);
        dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &shape->values[i]);
        dbus_message_iter_close_container(&entry, &variant);
        dbus_message_iter_close_container(&array, &entry);
    }
    if (shape->image) {
        const char *key = "image";
        dbus_message_iter_open_container(&array, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
        dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
        dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "ay", &variant);
        dbus_message_iter_open_container(&variant, DBUS_TYPE_ARRAY, "y", &bytes);
        dbus_message_iter_append_fixed_array(&bytes, DBUS_TYPE_BYTE, &shape->image, shape->image_bytes);
        dbus_message_iter_close_container(&variant, &bytes);
        dbus_message_iter_close_container(&entry, &variant);
        dbus_message_iter_close_container(&array, &entry);
    }
    return dbus_message_iter_close_container(&body, &array);
}

/* Appends a variant holding the ao of `shape`'s paths to `message`. */
static dbus_bool_t append_paths(DBusMessage *message, const struct reply_shape *shape) {
    DBusMessageIter body, variant, array;
    dbus_message_iter_init_append(message, &body);
    if (!dbus_message_iter_open_container(&body, DBUS_TYPE_VARIANT, "ao", &variant)) return FALSE;
    if (!dbus_message_iter_open_container(&variant, DBUS_TYPE_ARRAY, "o", &array)) return FALSE;
    for (int i = 0; i < shape->entries; i++) dbus_message_iter_append_basic(&array, DBUS_TYPE_OBJECT_PATH, &shape->paths[i]);
    dbus_message_iter_close_container(&variant, &array);
    return dbus_message_iter_close_container(&body, &variant);
}

/* Appends the string arguments of `call` to `reply`, in order. */
static void append_echo(DBusMessage *reply, DBusMessage *call) {
    DBusMessageIter in, out;
    dbus_message_iter_init_append(reply, &out);
    if (!dbus_message_iter_init(call, &in)) return;
    do {
        if (dbus_message_iter_get_arg_type(&in) == DBUS_TYPE_STRING) {
            const char *text;
            dbus_message_iter_get_basic(&in, &text);
            dbus_message_iter_append_basic(&out, DBUS_TYPE_STRING, &text);
        }
    } while (dbus_message_iter_next(&in));
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: dbus-echo-ref NAME [ENTRIES [IMAGE_BYTES]]\n");
        return 2;
    }
    struct reply_shape shape = {argc > 2 ? parse_count(argv[2], "ENTRIES") : 10, NULL, NULL, NULL, 0, NULL};
    shape.keys = calloc((size_t)shape.entries + 1, sizeof *shape.keys);
    shape.values = calloc((size_t)shape.entries + 1, sizeof *shape.values);
    shape.paths = calloc((size_t)shape.entries + 1, sizeof *shape.paths);
    for (int i = 0; i < shape.entries; i++) {
        char text[96];
        snprintf(text, sizeof text, "Property%d", i);
        shape.keys[i] = strdup(text);
        snprintf(text, sizeof text, "the value of property %d", i);
        shape.values[i] = strdup(text);
        snprintf(text, sizeof text, "/io/github/todayd/Today1/widgets/org_2ebench_2eApp%03d_2eW/%d", i / 10 + 1, i % 10);
        shape.paths[i] = strdup(text);
    }
    if (argc > 3) {
        shape.image_bytes = parse_count(argv[3], "IMAGE_BYTES");
        shape.image = malloc((size_t)shape.image_bytes + 1);
        for (int i = 0; i < shape.image_bytes; i++) shape.image[i] = (unsigned char)(i * 31 + 7);
    }

    DBusError error;
    dbus_error_init(&error);
    DBusConnection *bus = dbus_bus_get_private(DBUS_BUS_SESSION, &error);
    if (!bus) {
        fprintf(stderr, "dbus-echo-ref: cannot reach the session bus: %s\n", error.message);
        return 1;
    }
    dbus_connection_set_exit_on_disconnect(bus, FALSE);
    int owned = dbus_bus_request_name(bus, argv[1], DBUS_NAME_FLAG_DO_NOT_QUEUE, &error);
    if (owned != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "dbus-echo-ref: cannot own %s: %s\n", argv[1], dbus_error_is_set(&error) ? error.message : "taken");
        return 1;
    }
    while (dbus_connection_read_write(bus, -1)) {
        DBusMessage *message;
        while ((message = dbus_connection_pop_message(bus))) {
            if (dbus_message_is_signal(message, DBUS_INTERFACE_LOCAL, "Disconnected")) {
                dbus_message_unref(message);
                return 0;
            }
            if (dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_CALL && !dbus_message_get_no_reply(message)) {
                DBusMessage *reply = dbus_message_new_method_return(message);
                if (reply) {
                    if (dbus_message_is_method_call(message, "io.github.todayd.Bench1", "Echo")) {
                        append_echo(reply, message);
                    } else if (dbus_message_is_method_call(message, DBUS_INTERFACE_PROPERTIES, "Get")) {
                        append_paths(reply, &shape);
                    } else {
                        append_properties(reply, &shape);
                    }
                    dbus_connection_send(bus, reply, NULL);
                    dbus_message_unref(reply);
                }
            }
            dbus_message_unref(message);
        }
    }
    return 0;
}
