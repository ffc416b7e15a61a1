// The calendars Up Next reads: iCalendar files (RFC 5545) as libical
// parses them, each event's recurrence expanded (RRULE, RDATE, EXDATE,
// RECURRENCE-ID overrides) in its own time zone, for a window of time.
import CICal
import Foundation

/// One occurrence of an event.
public struct CalendarEvent: Sendable, Equatable {
    public var uid: String
    public var summary: String
    public var location: String
    public var start: Date
    public var end: Date
    public var allDay: Bool
    /// The file it came from.
    public var file: String
}

/// Expands the events of iCalendar text with libical.
public enum CalendarReader {
    /// The `.ics` files `sources` names: files as they are, folders
    /// searched three levels deep (khal and vdirsyncer keep one event per
    /// file, a folder per calendar), sorted.
    public static func files(in sources: [String]) -> [String] {
        var found: [String] = []
        func visit(_ path: String, depth: Int) {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return }
            if !isFolder.boolValue {
                if path.hasSuffix(".ics") || depth == 0 { found.append(path) }
                return
            }
            guard depth < 3, let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
            for name in names.sorted() where !name.hasPrefix(".") { visit(path + "/" + name, depth: depth + 1) }
        }
        for source in sources { visit(source, depth: 0) }
        return found
    }

    /// Every occurrence in `files` that overlaps `from..<to`, by start.
    /// A file that cannot be read or parsed is reported through `problem`
    /// and skipped.
    public static func occurrences(
        inFiles files: [String], from: Date, to: Date, zone: TimeZone = .current, problem: (String) -> Void = { _ in }
    ) -> [CalendarEvent] {
        var events: [CalendarEvent] = []
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                problem("\(file): cannot be read")
                continue
            }
            guard data.count <= 64 << 20 else {
                problem("\(file): over 64 MiB, skipped")
                continue
            }
            events += occurrences(in: String(decoding: data, as: UTF8.self), file: file, from: from, to: to, zone: zone, problem: problem)
        }
        return events.sorted { ($0.start, $0.end, $0.summary) < ($1.start, $1.end, $1.summary) }
    }

    /// The occurrences of one calendar's text.
    public static func occurrences(
        in text: String, file: String = "", from: Date, to: Date, zone: TimeZone = .current, problem: (String) -> Void = { _ in }
    ) -> [CalendarEvent] {
        guard let root = text.withCString({ icalparser_parse_string($0) }) else {
            problem("\(file): not an iCalendar file")
            return []
        }
        defer { icalcomponent_free(root) }
        guard let local = icaltimezone_get_builtin_timezone(zone.identifier) ?? icaltimezone_get_utc_timezone(),
            let utc = icaltimezone_get_utc_timezone()
        else {
            problem("libical has no time zones")
            return []
        }
        let context = Context(root: root, local: local, utc: utc)
        var masters: [OpaquePointer] = []
        // Overrides by UID: the instant they replace, and the event.
        var overrides: [String: [(replaces: Int64, event: OpaquePointer)]] = [:]
        for event in context.events() {
            let recurrenceID = icalcomponent_get_recurrenceid(event)
            if icaltime_is_null_time(recurrenceID) == 0,
                let property = icalcomponent_get_first_property(event, ICAL_RECURRENCEID_PROPERTY)
            {
                let replaced = context.instant(recurrenceID, of: property)
                overrides[context.uid(event), default: []].append((replaced, event))
            } else {
                masters.append(event)
            }
        }
        let window = (Int64(from.timeIntervalSince1970.rounded(.down)), Int64(to.timeIntervalSince1970.rounded(.up)))
        var result: [CalendarEvent] = []
        for event in masters {
            let uid = context.uid(event)
            let replaced = Set((overrides[uid] ?? []).map(\.replaces))
            for (start, end) in context.expand(event, until: window.1) where !replaced.contains(start) {
                if end > window.0 || (end == start && start >= window.0), start < window.1 {
                    result.append(context.occurrence(event, start: start, end: end, file: file))
                }
            }
        }
        for (_, list) in overrides {
            for (_, event) in list {
                guard let (start, end) = context.span(event), start < window.1, end > window.0 || (end == start && start >= window.0) else {
                    continue
                }
                result.append(context.occurrence(event, start: start, end: end, file: file))
            }
        }
        return result
    }

    /// A parsed calendar, and the zone floating times and dates are in.
    struct Context {
        let root: OpaquePointer
        let local: OpaquePointer
        let utc: OpaquePointer
        /// Past this many occurrences of one rule, the rest is not looked at.
        static let maximumOccurrences = 100_000

        func events() -> [OpaquePointer] {
            if icalcomponent_isa(root) == ICAL_VEVENT_COMPONENT { return [root] }
            var list: [OpaquePointer] = []
            var next = icalcomponent_get_first_component(root, ICAL_VEVENT_COMPONENT)
            while let event = next {
                list.append(event)
                next = icalcomponent_get_next_component(root, ICAL_VEVENT_COMPONENT)
            }
            return list
        }

        func uid(_ event: OpaquePointer) -> String { icalcomponent_get_uid(event).map { String(cString: $0) } ?? "" }

        func text(_ event: OpaquePointer, _ kind: icalproperty_kind) -> String {
            guard let property = icalcomponent_get_first_property(event, kind), let value = icalproperty_get_value_as_string(property) else {
                return ""
            }
            return String(cString: value)
        }

        /// The zone a property's time is in: UTC, its TZID (the calendar's
        /// VTIMEZONE, else the tz database's), or floating (the local zone).
        func zone(of time: icaltimetype, property: OpaquePointer?) -> OpaquePointer {
            if icaltime_is_utc(time) != 0 { return utc }
            if let zone = time.zone { return zone }
            if let property, let parameter = icalproperty_get_first_parameter(property, ICAL_TZID_PARAMETER),
                let tzid = icalparameter_get_tzid(parameter)
            {
                if let zone = icalcomponent_get_timezone(root, tzid) { return zone }
                if let zone = icaltimezone_get_builtin_timezone_from_tzid(tzid) ?? icaltimezone_get_builtin_timezone(tzid) { return zone }
            }
            return local
        }

        /// Seconds since the epoch of `time`, read in its zone; a date is
        /// its day's start where the reader is (the local zone).
        func instant(_ time: icaltimetype, of property: OpaquePointer?) -> Int64 {
            var time = time
            if time.is_date != 0 {
                time.is_date = 0
                time.hour = 0
                time.minute = 0
                time.second = 0
                return Int64(icaltime_as_timet_with_zone(time, local))
            }
            let zone = zone(of: time, property: property)
            time.zone = nil
            return Int64(icaltime_as_timet_with_zone(time, zone))
        }

        /// When a rule's UNTIL is: a date, or a time in UTC where DTSTART
        /// has a zone (RFC 5545 3.3.10), or where DTSTART floats, a local one.
        func untilInstant(_ until: icaltimetype, start: icaltimetype, of startProperty: OpaquePointer) -> Int64 {
            if until.is_date != 0 { return instant(until, of: nil) }
            let floating = icaltime_is_utc(start) == 0 && start.zone == nil
                && icalproperty_get_first_parameter(startProperty, ICAL_TZID_PARAMETER) == nil
            if floating { return instant(until, of: nil) }
            var time = until
            time.zone = nil
            return Int64(icaltime_as_timet_with_zone(time, utc))
        }

        /// The event's own start and end.
        func span(_ event: OpaquePointer) -> (Int64, Int64)? {
            guard let startProperty = icalcomponent_get_first_property(event, ICAL_DTSTART_PROPERTY) else { return nil }
            let start = icalproperty_get_dtstart(startProperty)
            guard icaltime_is_null_time(start) == 0 else { return nil }
            let begin = instant(start, of: startProperty)
            return (begin, begin + length(event, start: start, startProperty: startProperty))
        }

        /// How long each occurrence lasts: DTEND − DTSTART, else DURATION,
        /// else a day for a date and nothing for a time (RFC 5545 3.6.1).
        func length(_ event: OpaquePointer, start: icaltimetype, startProperty: OpaquePointer) -> Int64 {
            if let endProperty = icalcomponent_get_first_property(event, ICAL_DTEND_PROPERTY) {
                let end = icalproperty_get_dtend(endProperty)
                if icaltime_is_null_time(end) == 0 {
                    if start.is_date != 0 && end.is_date != 0 {
                        // Whole days, whatever the clocks do between them.
                        return max(0, days(from: start, to: end)) * 86_400
                    }
                    return max(0, instant(end, of: endProperty) - instant(start, of: startProperty))
                }
            }
            if let durationProperty = icalcomponent_get_first_property(event, ICAL_DURATION_PROPERTY) {
                let duration = icalproperty_get_duration(durationProperty)
                return Int64(icaldurationtype_as_int(duration))
            }
            return start.is_date != 0 ? 86_400 : 0
        }

        func days(from start: icaltimetype, to end: icaltimetype) -> Int64 {
            var a = start, b = end
            a.is_date = 0
            b.is_date = 0
            return (Int64(icaltime_as_timet_with_zone(b, utc)) - Int64(icaltime_as_timet_with_zone(a, utc))) / 86_400
        }

        /// Every occurrence's start and end up to `until`: DTSTART, each
        /// RRULE's and RDATE's, less EXDATE's. An all-day event ends at the
        /// start of the day it ends on, however long its days were.
        func expand(_ event: OpaquePointer, until: Int64) -> [(Int64, Int64)] {
            guard let startProperty = icalcomponent_get_first_property(event, ICAL_DTSTART_PROPERTY) else { return [] }
            let start = icalproperty_get_dtstart(startProperty)
            guard icaltime_is_null_time(start) == 0 else { return [] }
            let duration = length(event, start: start, startProperty: startProperty)
            var starts: [Int64: icaltimetype] = [instant(start, of: startProperty): start]
            var rule = icalcomponent_get_first_property(event, ICAL_RRULE_PROPERTY)
            while let property = rule {
                let recurrence = icalproperty_get_rrule(property)
                // libical 3.0 compares a UTC UNTIL with local times as
                // they are: the limit is applied here too, as an instant.
                let last = icaltime_is_null_time(recurrence.until) == 0 ? untilInstant(recurrence.until, start: start, of: startProperty) : Int64.max
                // The start with its zone, so that the iterator compares
                // it with a UTC UNTIL as the instant it is.
                var zoned = start
                if start.is_date == 0, icalproperty_get_first_parameter(startProperty, ICAL_TZID_PARAMETER) != nil {
                    zoned.zone = zone(of: start, property: startProperty)
                }
                if let iterator = icalrecur_iterator_new(recurrence, zoned) {
                    var count = 0
                    while count < Self.maximumOccurrences {
                        let next = icalrecur_iterator_next(iterator)
                        if icaltime_is_null_time(next) != 0 { break }
                        let at = instant(next, of: startProperty)
                        if at >= until || at > last { break }
                        starts[at] = next
                        count += 1
                    }
                    icalrecur_iterator_free(iterator)
                }
                rule = icalcomponent_get_next_property(event, ICAL_RRULE_PROPERTY)
            }
            var date = icalcomponent_get_first_property(event, ICAL_RDATE_PROPERTY)
            while let property = date {
                let value = icalproperty_get_rdate(property)
                let time = icaltime_is_null_time(value.time) == 0 ? value.time : value.period.start
                if icaltime_is_null_time(time) == 0 { starts[instant(time, of: property)] = time }
                date = icalcomponent_get_next_property(event, ICAL_RDATE_PROPERTY)
            }
            var excluded = icalcomponent_get_first_property(event, ICAL_EXDATE_PROPERTY)
            while let property = excluded {
                starts[instant(icalproperty_get_exdate(property), of: property)] = nil
                excluded = icalcomponent_get_next_property(event, ICAL_EXDATE_PROPERTY)
            }
            return starts.sorted { $0.key < $1.key }.map { at, time in
                guard time.is_date != 0 else { return (at, at + duration) }
                var end = time
                icaltime_adjust(&end, Int32(clamping: duration / 86_400), 0, 0, 0)
                return (at, instant(end, of: nil))
            }
        }

        func occurrence(_ event: OpaquePointer, start: Int64, end: Int64, file: String) -> CalendarEvent {
            let allDay = icalcomponent_get_first_property(event, ICAL_DTSTART_PROPERTY).map { icalproperty_get_dtstart($0).is_date != 0 } ?? false
            return CalendarEvent(
                uid: uid(event), summary: text(event, ICAL_SUMMARY_PROPERTY), location: text(event, ICAL_LOCATION_PROPERTY),
                start: Date(timeIntervalSince1970: TimeInterval(start)), end: Date(timeIntervalSince1970: TimeInterval(end)), allDay: allDay,
                file: file)
        }
    }
}
