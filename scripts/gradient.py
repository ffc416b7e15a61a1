"""Pictures for scripts/screenshots, with GdkPixbuf.

  gradient.py FILE.png               a 128x128 gradient, the picture of a notification
  gradient.py --bars SHOT.png OUT    the top and bottom 100 rows of a screenshot, stacked
"""
import sys

import gi

gi.require_version("GdkPixbuf", "2.0")
from gi.repository import GdkPixbuf, GLib

if sys.argv[1] == "--bars":
    shot = GdkPixbuf.Pixbuf.new_from_file(sys.argv[2])
    width, height = shot.get_width(), shot.get_height()
    bars = GdkPixbuf.Pixbuf.new(GdkPixbuf.Colorspace.RGB, shot.get_has_alpha(), 8, width, 200)
    shot.copy_area(0, 0, width, 100, bars, 0, 0)
    shot.copy_area(0, height - 100, width, 100, bars, 0, 100)
    bars.savev(sys.argv[3], "png", [], [])
else:
    size = 128
    data = bytearray()
    for y in range(size):
        for x in range(size):
            data += bytes([40 + x, 90 + y // 2, 200 - x // 2])
    picture = GdkPixbuf.Pixbuf.new_from_bytes(GLib.Bytes.new(bytes(data)), GdkPixbuf.Colorspace.RGB, False, 8, size, size, size * 3)
    picture.savev(sys.argv[1], "png", [], [])
