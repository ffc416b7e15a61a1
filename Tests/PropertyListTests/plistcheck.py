#!/usr/bin/env python3
"""Python's plistlib as the second opinion in differential tests.

  plistcheck.py dump FILE...            one tagged-JSON line per file
  plistcheck.py write DIR               each DIR/N.json -> DIR/N.xml, DIR/N.binary

Tagged JSON: {"s": str} {"i": "123"} {"r": "hex bits"} {"b": true}
{"d": seconds} {"data": "hex"} {"a": [...]} {"dict": [[key, value], ...]}
"""
import calendar, datetime, json, plistlib, struct, sys

def tag(v):
    if isinstance(v, bool): return {"b": v}
    if isinstance(v, int): return {"i": str(v)}
    if isinstance(v, float): return {"r": struct.pack(">d", v).hex()}
    if isinstance(v, str): return {"s": v}
    if isinstance(v, bytes): return {"data": v.hex()}
    if isinstance(v, datetime.datetime): return {"d": calendar.timegm(v.utctimetuple())}
    if isinstance(v, list): return {"a": [tag(x) for x in v]}
    if isinstance(v, dict): return {"dict": [[k, tag(x)] for k, x in v.items()]}
    raise TypeError(type(v))

def untag(t):
    (k, v), = t.items()
    if k == "b": return v
    if k == "i": return int(v)
    if k == "r": return struct.unpack(">d", bytes.fromhex(v))[0]
    if k == "s": return v
    if k == "data": return bytes.fromhex(v)
    if k == "d": return datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=v)
    if k == "a": return [untag(x) for x in v]
    if k == "dict": return {key: untag(x) for key, x in v}
    raise ValueError(k)

if sys.argv[1] == "dump":
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            print(json.dumps(tag(plistlib.load(f)), ensure_ascii=False, sort_keys=False))
elif sys.argv[1] == "write":
    import glob, os
    for path in glob.glob(os.path.join(sys.argv[2], "*.json")):
        with open(path) as f:
            value = untag(json.load(f))
        for name, fmt in (("xml", plistlib.FMT_XML), ("binary", plistlib.FMT_BINARY)):
            with open(path[:-len("json")] + name, "wb") as f:
                plistlib.dump(value, f, fmt=fmt, sort_keys=False)
