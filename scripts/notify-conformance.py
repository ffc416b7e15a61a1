"""The same calls of the Desktop Notifications Specification against one
server, on the bus of DBUS_SESSION_BUS_ADDRESS; one line per check:
CHECK<TAB>WHAT THE SERVER DID. scripts/notify-conformance runs it against
dunst and todayd and sets the answers side by side."""
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SessionBus()
proxy = bus.get_object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
server = dbus.Interface(proxy, "org.freedesktop.Notifications")
closed = []
bus.add_signal_receiver(lambda i, r: closed.append((int(i), int(r))), "NotificationClosed", "org.freedesktop.Notifications")


def pump(seconds):
    """Lets signals arrive for `seconds`."""
    loop = GLib.MainLoop()
    GLib.timeout_add(int(seconds * 1000), loop.quit)
    loop.run()


def report(check, what):
    print("%s\t%s" % (check, what))
    sys.stdout.flush()


def error_name(call):
    try:
        return "answered %s" % (call(),)
    except dbus.DBusException as error:
        return error.get_dbus_name()


def notify(summary, replaces=0, actions=(), hints=None, timeout=-1, app="Conformance"):
    return int(server.Notify(app, dbus.UInt32(replaces), "", summary, "body", dbus.Array(actions, signature="s"),
                             dbus.Dictionary(hints or {}, signature="sv"), dbus.Int32(timeout)))


name, vendor, version, spec = server.GetServerInformation()
report("GetServerInformation spec_version", str(spec))
capabilities = sorted(str(c) for c in server.GetCapabilities())
report("GetCapabilities", " ".join(capabilities))

first = notify("first")
report("Notify: id", "a number above 0" if first > 0 else "0")
second = notify("second")
report("Notify: next id", "greater" if second > first else "not greater (%d after %d)" % (second, first))
again = notify("replacement", replaces=second)
report("Notify replaces_id of an open one", "same id" if again == second else "another id")
unknown = notify("replaces an id never given", replaces=first + 100000)
report("Notify replaces_id never given", "new id" if unknown not in (first, second, first + 100000) else "id %d" % unknown)
pump(0.3)
report("replacing sends NotificationClosed", "yes" if any(i == second for i, _ in closed) else "no")

server.CloseNotification(dbus.UInt32(first))
pump(0.5)
report("CloseNotification: reason", ",".join(str(r) for i, r in closed if i == first) or "no signal")
report("CloseNotification of an id never given", error_name(lambda: server.CloseNotification(dbus.UInt32(first + 200000))))

short = notify("expires in 300 ms", timeout=300)
pump(1.5)
report("expire_timeout 300 ms: reason", ",".join(str(r) for i, r in closed if i == short) or "no signal in 1.5 s")

stacked = notify("volume 10", hints={"x-dunst-stack-tag": "volume"})
restacked = notify("volume 20", hints={"x-dunst-stack-tag": "volume"})
report("x-dunst-stack-tag replaces", "same id" if stacked == restacked else "another id")
synced = notify("sync 1", hints={"x-canonical-private-synchronous": "sync"})
resynced = notify("sync 2", hints={"x-canonical-private-synchronous": "sync"})
report("x-canonical-private-synchronous replaces", "same id" if synced == resynced else "another id")
plain = notify("brightness 10", hints={"synchronous": "brightness"})
replain = notify("brightness 20", hints={"synchronous": "brightness"})
report("synchronous replaces", "same id" if plain == replain else "another id")

image = dbus.Struct((2, 2, 8, True, 8, 4, dbus.ByteArray(b"\x01\x02\x03")), signature="iiibiiay")
report("image-data with 3 bytes for 2x2 RGBA", error_name(lambda: notify("short picture", hints={"image-data": image})))
good = dbus.Struct((2, 2, 8, True, 8, 4, dbus.ByteArray(bytes(16))), signature="iiibiiay")
report("image-data exact", "taken" if notify("picture", hints={"image-data": good}) > 0 else "refused")
report("urgency as a string", error_name(lambda: notify("urgency", hints={"urgency": "high"})))
report("urgency 7", error_name(lambda: notify("urgency", hints={"urgency": dbus.Byte(7)})))
report("actions of odd length", error_name(lambda: notify("odd", actions=["default"])))
report("value 150", error_name(lambda: notify("progress", hints={"value": dbus.Int32(150)})))
report("markup body", "taken" if notify("<b>bold</b> & <i>it</i>") > 0 else "refused")
report("Inhibit", error_name(lambda: server.Inhibit("conformance", "a test", dbus.Dictionary({}, signature="sv"))))
report("a method the specification does not have", error_name(lambda: proxy.NoSuchMethod(dbus_interface="org.freedesktop.Notifications")))
flood = 0
for n in range(150):
    try:
        notify("flood %d" % n, app="Flood")
    except dbus.DBusException as error:
        flood = error.get_dbus_name()
        break
report("150 Notify from one app at once", flood or "all taken")
