"""Random iCalendar files and their occurrences in a 24-hour window, as
Python's icalendar and recurring-ical-events expand them: the independent
side of Up Next's differential test.

    icalcheck.py SEED COUNT FOLDER LOCAL_ZONE

Writes FOLDER/cal-N.ics and prints one JSON line per calendar:
{"file", "from", "to", "occurrences": [[uid, start, end], ...]} with
seconds since the epoch. Dates and floating times are read in LOCAL_ZONE.
"""
import datetime as dt
import json
import random
import sys
import zoneinfo

import icalendar
import recurring_ical_events

seed, count, folder, local_name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(seed)
local = zoneinfo.ZoneInfo(local_name)
zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney"]
# Days on which clocks change in 2027 (EU, US, Australia), to put windows across.
switches = [dt.date(2027, 3, 28), dt.date(2027, 10, 31), dt.date(2027, 3, 14), dt.date(2027, 11, 7), dt.date(2027, 4, 4)]
weekdays = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


def epoch(value):
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=local)
        return int(value.timestamp())
    return int(dt.datetime.combine(value, dt.time(0), tzinfo=local).timestamp())


def stamp(value, kind):
    """A DTSTART-like value: kind is 'utc', 'floating', a zone name or 'date'."""
    if kind == "date":
        return value.date() if isinstance(value, dt.datetime) else value
    if kind == "floating":
        return value
    if kind == "utc":
        return value.replace(tzinfo=dt.timezone.utc)
    return value.replace(tzinfo=zoneinfo.ZoneInfo(kind))


def event(uid, summary, start, end, kind):
    component = icalendar.Event()
    component.add("uid", uid)
    component.add("summary", summary)
    component.add("dtstamp", dt.datetime(2027, 1, 1, tzinfo=dt.timezone.utc))
    component.add("dtstart", stamp(start, kind))
    component.add("dtend", stamp(end, kind))
    return component


def occurrence_starts(component, around, kind):
    """Some starts of the event near `around`, to exclude or move."""
    calendar = icalendar.Calendar()
    calendar.add_component(component)
    low = dt.datetime.combine(around - dt.timedelta(days=1), dt.time(0), tzinfo=local)
    high = dt.datetime.combine(around + dt.timedelta(days=2), dt.time(0), tzinfo=local)
    return [c["DTSTART"].dt for c in recurring_ical_events.of(calendar).between(low, high)]


for number in range(count):
    if rng.random() < 0.5:
        day = rng.choice(switches) + dt.timedelta(days=rng.choice([-1, 0]))
    else:
        day = dt.date(2027, 1, 10) + dt.timedelta(days=rng.randrange(340))
    window_start = dt.datetime.combine(day, dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60)), tzinfo=local)
    window_end = window_start + dt.timedelta(hours=24)
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//todayd//icalcheck//EN")
    calendar.add("version", "2.0")
    for index in range(rng.randint(1, 4)):
        uid = f"event-{number}-{index}@icalcheck"
        kind = rng.choice(zones + ["utc", "floating", "date"])
        shape = rng.choice(["single", "daily", "weekly", "monthly"])
        if shape == "single":
            first = day + dt.timedelta(days=rng.randint(-2, 2))
        elif shape == "daily":
            first = day - dt.timedelta(days=rng.randint(0, 40))
        elif shape == "weekly":
            first = day - dt.timedelta(weeks=rng.randint(0, 20), days=rng.randint(0, 6))
        else:
            first = day - dt.timedelta(days=rng.randint(0, 300))
            first = first.replace(day=min(first.day, 28))
        start = dt.datetime.combine(first, dt.time(rng.randint(7, 20), rng.choice([0, 15, 30, 45])))
        if kind == "date":
            end = start + dt.timedelta(days=rng.randint(1, 3))
        else:
            end = start + dt.timedelta(minutes=rng.choice([15, 30, 45, 60, 90, 120, 180]))
        component = event(uid, f"Event {number}.{index}", start, end, kind)
        if shape != "single":
            rule = {"FREQ": shape.upper(), "INTERVAL": rng.choice([1, 1, 2, 3]) if shape != "monthly" else rng.choice([1, 1, 2])}
            if shape == "weekly":
                rule["BYDAY"] = weekdays[first.weekday()]
            if shape == "monthly":
                rule["BYMONTHDAY"] = first.day
            ending = rng.random()
            if ending < 0.25:
                rule["COUNT"] = rng.randint(1, 60)
            elif ending < 0.5:
                # At or after the first occurrence: an UNTIL before DTSTART is no calendar's.
                until = dt.datetime.combine(max(first + dt.timedelta(days=1), day + dt.timedelta(days=rng.randint(-3, 3))), dt.time(23, 59))
                rule["UNTIL"] = until.date() if kind == "date" else until.replace(tzinfo=dt.timezone.utc)
            component.add("rrule", rule)
            nearby = occurrence_starts(component, day, kind)
            if nearby and rng.random() < 0.4:
                component.add("exdate", rng.choice(nearby))
            nearby = occurrence_starts(component, day, kind)
            if nearby and kind != "date" and rng.random() < 0.4:
                moved = rng.choice(nearby)
                shift = dt.timedelta(hours=rng.randint(1, 3))
                naive = moved.replace(tzinfo=None)
                override = event(uid, f"Event {number}.{index} (moved)", naive + shift, naive + shift + (end - start), kind)
                override.add("recurrence-id", moved)
                calendar.add_component(override)
        calendar.add_component(component)
    path = f"{folder}/cal-{number}.ics"
    with open(path, "wb") as f:
        f.write(calendar.to_ical())
    found = []
    # Floating times and dates are read in the window's zone, so the window
    # is given in the local zone for them; for times with a zone it is given
    # in UTC (the same instants), because recurring-ical-events 3.x misses an
    # event that overlaps a window given in a zone on the day that zone's
    # clocks change (an event 00:15-02:15 UTC against a window from 03:35
    # CEST, 28 March 2027).
    def zoned(c):
        value = c["DTSTART"].dt
        return isinstance(value, dt.datetime) and value.tzinfo is not None
    utc = dt.timezone.utc
    local_found = [c for c in recurring_ical_events.of(calendar).between(window_start, window_end) if not zoned(c)]
    utc_found = [c for c in recurring_ical_events.of(calendar).between(window_start.astimezone(utc), window_end.astimezone(utc)) if zoned(c)]
    for c in local_found + utc_found:
        begin = c["DTSTART"].dt
        if "DTEND" in c:
            finish = c["DTEND"].dt
        elif "DURATION" in c:
            finish = begin + c["DURATION"].dt
        else:
            finish = begin + dt.timedelta(days=1) if not isinstance(begin, dt.datetime) else begin
        found.append([str(c["UID"]), epoch(begin), epoch(finish)])
    print(json.dumps({"file": path, "from": int(window_start.timestamp()), "to": int(window_end.timestamp()), "occurrences": sorted(found)}))
