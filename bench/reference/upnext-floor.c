/* The floor of Up Next's provider run: the same iCalendar files parsed
 * with libical and every event expanded over the same 24 hours, as
 * Essentials/Widgets/Calendar.swift does (each event's zone, its RRULEs
 * from a start that carries that zone, UNTIL as an instant, RDATE, EXDATE,
 * RECURRENCE-ID overrides), and nothing else: no output but the count.
 *   upnext-floor LOCAL_ZONE FILE...   (the window starts now)
 */
#include <libical/ical.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static icaltimezone *local_zone, *utc_zone;

static icaltimezone *zone_of(icalcomponent *root, struct icaltimetype t, icalproperty *p) {
    if (icaltime_is_utc(t)) return utc_zone;
    if (t.zone) return (icaltimezone *)t.zone;
    icalparameter *param = p ? icalproperty_get_first_parameter(p, ICAL_TZID_PARAMETER) : NULL;
    if (param) {
        const char *tzid = icalparameter_get_tzid(param);
        icaltimezone *z = icalcomponent_get_timezone(root, tzid);
        if (!z) z = icaltimezone_get_builtin_timezone_from_tzid(tzid);
        if (!z) z = icaltimezone_get_builtin_timezone(tzid);
        if (z) return z;
    }
    return local_zone;
}

static long long instant(icalcomponent *root, struct icaltimetype t, icalproperty *p) {
    if (t.is_date) {
        t.is_date = 0; t.hour = t.minute = t.second = 0;
        return icaltime_as_timet_with_zone(t, local_zone);
    }
    icaltimezone *z = zone_of(root, t, p);
    t.zone = NULL;
    return icaltime_as_timet_with_zone(t, z);
}

static long long length_of(icalcomponent *root, icalcomponent *e, struct icaltimetype start, icalproperty *sp) {
    icalproperty *ep = icalcomponent_get_first_property(e, ICAL_DTEND_PROPERTY);
    if (ep) {
        struct icaltimetype end = icalproperty_get_dtend(ep);
        if (!icaltime_is_null_time(end)) {
            long long d = instant(root, end, ep) - instant(root, start, sp);
            return d > 0 ? d : 0;
        }
    }
    icalproperty *dp = icalcomponent_get_first_property(e, ICAL_DURATION_PROPERTY);
    if (dp) return icaldurationtype_as_int(icalproperty_get_duration(dp));
    return start.is_date ? 86400 : 0;
}

static int contains(long long *list, int n, long long v) {
    for (int i = 0; i < n; i++) if (list[i] == v) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: upnext-floor LOCAL_ZONE FILE...\n"); return 2; }
    local_zone = icaltimezone_get_builtin_timezone(argv[1]);
    utc_zone = icaltimezone_get_utc_timezone();
    if (!local_zone) local_zone = utc_zone;
    long long from = time(NULL), to = from + 86400;
    long count = 0;
    for (int f = 2; f < argc; f++) {
        FILE *file = fopen(argv[f], "rb");
        if (!file) { perror(argv[f]); continue; }
        fseek(file, 0, SEEK_END); long size = ftell(file); rewind(file);
        char *text = malloc(size + 1);
        if (fread(text, 1, size, file) != (size_t)size) { fclose(file); free(text); continue; }
        text[size] = 0; fclose(file);
        icalcomponent *root = icalparser_parse_string(text);
        free(text);
        if (!root) continue;
        /* Overrides first: the instants they replace. */
        int overrides = 0, capacity = 64;
        long long *replaced = malloc(sizeof *replaced * capacity);
        for (icalcomponent *e = icalcomponent_get_first_component(root, ICAL_VEVENT_COMPONENT); e;
             e = icalcomponent_get_next_component(root, ICAL_VEVENT_COMPONENT)) {
            icalproperty *rp = icalcomponent_get_first_property(e, ICAL_RECURRENCEID_PROPERTY);
            if (!rp) continue;
            if (overrides == capacity) replaced = realloc(replaced, sizeof *replaced * (capacity *= 2));
            replaced[overrides++] = instant(root, icalcomponent_get_recurrenceid(e), rp);
            icalproperty *sp = icalcomponent_get_first_property(e, ICAL_DTSTART_PROPERTY);
            if (!sp) continue;
            struct icaltimetype s = icalproperty_get_dtstart(sp);
            long long a = instant(root, s, sp), b = a + length_of(root, e, s, sp);
            if (a < to && (b > from || (a == b && a >= from))) count++;
        }
        for (icalcomponent *e = icalcomponent_get_first_component(root, ICAL_VEVENT_COMPONENT); e;
             e = icalcomponent_get_next_component(root, ICAL_VEVENT_COMPONENT)) {
            if (icalcomponent_get_first_property(e, ICAL_RECURRENCEID_PROPERTY)) continue;
            icalproperty *sp = icalcomponent_get_first_property(e, ICAL_DTSTART_PROPERTY);
            if (!sp) continue;
            struct icaltimetype start = icalproperty_get_dtstart(sp);
            if (icaltime_is_null_time(start)) continue;
            long long duration = length_of(root, e, start, sp);
            int n = 0, cap = 64;
            long long *starts = malloc(sizeof *starts * cap);
            starts[n++] = instant(root, start, sp);
            for (icalproperty *p = icalcomponent_get_first_property(e, ICAL_RRULE_PROPERTY); p;
                 p = icalcomponent_get_next_property(e, ICAL_RRULE_PROPERTY)) {
                struct icalrecurrencetype rule = icalproperty_get_rrule(p);
                long long last = icaltime_is_null_time(rule.until) ? 0x7fffffffffffffffLL
                    : rule.until.is_date ? instant(root, rule.until, NULL)
                    : (icaltime_is_utc(start) || icalproperty_get_first_parameter(sp, ICAL_TZID_PARAMETER))
                        ? (long long)icaltime_as_timet_with_zone((struct icaltimetype){rule.until.year, rule.until.month, rule.until.day, rule.until.hour, rule.until.minute, rule.until.second, 0, 0, NULL}, utc_zone)
                        : instant(root, rule.until, NULL);
                struct icaltimetype zoned = start;
                if (!start.is_date && icalproperty_get_first_parameter(sp, ICAL_TZID_PARAMETER)) zoned.zone = zone_of(root, start, sp);
                icalrecur_iterator *it = icalrecur_iterator_new(rule, zoned);
                if (!it) continue;
                for (int k = 0; k < 100000; k++) {
                    struct icaltimetype next = icalrecur_iterator_next(it);
                    if (icaltime_is_null_time(next)) break;
                    long long at = instant(root, next, sp);
                    if (at >= to || at > last) break;
                    if (!contains(starts, n, at)) {
                        if (n == cap) starts = realloc(starts, sizeof *starts * (cap *= 2));
                        starts[n++] = at;
                    }
                }
                icalrecur_iterator_free(it);
            }
            for (icalproperty *p = icalcomponent_get_first_property(e, ICAL_RDATE_PROPERTY); p;
                 p = icalcomponent_get_next_property(e, ICAL_RDATE_PROPERTY)) {
                struct icaldatetimeperiodtype v = icalproperty_get_rdate(p);
                struct icaltimetype t = icaltime_is_null_time(v.time) ? v.period.start : v.time;
                if (icaltime_is_null_time(t)) continue;
                long long at = instant(root, t, p);
                if (!contains(starts, n, at)) {
                    if (n == cap) starts = realloc(starts, sizeof *starts * (cap *= 2));
                    starts[n++] = at;
                }
            }
            for (int i = 0; i < n; i++) {
                long long a = starts[i], b = a + duration;
                int excluded = contains(replaced, overrides, a);
                for (icalproperty *p = icalcomponent_get_first_property(e, ICAL_EXDATE_PROPERTY); p && !excluded;
                     p = icalcomponent_get_next_property(e, ICAL_EXDATE_PROPERTY))
                    excluded = instant(root, icalproperty_get_exdate(p), p) == a;
                if (!excluded && a < to && (b > from || (a == b && a >= from))) count++;
            }
            free(starts);
        }
        free(replaced);
        icalcomponent_free(root);
    }
    printf("%ld\n", count);
    return 0;
}
