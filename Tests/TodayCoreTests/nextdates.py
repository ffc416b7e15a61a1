#!/usr/bin/env python3
"""The next time a calendar trigger matches, computed apart from todayd
with Python's zoneinfo (the tz database in /usr/share/zoneinfo), for the
trigger tests to compare against.

Reads one JSON case a line on standard input:
    {"after": EPOCH_SECONDS, "zone": "Europe/Berlin",
     "match": {"hour": 2, "minute": 30, ...}}
and prints, a line each, the epoch seconds of the first matching instant
after "after", or null where none comes within 30 years.

The rules, written out plainly: the parts of the time of day below the
smallest one given are 0, those above it are free; weekday 1 is Sunday; a
local time that does not exist (skipped at a change to daylight saving
time) matches the first instant whose local time is after it; one that
exists twice matches the first of the two."""
import json
import sys
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo


def instant(naive, zone):
    """The epoch seconds of local time `naive` in `zone` by the rules above."""
    first = naive.replace(tzinfo=zone, fold=0)
    second = naive.replace(tzinfo=zone, fold=1)
    candidates = []
    for aware in (first, second):
        utc = aware.astimezone(timezone.utc)
        back = utc.astimezone(zone).replace(tzinfo=None)
        if back == naive:
            candidates.append(int(utc.timestamp()))
    if candidates:
        return min(candidates)
    # In a gap: walk minute by minute from the earlier reading until the
    # local time is past the time asked for.
    start = min(int(first.timestamp()), int(second.timestamp()))
    t = start - start % 60
    while True:
        local = datetime.fromtimestamp(t, tz=timezone.utc).astimezone(zone).replace(tzinfo=None)
        if local > naive:
            return t
        t += 60


def next_match(after, zone_name, match):
    zone = ZoneInfo(zone_name)
    start_day = datetime.fromtimestamp(after, tz=timezone.utc).astimezone(zone).date() - timedelta(days=1)
    hour, minute, second = match.get("hour"), match.get("minute"), match.get("second")
    seconds = [second] if second is not None else [0]
    minutes = [minute] if minute is not None else (list(range(60)) if second is not None else [0])
    hours = [hour] if hour is not None else (list(range(24)) if (minute is not None or second is not None) else [0])
    day = start_day
    for _ in range(366 * 30):
        ok = True
        if "year" in match and match["year"] != day.year:
            ok = False
        if "month" in match and match["month"] != day.month:
            ok = False
        if "day" in match and match["day"] != day.day:
            ok = False
        # isoweekday: Monday 1 … Sunday 7; the trigger's: Sunday 1 … Saturday 7.
        if "weekday" in match and match["weekday"] != day.isoweekday() % 7 + 1:
            ok = False
        if ok:
            for h in hours:
                for m in minutes:
                    for s in seconds:
                        t = instant(datetime(day.year, day.month, day.day, h, m, s), zone)
                        if t > after:
                            return t
        day += timedelta(days=1)
    return None


for line in sys.stdin:
    if line.strip():
        case = json.loads(line)
        print(json.dumps(next_match(case["after"], case["zone"], case["match"])))
