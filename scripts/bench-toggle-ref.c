/* The floor of a toggle's press: a libdbus service that answers
 * PerformAction on any path by emitting, at once, the PropertiesChanged
 * todayd sends before its provider answers (the widget's Snapshot with the
 * toggle's new state, as bench-actions' widget has it), then replying
 * new-data; and answers GetAll with the same snapshot. No provider runs.
 * bench-toggle measures it as it measures todayd.
 *   bench-toggle-ref NAME */
#include "bench-service.h"

static const char *widget = "io.github.todayd.Today1.Widget";
static dbus_bool_t state;

static void open_entry(DBusMessageIter *dict, DBusMessageIter *entry, DBusMessageIter *variant, const char *key, const char *type) {
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, entry);
    dbus_message_iter_append_basic(entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(entry, DBUS_TYPE_VARIANT, type, variant);
}

static void close_entry(DBusMessageIter *dict, DBusMessageIter *entry, DBusMessageIter *variant) {
    dbus_message_iter_close_container(entry, variant);
    dbus_message_iter_close_container(dict, entry);
}

static void string_entry(DBusMessageIter *dict, const char *key, const char *value) {
    DBusMessageIter entry, variant;
    open_entry(dict, &entry, &variant, key, "s");
    dbus_message_iter_append_basic(&variant, DBUS_TYPE_STRING, &value);
    close_entry(dict, &entry, &variant);
}

/* {id, title, kind[, state]} as an a{sv} element of ARRAY. */
static void action(DBusMessageIter *array, const char *id, const char *title, const char *kind, const dbus_bool_t *on) {
    DBusMessageIter dict, entry, variant;
    dbus_message_iter_open_container(array, DBUS_TYPE_ARRAY, "{sv}", &dict);
    string_entry(&dict, "id", id);
    string_entry(&dict, "title", title);
    string_entry(&dict, "kind", kind);
    if (on) {
        open_entry(&dict, &entry, &variant, "state", "b");
        dbus_message_iter_append_basic(&variant, DBUS_TYPE_BOOLEAN, on);
        close_entry(&dict, &entry, &variant);
    }
    dbus_message_iter_close_container(array, &dict);
}

/* The Snapshot property's entry in DICT (an a{sv}). */
static void snapshot_entry(DBusMessageIter *dict) {
    DBusMessageIter entry, variant, snapshot, inner, inner_variant, actions;
    open_entry(dict, &entry, &variant, "Snapshot", "a{sv}");
    dbus_message_iter_open_container(&variant, DBUS_TYPE_ARRAY, "{sv}", &snapshot);
    string_entry(&snapshot, "title", "t");
    open_entry(&snapshot, &inner, &inner_variant, "actions", "aa{sv}");
    dbus_message_iter_open_container(&inner_variant, DBUS_TYPE_ARRAY, "a{sv}", &actions);
    action(&actions, "go", "Go", "button", NULL);
    action(&actions, "flip", "Flip", "toggle", &state);
    dbus_message_iter_close_container(&inner_variant, &actions);
    close_entry(&snapshot, &inner, &inner_variant);
    dbus_message_iter_close_container(&variant, &snapshot);
    close_entry(dict, &entry, &variant);
}

static DBusHandlerResult on_message(DBusConnection *connection, DBusMessage *message, void *data) {
    (void)data;
    if (dbus_message_get_type(message) != DBUS_MESSAGE_TYPE_METHOD_CALL) return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    DBusMessageIter it, dict;
    if (dbus_message_is_method_call(message, "org.freedesktop.DBus.Properties", "GetAll")) {
        DBusMessage *reply = dbus_message_new_method_return(message);
        dbus_message_iter_init_append(reply, &it);
        dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &dict);
        snapshot_entry(&dict);
        dbus_message_iter_close_container(&it, &dict);
        dbus_connection_send(connection, reply, NULL);
        dbus_message_unref(reply);
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    state = !state;
    DBusMessage *changed = dbus_message_new_signal(dbus_message_get_path(message), "org.freedesktop.DBus.Properties", "PropertiesChanged");
    DBusMessageIter none;
    dbus_message_iter_init_append(changed, &it);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &widget);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &dict);
    snapshot_entry(&dict);
    dbus_message_iter_close_container(&it, &dict);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &none);
    dbus_message_iter_close_container(&it, &none);
    dbus_connection_send(connection, changed, NULL);
    dbus_message_unref(changed);
    bench_reply_result(connection, message, "new-data");
    return DBUS_HANDLER_RESULT_HANDLED;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: bench-toggle-ref NAME\n");
        return 2;
    }
    return bench_serve("bench-toggle-ref", argv[1], on_message);
}
