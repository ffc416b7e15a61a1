/* The least a PerformUpdate over D-Bus can cost: a libdbus service that,
 * on any method call, starts the provider as bench-spawn does (the same
 * bench_run_provider, from bench-provider.h), announces the outcome as todayd
 * does (PropertiesChanged of the widget's LastUpdated, then Updated) and
 * replies with the result. No limits, no parsing, no threads: the floor
 * that todayd's figure is compared with, on the same bus in the same run.
 * With --parse it also reads the provider's answer as todayd must: the
 * whole output parsed with libxml2 (xmlReadMemory) and every <data>
 * decoded from base64, the floor for snapshots with pictures.
 *   bench-update-ref NAME EXECUTABLE [--parse] */
#include <dbus/dbus.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "bench-provider.h"
#include "bench-service.h"

static const char *executable;
static int parse;

static int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes TEXT's base64 into a new buffer, skipping other characters as
 * property-list readers do; returns the number of bytes. */
static size_t decode_base64(const unsigned char *text, unsigned char **out) {
    size_t length = strlen((const char *)text), n = 0;
    unsigned char *bytes = malloc(length / 4 * 3 + 3);
    unsigned int group = 0;
    int count = 0;
    for (size_t i = 0; i < length && bytes; i++) {
        int v = base64_value(text[i]);
        if (v < 0) continue;
        group = group << 6 | (unsigned int)v;
        if (++count == 4) {
            bytes[n++] = (unsigned char)(group >> 16);
            bytes[n++] = (unsigned char)(group >> 8);
            bytes[n++] = (unsigned char)group;
            group = 0;
            count = 0;
        }
    }
    if (bytes && count == 3) {
        bytes[n++] = (unsigned char)(group >> 10);
        bytes[n++] = (unsigned char)(group >> 2);
    } else if (bytes && count == 2) {
        bytes[n++] = (unsigned char)(group >> 4);
    }
    *out = bytes;
    return n;
}

/* Every <data> below NODE, decoded; returns how many bytes in all. */
static size_t decode_data(xmlNode *node) {
    size_t total = 0;
    for (; node; node = node->next) {
        if (node->type == XML_ELEMENT_NODE && xmlStrEqual(node->name, (const xmlChar *)"data")) {
            xmlChar *text = xmlNodeGetContent(node);
            unsigned char *bytes = NULL;
            if (text) total += decode_base64(text, &bytes);
            free(bytes);
            xmlFree(text);
        }
        total += decode_data(node->children);
    }
    return total;
}

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
    const char *result = "no-data";
    if (parse) {
        char *output = NULL;
        size_t length = 0;
        bench_run_provider_output(executable, &output, &length);
        xmlDoc *document = output ? xmlReadMemory(output, (int)length, NULL, NULL, XML_PARSE_NONET | XML_PARSE_HUGE) : NULL;
        if (document && decode_data(xmlDocGetRootElement(document)) > 0) result = "new-data";
        xmlFreeDoc(document);
        free(output);
    } else {
        bench_run_provider(executable);
    }
    announce(connection, dbus_message_get_path(message), result);
    bench_reply_result(connection, message, result);
    return DBUS_HANDLER_RESULT_HANDLED;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--parse") != 0)) {
        fprintf(stderr, "usage: bench-update-ref NAME EXECUTABLE [--parse]\n");
        return 2;
    }
    parse = argc == 4;
    signal(SIGPIPE, SIG_IGN);
    executable = argv[2];
    return bench_serve("bench-update-ref", argv[1], on_message);
}
