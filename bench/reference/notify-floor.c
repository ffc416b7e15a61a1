/* notify-floor: the fastest a notification server answers on this machine,
 * the floor todayd's Notify is measured against.
 *
 *   notify-floor [--keep FILE [--batch]]
 *
 * Owns org.freedesktop.Notifications on the session bus
 * (DBUS_SESSION_BUS_ADDRESS) and answers Notify(susssasa{sv}i) with the
 * next number of a counter, reading nothing of the notification, keeping
 * nothing and showing nothing; GetServerInformation says who it is, and
 * anything else is UnknownMethod. Ends when the bus goes away.
 *
 * With --keep, the least a server that keeps a list of 1,000 must do (SPEC
 * section 14): each notification is appended to FILE with one write()
 * before the answer (its id and the message as D-Bus marshals it), and once
 * 1,000 are kept, NotificationClosed(id, 4) goes out for the oldest after
 * each answer.
 *
 * With --batch as well, the least such a server does when it takes what
 * one read of its socket brought together: the records of all those calls
 * in one write() to FILE, then all their answers and signals, marshalled
 * into one buffer with serials of its own, in one write() to the bus's
 * socket (libdbus writes one message a write). This is what todayd does
 * with a turn of its loop. */
#include "notify-name.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEPT 1000

/* Bytes gathered for one write(). */
struct buffer {
    unsigned char *bytes;
    size_t length, capacity;
};

/* Appends `count` bytes to `buffer`; 0 where there is no memory. */
static int append(struct buffer *buffer, const void *bytes, size_t count) {
    if (buffer->length + count > buffer->capacity) {
        size_t capacity = buffer->capacity ? buffer->capacity : 4096;
        while (capacity < buffer->length + count) capacity *= 2;
        unsigned char *grown = realloc(buffer->bytes, capacity);
        if (!grown) return 0;
        buffer->bytes = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->length, bytes, count);
    buffer->length += count;
    return 1;
}

/* Appends the record of `message` as `id` to `buffer`; 0 where it could not. */
static int record(struct buffer *buffer, dbus_uint32_t id, DBusMessage *message) {
    char *bytes = NULL;
    int length = 0;
    if (!dbus_message_marshal(message, &bytes, &length)) return 0;
    uint32_t header[2] = {id, (uint32_t)length};
    int done = append(buffer, header, 8) && append(buffer, bytes, (size_t)length);
    dbus_free(bytes);
    return done;
}

/* Appends `message`, given the next of `serial`, as the bus reads it. */
static int marshal(struct buffer *buffer, DBusMessage *message, dbus_uint32_t *serial) {
    dbus_message_set_serial(message, (*serial)++);
    char *bytes = NULL;
    int length = 0;
    if (!dbus_message_marshal(message, &bytes, &length)) return 0;
    int done = append(buffer, bytes, (size_t)length);
    dbus_free(bytes);
    return done;
}

/* Writes all of `buffer` to `fd`, waiting for room where it is
 * non-blocking; 0 where it fails. */
static int write_all(int fd, const struct buffer *buffer) {
    size_t done = 0;
    while (done < buffer->length) {
        ssize_t written = write(fd, buffer->bytes + done, buffer->length - done);
        if (written > 0) {
            done += (size_t)written;
        } else if (written < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd room = {.fd = fd, .events = POLLOUT};
            poll(&room, 1, -1);
        } else {
            return 0;
        }
    }
    return 1;
}

/* Appends the notification `message` as `id` to `file` in one write();
 * 0 where it could not. */
static int keep(int file, dbus_uint32_t id, DBusMessage *message) {
    char *bytes = NULL;
    int length = 0;
    if (!dbus_message_marshal(message, &bytes, &length)) return 0;
    size_t size = 8 + (size_t)length;
    unsigned char *record = malloc(size);
    if (!record) {
        dbus_free(bytes);
        return 0;
    }
    uint32_t header[2] = {id, (uint32_t)length};
    memcpy(record, header, 8);
    memcpy(record + 8, bytes, (size_t)length);
    dbus_free(bytes);
    ssize_t written = write(file, record, size);
    free(record);
    return written == (ssize_t)size;
}

/* NotificationClosed(id, reason), built the cheapest way libdbus allows:
 * the arguments first, then the path, interface and member. Each argument
 * appended rewrites the header's signature field, which costs less while
 * the header is still empty: about 30k instructions here against 38k for
 * dbus_message_new_signal followed by the arguments (signal-build.c). */
static DBusMessage *closed_signal(dbus_uint32_t id, dbus_uint32_t reason) {
    DBusMessage *signal = dbus_message_new(DBUS_MESSAGE_TYPE_SIGNAL);
    if (!signal) return NULL;
    if (!dbus_message_append_args(signal, DBUS_TYPE_UINT32, &id, DBUS_TYPE_UINT32, &reason, DBUS_TYPE_INVALID) ||
        !dbus_message_set_path(signal, "/org/freedesktop/Notifications") || !dbus_message_set_interface(signal, notifications_name) ||
        !dbus_message_set_member(signal, "NotificationClosed")) {
        dbus_message_unref(signal);
        return NULL;
    }
    return signal;
}

int main(int argc, char **argv) {
    int file = -1, batch = argc == 4 && strcmp(argv[3], "--batch") == 0;
    if ((argc == 3 || batch) && strcmp(argv[1], "--keep") == 0) {
        file = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, 0600);
        if (file < 0) {
            perror(argv[2]);
            return 1;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: notify-floor [--keep FILE [--batch]]\n");
        return 2;
    }
    DBusConnection *bus = own_notifications_name("notify-floor");
    if (!bus) return 1;
    int socket = -1;
    if (batch && !dbus_connection_get_socket(bus, &socket)) {
        fprintf(stderr, "notify-floor: no socket to write to\n");
        return 1;
    }
    /* --batch: the records, and the answers and signals, of one read. */
    struct buffer records = {0}, wire = {0};
    DBusMessage **out = NULL;
    size_t outs = 0, out_capacity = 0;
    /* Serials of the messages written here; libdbus gave Hello and the
     * name's request the first ones. */
    dbus_uint32_t serial = 1000;
    dbus_uint32_t counter = 0;
    /* The ids kept, oldest first, as a ring. */
    static dbus_uint32_t kept[KEPT];
    size_t oldest = 0, count = 0;
    while (dbus_connection_read_write(bus, -1)) {
        DBusMessage *message;
        while ((message = dbus_connection_pop_message(bus))) {
            if (dbus_message_get_type(message) != DBUS_MESSAGE_TYPE_METHOD_CALL) {
                dbus_message_unref(message);
                continue;
            }
            DBusMessage *reply, *closed = NULL;
            if (dbus_message_is_method_call(message, notifications_name, "Notify") && dbus_message_has_signature(message, "susssasa{sv}i")) {
                counter = counter == UINT32_MAX ? 1 : counter + 1;
                if (batch && !record(&records, counter, message)) {
                    reply = dbus_message_new_error(message, DBUS_ERROR_FAILED, "notify-floor cannot keep the notification");
                } else if (!batch && file >= 0 && !keep(file, counter, message)) {
                    reply = dbus_message_new_error(message, DBUS_ERROR_FAILED, "notify-floor cannot keep the notification");
                } else {
                    reply = dbus_message_new_method_return(message);
                    dbus_message_append_args(reply, DBUS_TYPE_UINT32, &counter, DBUS_TYPE_INVALID);
                    if (file >= 0) {
                        if (count == KEPT) {
                            dbus_uint32_t id = kept[oldest], reason = 4;
                            closed = closed_signal(id, reason);
                            kept[oldest] = counter;
                            oldest = (oldest + 1) % KEPT;
                        } else {
                            kept[(oldest + count++) % KEPT] = counter;
                        }
                    }
                }
            } else if (dbus_message_is_method_call(message, notifications_name, "GetServerInformation")) {
                const char *who = "notify-floor", *version = "1", *spec = "1.2";
                reply = dbus_message_new_method_return(message);
                dbus_message_append_args(reply, DBUS_TYPE_STRING, &who, DBUS_TYPE_STRING, &who, DBUS_TYPE_STRING, &version,
                                         DBUS_TYPE_STRING, &spec, DBUS_TYPE_INVALID);
            } else {
                reply = dbus_message_new_error(message, DBUS_ERROR_UNKNOWN_METHOD, "notify-floor answers Notify only");
            }
            if (batch) {
                /* Sent once what this read brought is kept. */
                if (outs + 2 > out_capacity) {
                    out_capacity = out_capacity ? 2 * out_capacity : 64;
                    DBusMessage **grown = realloc(out, out_capacity * sizeof *out);
                    if (!grown) return 1;
                    out = grown;
                }
                if (!dbus_message_get_no_reply(message)) {
                    out[outs++] = reply;
                } else {
                    dbus_message_unref(reply);
                }
                if (closed) out[outs++] = closed;
                dbus_message_unref(message);
                continue;
            }
            if (!dbus_message_get_no_reply(message)) dbus_connection_send(bus, reply, NULL);
            dbus_message_unref(reply);
            if (closed) {
                dbus_connection_send(bus, closed, NULL);
                dbus_message_unref(closed);
            }
            dbus_message_unref(message);
        }
        if (batch && outs > 0) {
            if (records.length > 0 && !write_all(file, &records)) {
                perror("notify-floor: the journal");
                return 1;
            }
            records.length = 0;
            for (size_t index = 0; index < outs; index++) {
                if (!marshal(&wire, out[index], &serial)) return 1;
                dbus_message_unref(out[index]);
            }
            outs = 0;
            if (!write_all(socket, &wire)) break;
            wire.length = 0;
        }
    }
    return 0;
}
