import DBus
import FoundationEssentials

/// A notification as todayd's journal keeps it: a run of fields, each a
/// tag (one byte), a length (32 bits, little endian) and that many bytes.
/// Fields may come in any order and a reader skips the tags it does not
/// know, so a later todayd can add fields that an earlier one passes over.
///
/// This is the form written before every Notify is answered, so it is made
/// for speed: no keys to hash or unique, as a property list has, only the
/// bytes appended. Hints and GNotification targets are kept in D-Bus's wire
/// format (`Value.wireBytes`), so that they read back with their types.
/// `stored`, the property list, stays the form of the earlier journals.
extension TodayNotification {
    enum Field: UInt8 {
        case id = 1, appID, appName, appIcon, summary, body, urgency, category, time, open, resident, transient, source
        case hints, action, imagePath, imageFile, value, expires, stackTag, appNotificationID, gtkDefaultAction
        case gtkDefaultTarget, desktopEntry, image, duplicates
    }

    /// The fields of an action (`Field.action`) and of a picture (`Field.image`).
    enum Part: UInt8 {
        case key = 1, label, gtkAction, gtkTarget
        case width = 16, height, rowstride, alpha, bits, channels, data
    }

    /// The record, appended to `bytes`: its size counted first, then its
    /// fields written in place (one of these is written before every
    /// Notify is answered, so nothing is grown or copied field by field).
    public func appendRecord(to bytes: inout [UInt8]) {
        // The wire forms, made once for both passes.
        let wires = Wires(
            hints: hints.value.dictionaryEntries.isEmpty ? nil : try? hints.value.wireBytes(),
            actionTargets: actions.map { action in action.gtkTarget.flatMap { try? $0.wireBytes() } },
            defaultTarget: gtkDefaultTarget.flatMap { try? $0.wireBytes() })
        var counter = FieldWriter()
        writeFields(to: &counter, wires)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: counter.count))
        bytes.withUnsafeMutableBytes { raw in
            var writer = FieldWriter(into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
            writeFields(to: &writer, wires)
        }
    }

    /// What a record holds in D-Bus's wire format.
    private struct Wires {
        var hints: Data?
        var actionTargets: [Data?]
        var defaultTarget: Data?
    }

    private func writeFields(to writer: inout FieldWriter, _ wires: Wires) {
        writer.integer(Field.id, id)
        writer.text(Field.appID, appID)
        writer.text(Field.appName, appName)
        writer.text(Field.appIcon, appIcon)
        writer.text(Field.summary, summary)
        writer.text(Field.body, body)
        writer.integer(Field.urgency, urgency.rawValue)
        writer.text(Field.category, category)
        writer.integer(Field.time, ValueMapping.microseconds(time))
        writer.integer(Field.open, UInt8(isOpen ? 1 : 0))
        writer.integer(Field.resident, UInt8(resident ? 1 : 0))
        if transient { writer.integer(Field.transient, UInt8(1)) }
        writer.text(Field.source, source.rawValue)
        if let hints = wires.hints { writer.bytes(Field.hints, hints) }
        for (action, target) in zip(actions, wires.actionTargets) {
            writer.nested(Field.action) { part in
                part.text(Part.key, action.key)
                part.text(Part.label, action.label)
                if let name = action.gtkAction { part.text(Part.gtkAction, name) }
                if let target { part.bytes(Part.gtkTarget, target) }
            }
        }
        if let image {
            writer.nested(Field.image) { part in
                part.integer(Part.width, image.width)
                part.integer(Part.height, image.height)
                part.integer(Part.rowstride, image.rowstride)
                part.integer(Part.alpha, UInt8(image.hasAlpha ? 1 : 0))
                part.integer(Part.bits, image.bitsPerSample)
                part.integer(Part.channels, image.channels)
                part.bytes(Part.data, image.data)
            }
        }
        if let imagePath { writer.text(Field.imagePath, imagePath) }
        if let imageFile { writer.text(Field.imageFile, imageFile) }
        if let value { writer.integer(Field.value, value) }
        if let expires { writer.integer(Field.expires, ValueMapping.microseconds(expires)) }
        if let stackTag { writer.text(Field.stackTag, stackTag) }
        if let appNotificationID { writer.text(Field.appNotificationID, appNotificationID) }
        if let gtkDefaultAction { writer.text(Field.gtkDefaultAction, gtkDefaultAction) }
        if let target = wires.defaultTarget { writer.bytes(Field.gtkDefaultTarget, target) }
        if let desktopEntry { writer.text(Field.desktopEntry, desktopEntry) }
        if duplicates > 0 { writer.integer(Field.duplicates, duplicates) }
    }

    /// The notification of a record `appendRecord` wrote; nil where the
    /// bytes are not one (a field cut short, a value of the wrong size, an
    /// id, app or summary missing, text that is not UTF-8).
    public init?(record: UnsafeRawBufferPointer) {
        var fields = FieldReader(record)
        var id: UInt32?
        var appID: String?
        var summary: String?
        var time: UInt64?
        var rest: [(UInt8, UnsafeRawBufferPointer)] = []
        while let (tag, payload) = fields.next() {
            switch Field(rawValue: tag) {
            case .id: id = FieldReader.integer(payload)
            case .appID: appID = FieldReader.text(payload)
            case .summary: summary = FieldReader.text(payload)
            case .time: time = FieldReader.integer(payload)
            default: rest.append((tag, payload))
            }
        }
        guard !fields.failed, let id, id != 0, let appID, let summary, let time else { return nil }
        self.init(id: id, appID: appID, appName: appID, summary: summary, time: Self.date(time))
        isOpen = false
        for (tag, payload) in rest {
            // A known field of the wrong form makes the record unreadable:
            // it was not written by todayd.
            guard readField(tag, payload) else { return nil }
        }
    }

    private static func date(_ microseconds: UInt64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }

    /// Reads one field other than the four `init?(record:)` needs first;
    /// false where a known field is malformed.
    private mutating func readField(_ tag: UInt8, _ payload: UnsafeRawBufferPointer) -> Bool {
        func text(_ set: (inout Self, String) -> Void) -> Bool {
            guard let read = FieldReader.text(payload) else { return false }
            set(&self, read)
            return true
        }
        func flag(_ set: (inout Self, Bool) -> Void) -> Bool {
            guard let read: UInt8 = FieldReader.integer(payload), read <= 1 else { return false }
            set(&self, read == 1)
            return true
        }
        func wire() -> Value? { try? Value(wireBytes: Data(payload)) }
        switch Field(rawValue: tag) {
        case .appName: return text { $0.appName = $1 }
        case .appIcon: return text { $0.appIcon = $1 }
        case .body: return text { $0.body = $1 }
        case .category: return text { $0.category = $1 }
        case .imagePath: return text { $0.imagePath = $1 }
        case .imageFile: return text { $0.imageFile = $1 }
        case .stackTag: return text { $0.stackTag = $1 }
        case .appNotificationID: return text { $0.appNotificationID = $1 }
        case .gtkDefaultAction: return text { $0.gtkDefaultAction = $1 }
        case .desktopEntry: return text { $0.desktopEntry = $1 }
        case .open: return flag { $0.isOpen = $1 }
        case .resident: return flag { $0.resident = $1 }
        case .transient: return flag { $0.transient = $1 }
        case .urgency:
            guard let raw: UInt8 = FieldReader.integer(payload), let read = Urgency(rawValue: raw) else { return false }
            urgency = read
        case .source:
            guard let read = FieldReader.text(payload).flatMap(Source.init(rawValue:)) else { return false }
            source = read
        case .value:
            guard let read: Int32 = FieldReader.integer(payload) else { return false }
            value = read
        case .expires:
            guard let read: UInt64 = FieldReader.integer(payload) else { return false }
            expires = Self.date(read)
        case .duplicates:
            guard let read: UInt32 = FieldReader.integer(payload) else { return false }
            duplicates = read
        case .hints:
            guard let read = wire().flatMap(VariantDictionary.init) else { return false }
            hints = read
        case .gtkDefaultTarget:
            guard let value = wire() else { return false }
            gtkDefaultTarget = value
        case .action:
            guard let read = Self.action(payload) else { return false }
            actions.append(read)
        case .image:
            guard let read = Self.image(payload) else { return false }
            image = read
        case .id, .appID, .summary, .time, nil:
            break
        }
        return true
    }

    private static func action(_ record: UnsafeRawBufferPointer) -> Action? {
        var parts = FieldReader(record)
        var key: String?
        var label: String?
        var gtkAction: String?
        var gtkTarget: Value?
        while let (tag, payload) = parts.next() {
            switch Part(rawValue: tag) {
            case .key: key = FieldReader.text(payload)
            case .label: label = FieldReader.text(payload)
            case .gtkAction: gtkAction = FieldReader.text(payload)
            case .gtkTarget: gtkTarget = try? Value(wireBytes: Data(payload))
            default: break
            }
        }
        guard !parts.failed, let key else { return nil }
        return Action(key: key, label: label ?? key, gtkAction: gtkAction, gtkTarget: gtkTarget)
    }

    private static func image(_ record: UnsafeRawBufferPointer) -> Image? {
        var parts = FieldReader(record)
        var numbers: [Part: Int32] = [:]
        var alpha = false
        var data: Data?
        while let (tag, payload) = parts.next() {
            switch Part(rawValue: tag) {
            case .alpha: alpha = FieldReader.integer(payload) == UInt8(1)
            case .data: data = Data(payload)
            case let part?: numbers[part] = FieldReader.integer(payload)
            case nil: break
            }
        }
        guard !parts.failed, let data else { return nil }
        func number(_ part: Part) -> Int32 { numbers[part] ?? 0 }
        return Image(
            width: number(.width), height: number(.height), rowstride: number(.rowstride), hasAlpha: alpha, bitsPerSample: number(.bits),
            channels: number(.channels), data: data)
    }
}

/// Writes tagged fields: a tag byte, a 32-bit little-endian length, the
/// bytes. Made without a buffer it only counts, so that a record's size is
/// known before it is written; made with one it writes, which must be of
/// the size counted for the same fields.
struct FieldWriter {
    private let buffer: UnsafeMutableRawBufferPointer?
    /// The bytes counted or written so far.
    private(set) var count = 0

    init() { buffer = nil }

    init(into buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func bytes(_ tag: some RawRepresentable<UInt8>, _ payload: some ContiguousBytes) {
        payload.withUnsafeBytes { raw in
            header(tag, raw.count)
            put(raw)
        }
    }

    mutating func text(_ tag: some RawRepresentable<UInt8>, _ text: String) {
        let utf8 = text.utf8
        header(tag, utf8.count)
        // Counting needs only the length, which a string knows.
        guard buffer != nil else {
            count += utf8.count
            return
        }
        let written: Void? = utf8.withContiguousStorageIfAvailable { put(UnsafeRawBufferPointer($0)) }
        // A string bridged from elsewhere may not be contiguous UTF-8.
        if written == nil { put(Array(utf8)) }
    }

    mutating func integer<T: FixedWidthInteger>(_ tag: some RawRepresentable<UInt8>, _ value: T) {
        header(tag, MemoryLayout<T>.size)
        put(value.littleEndian)
    }

    /// A field whose bytes are fields of their own: counted first, to
    /// write its length before them.
    mutating func nested(_ tag: some RawRepresentable<UInt8>, _ fill: (inout FieldWriter) -> Void) {
        var inner = FieldWriter()
        fill(&inner)
        header(tag, inner.count)
        if let buffer {
            inner = FieldWriter(into: UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + inner.count]))
            fill(&inner)
        }
        count += inner.count
    }

    private mutating func header(_ tag: some RawRepresentable<UInt8>, _ length: Int) {
        put(tag.rawValue)
        // A field never nears 4 GiB: Notify's message is at most 128 MiB.
        put(UInt32(truncatingIfNeeded: length).littleEndian)
    }

    /// A number's bytes, stored where they go (at any alignment).
    private mutating func put<T: FixedWidthInteger>(_ value: T) {
        buffer?.storeBytes(of: value, toByteOffset: count, as: T.self)
        count += MemoryLayout<T>.size
    }

    private mutating func put(_ bytes: UnsafeRawBufferPointer) {
        if let buffer, !bytes.isEmpty {
            UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + bytes.count]).copyMemory(from: bytes)
        }
        count += bytes.count
    }

    private mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { put($0) }
    }
}

/// Reads the fields `FieldWriter` wrote, checking every length.
struct FieldReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0
    /// A field ran past the end.
    private(set) var failed = false

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    mutating func next() -> (UInt8, UnsafeRawBufferPointer)? {
        guard offset < bytes.count else { return nil }
        guard bytes.count - offset >= 5 else {
            failed = true
            return nil
        }
        let tag = bytes[offset]
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self)))
        let start = offset + 5
        guard length <= bytes.count - start else {
            failed = true
            return nil
        }
        offset = start + length
        return (tag, UnsafeRawBufferPointer(rebasing: bytes[start..<start + length]))
    }

    static func text(_ payload: UnsafeRawBufferPointer) -> String? {
        String(validating: payload, as: UTF8.self)
    }

    static func integer<T: FixedWidthInteger>(_ payload: UnsafeRawBufferPointer) -> T? {
        guard payload.count == MemoryLayout<T>.size else { return nil }
        return T(littleEndian: payload.loadUnaligned(as: T.self))
    }
}
