"""A quiet 20-second WAV tone whose INFO chunk gives its title, artist and
album, for players on a machine with no sound device (the benchmarks'
and the tests' songs for mpv).
    make-song.py FILE TITLE [ARTIST [ALBUM]]"""
import math, struct, sys

def chunk(tag, data):
    return tag + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")

path, title = sys.argv[1], sys.argv[2]
artist = sys.argv[3] if len(sys.argv) > 3 else "Bench"
album = sys.argv[4] if len(sys.argv) > 4 else "Bench"
rate = 8000
samples = bytes(int(128 + 20 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(rate * 20))
info = b"INFO" + b"".join(chunk(tag, text.encode() + b"\0") for tag, text in ((b"INAM", title), (b"IART", artist), (b"IPRD", album)))
body = b"WAVE" + chunk(b"fmt ", struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)) + chunk(b"LIST", info) + chunk(b"data", samples)
open(path, "wb").write(chunk(b"RIFF", body))
