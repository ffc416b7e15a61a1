#!/usr/bin/python3
"""A minimal Today panel: lists the widgets, prints each snapshot, asks for
updates, and follows changes until interrupted (or for SECONDS seconds).

    python3 today-applet.py [SECONDS]

It talks to the session bus (DBUS_SESSION_BUS_ADDRESS). Needs python3-dbus
and python3-gi.
"""
import sys

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

NAME = "io.github.todayd.Today1"
MANAGER = "/io/github/todayd/Today1"
WIDGET = "io.github.todayd.Today1.Widget"

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
center = dbus.Interface(bus.get_object(NAME, MANAGER), "io.github.todayd.Today1.Center")


def show(path):
    """Prints one widget as a panel would draw it."""
    props = dbus.Interface(bus.get_object(NAME, path), "org.freedesktop.DBus.Properties")
    widget = props.GetAll(WIDGET)
    if not widget["HasContent"]:
        return  # panels hide widgets without content
    snapshot = widget["Snapshot"]
    print("[%s] %s" % (widget["DisplayName"], snapshot.get("title", "(no snapshot yet)")))
    if "body" in snapshot:
        print("    " + snapshot["body"])
    if "url" in snapshot:
        print("    tap opens " + snapshot["url"])


def changed(interface, values, invalidated, path=None):
    if interface == WIDGET and "Snapshot" in values:
        print("changed: %s -> %s" % (path.split("/")[-1], values["Snapshot"].get("title", "")))


# Follow every widget's PropertiesChanged, and widgets coming and going.
bus.add_signal_receiver(changed, dbus_interface="org.freedesktop.DBus.Properties",
                        signal_name="PropertiesChanged", bus_name=NAME, path_keyword="path")
bus.add_signal_receiver(lambda path, interfaces: print("added:", path), dbus_interface="org.freedesktop.DBus.ObjectManager",
                        signal_name="InterfacesAdded", bus_name=NAME)

for path in center.ListWidgets():
    show(path)

# Ask every widget with content for fresh content; the answers come as signals.
results = center.UpdateAll(timeout=120)
for widget_id, result in sorted(results.items()):
    print("update %s: %s" % (widget_id, result))

loop = GLib.MainLoop()
if len(sys.argv) > 1:
    GLib.timeout_add(int(float(sys.argv[1]) * 1000), loop.quit)
try:
    loop.run()
except KeyboardInterrupt:
    pass
