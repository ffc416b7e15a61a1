#!/usr/bin/python3
"""Load for bench-schedule: APPS apps (org.bench.App001 …, as bench-common.sh names them) schedule EACH
requests an hour away, each app on its own connection; then PROBES more
requests, spread over the next seconds, are watched arrive: the time from
each one's due time (its `delivered-for`) to the NotificationsChanged that
announces it, read here.

    bench-schedule-load.py ADDRESS APPS EACH PROBES

prints `filled=N fill_s=…` once the requests are in, waits for a line on
standard input (the caller measures memory then), and prints
`delivered=N late_p50_ms=… late_p99_ms=… late_max_ms=…`."""
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

address, apps, each, probes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
TODAYD, MANAGER = "io.github.todayd.Today1", "/io/github/todayd/Today1"
CENTER, NOTIFICATIONS = "io.github.todayd.Today1.Center", "io.github.todayd.Today1.Notifications"

DBusGMainLoop(set_as_default=True)
connections = []
for n in range(1, apps + 1):
    bus = dbus.bus.BusConnection(address)
    manager = bus.get_object(TODAYD, MANAGER)
    manager.RegisterApp("org.bench.App%03d" % n, dbus_interface=CENTER)
    connections.append(dbus.Interface(manager, NOTIFICATIONS))

content = dbus.Dictionary({"title": "Bench", "body": "an hour from now"}, signature="sv")
start = time.monotonic()
for j in range(each):
    for center in connections:
        center.Schedule("r%d" % j, content, dbus.Dictionary({"after": dbus.Double(3600 + j)}, signature="sv"))
print("filled=%d fill_s=%.1f" % (apps * each, time.monotonic() - start), flush=True)
sys.stdin.readline()

watcher = dbus.bus.BusConnection(address)
list_center = dbus.Interface(watcher.get_object(TODAYD, MANAGER), NOTIFICATIONS)
lateness = []
seen = set()


def changed(ids, removed):
    received = time.time()
    # Each notification once: it is announced again when it expires.
    for id in ids:
        if id in seen:
            continue
        seen.add(id)
        hints = list_center.GetNotification(id).get("hints", {})
        due = hints.get("delivered-for")
        if due is not None:
            lateness.append(received - int(due) / 1e6)
    if len(lateness) >= probes:
        loop.quit()


watcher.add_signal_receiver(changed, "NotificationsChanged", NOTIFICATIONS, None, MANAGER)
for k in range(probes):
    center = connections[k % len(connections)]
    center.Schedule("probe-%d" % k, content, dbus.Dictionary({"after": dbus.Double(3 + k * 0.1)}, signature="sv"))
loop = GLib.MainLoop()
GLib.timeout_add_seconds(3 + int(probes * 0.1) + 20, loop.quit)
loop.run()
lateness.sort()


def at(p):
    return lateness[min(len(lateness) - 1, int(p * (len(lateness) - 1) + 0.5))] * 1000 if lateness else -1


print("delivered=%d late_p50_ms=%.1f late_p99_ms=%.1f late_max_ms=%.1f" % (len(lateness), at(0.5), at(0.99), at(1.0)), flush=True)
