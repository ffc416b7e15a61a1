import DBus
import FoundationEssentials
import PropertyListValues

/// One notification of the notification center (SPEC section 14), as every
/// part of todayd, the view, the banners and todayctl read it: the one
/// model, with its dictionary (`ListNotifications`, `GetNotification`) and
/// its stored form written and read here only.
public struct TodayNotification: Sendable, Equatable {
    public enum Urgency: UInt8, Sendable, Comparable {
        case low = 0, normal = 1, critical = 2
        public static func < (a: Urgency, b: Urgency) -> Bool { a.rawValue < b.rawValue }
    }

    /// Which interface it came through.
    public enum Source: String, Sendable {
        case freedesktop, gtk, todaykit
    }

    /// A button: what is sent back (`ActionInvoked`'s key) and what it says.
    public struct Action: Sendable, Equatable {
        public var key: String
        public var label: String
        /// For a GNotification button: the `app.NAME` action and its target.
        public var gtkAction: String?
        public var gtkTarget: Value?

        public init(key: String, label: String, gtkAction: String? = nil, gtkTarget: Value? = nil) {
            self.key = key
            self.label = label
            self.gtkAction = gtkAction
            self.gtkTarget = gtkTarget
        }
    }

    /// Pixels as `image-data` carries them (`(iiibiiay)`), already checked.
    public struct Image: Sendable, Equatable {
        public var width: Int32
        public var height: Int32
        public var rowstride: Int32
        public var hasAlpha: Bool
        public var bitsPerSample: Int32
        public var channels: Int32
        public var data: Data

        public init(width: Int32, height: Int32, rowstride: Int32, hasAlpha: Bool, bitsPerSample: Int32, channels: Int32, data: Data) {
            self.width = width
            self.height = height
            self.rowstride = rowstride
            self.hasAlpha = hasAlpha
            self.bitsPerSample = bitsPerSample
            self.channels = channels
            self.data = data
        }

        public var value: Value {
            .structure([
                .int32(width), .int32(height), .int32(rowstride), .boolean(hasAlpha), .int32(bitsPerSample), .int32(channels), .bytes(data),
            ])
        }
    }

    /// The fields, kept in one box shared by copies until one of them
    /// changes (a notification is copied from the book to its record,
    /// its signal and its undo; each copy is then one reference).
    private struct Fields: Sendable, Equatable {
        var id: UInt32
        var appID: String
        var appName: String
        var appIcon: String
        var summary: String
        var body: String
        var actions: [Action]
        var urgency: Urgency
        var category: String
        var time: Date
        var isOpen: Bool
        var image: Image?
        var imagePath: String?
        var imageFile: String?
        var value: Int32?
        var resident: Bool
        var transient: Bool
        var source: Source
        var hints: VariantDictionary
        var expires: Date?
        var stackTag: String?
        var appNotificationID: String?
        var gtkDefaultAction: String?
        var gtkDefaultTarget: Value?
        var desktopEntry: String?
        var duplicates: UInt32
    }

    /// Changed only while this notification is its one owner.
    private final class Box: @unchecked Sendable {
        var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    /// The box, copied first where another notification shares it.
    private var owned: Box {
        mutating get {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
            return box
        }
    }

    public var id: UInt32 {
        get { box.fields.id }
        set { owned.fields.id = newValue }
    }

    /// What the list groups by (SPEC section 14: the Flatpak app, the
    /// bundle, the `desktop-entry` hint, else `app_name`).
    public var appID: String {
        get { box.fields.appID }
        set { owned.fields.appID = newValue }
    }

    public var appName: String {
        get { box.fields.appName }
        set { owned.fields.appName = newValue }
    }

    public var appIcon: String {
        get { box.fields.appIcon }
        set { owned.fields.appIcon = newValue }
    }

    public var summary: String {
        get { box.fields.summary }
        set { owned.fields.summary = newValue }
    }

    public var body: String {
        get { box.fields.body }
        set { owned.fields.body = newValue }
    }

    public var actions: [Action] {
        get { box.fields.actions }
        set { owned.fields.actions = newValue }
    }

    public var urgency: Urgency {
        get { box.fields.urgency }
        set { owned.fields.urgency = newValue }
    }

    public var category: String {
        get { box.fields.category }
        set { owned.fields.category = newValue }
    }

    /// When it arrived (or was last replaced).
    public var time: Date {
        get { box.fields.time }
        set { owned.fields.time = newValue }
    }

    /// Open: not expired nor closed; a closed one can stay in the list.
    public var isOpen: Bool {
        get { box.fields.isOpen }
        set { owned.fields.isOpen = newValue }
    }

    /// The picture of `image-data`, until todayd keeps it as `imageFile`.
    public var image: Image? {
        get { box.fields.image }
        set { owned.fields.image = newValue }
    }

    /// The `image-path` hint, as a path.
    public var imagePath: String? {
        get { box.fields.imagePath }
        set { owned.fields.imagePath = newValue }
    }

    /// The PNG file todayd keeps of `image-data`: given as `image-path`
    /// (before the hint's), and removed with the notification.
    public var imageFile: String? {
        get { box.fields.imageFile }
        set { owned.fields.imageFile = newValue }
    }

    /// A progress bar, 0 to 100.
    public var value: Int32? {
        get { box.fields.value }
        set { owned.fields.value = newValue }
    }

    /// Stays open after an action.
    public var resident: Bool {
        get { box.fields.resident }
        set { owned.fields.resident = newValue }
    }

    /// Never enters the list.
    public var transient: Bool {
        get { box.fields.transient }
        set { owned.fields.transient = newValue }
    }

    public var source: Source {
        get { box.fields.source }
        set { owned.fields.source = newValue }
    }

    /// The rest of the hints, as sent (an `a{sv}`).
    public var hints: VariantDictionary {
        get { box.fields.hints }
        set { owned.fields.hints = newValue }
    }

    /// When it closes by itself (reason 1); nil: never.
    public var expires: Date? {
        get { box.fields.expires }
        set { owned.fields.expires = newValue }
    }

    /// `x-canonical-private-synchronous` / `x-dunst-stack-tag`.
    public var stackTag: String? {
        get { box.fields.stackTag }
        set { owned.fields.stackTag = newValue }
    }

    /// Its id within its app: a GNotification's, or a scheduled request's
    /// (SPEC section 18). The same id of the same app replaces it.
    public var appNotificationID: String? {
        get { box.fields.appNotificationID }
        set { owned.fields.appNotificationID = newValue }
    }

    /// For a GNotification: the default action.
    public var gtkDefaultAction: String? {
        get { box.fields.gtkDefaultAction }
        set { owned.fields.gtkDefaultAction = newValue }
    }

    public var gtkDefaultTarget: Value? {
        get { box.fields.gtkDefaultTarget }
        set { owned.fields.gtkDefaultTarget = newValue }
    }

    /// The `desktop-entry` hint.
    public var desktopEntry: String? {
        get { box.fields.desktopEntry }
        set { owned.fields.desktopEntry = newValue }
    }

    /// How many notifications the same as this one, sent before it while
    /// it was open, it stands for (StackDuplicates): 0 for none.
    public var duplicates: UInt32 {
        get { box.fields.duplicates }
        set { owned.fields.duplicates = newValue }
    }

    public init(
        id: UInt32, appID: String, appName: String, summary: String, body: String = "", appIcon: String = "", actions: [Action] = [],
        urgency: Urgency = .normal, category: String = "", time: Date, source: Source = .freedesktop
    ) {
        box = Box(
            Fields(
                id: id, appID: appID, appName: appName, appIcon: appIcon, summary: summary, body: body, actions: actions, urgency: urgency,
                category: category, time: time, isOpen: true, image: nil, imagePath: nil, imageFile: nil, value: nil, resident: false,
                transient: false, source: source, hints: VariantDictionary([]), expires: nil, stackTag: nil, appNotificationID: nil,
                gtkDefaultAction: nil, gtkDefaultTarget: nil, desktopEntry: nil, duplicates: 0))
    }

    public static func == (a: TodayNotification, b: TodayNotification) -> Bool {
        a.box === b.box || a.box.fields == b.box.fields
    }

    /// The notification as `ListNotifications` and `GetNotification` give it.
    public var dictionary: [(String, Value)] {
        var entries: [(String, Value)] = [
            ("id", .uint32(id)), ("app-id", .string(appID)), ("app-name", .string(appName)), ("app-icon", .string(appIcon)),
            ("summary", .string(summary)), ("body", .string(body)),
            ("actions", .array(.structure([.string, .string]), actions.map { .structure([.string($0.key), .string($0.label)]) })),
            ("urgency", .byte(urgency.rawValue)), ("category", .string(category)),
            ("time", .uint64(ValueMapping.microseconds(time))), ("open", .boolean(isOpen)), ("resident", .boolean(resident)),
            ("source", .string(source.rawValue)), ("hints", hints.value),
        ]
        if let image { entries.append(("image-data", image.value)) }
        if let path = imageFile ?? imagePath { entries.append(("image-path", .string(path))) }
        if let value { entries.append(("value", .int32(value))) }
        if duplicates > 0 { entries.append(("duplicates", .uint32(duplicates))) }
        return entries
    }

    // MARK: The stored form

    /// The notification as the store keeps it: a property list.
    public var stored: PlistDictionary {
        var d: PlistDictionary = [
            "id": .unsigned(UInt64(id)), "app-id": .string(appID), "app-name": .string(appName), "app-icon": .string(appIcon),
            "summary": .string(summary), "body": .string(body), "urgency": .integer(Int64(urgency.rawValue)),
            "category": .string(category), "time": .unsigned(ValueMapping.microseconds(time)), "open": .boolean(isOpen),
            "resident": .boolean(resident), "source": .string(source.rawValue),
        ]
        // D-Bus values as they came, type and all.
        if !hints.entries.isEmpty, let bytes = try? hints.value.wireBytes() { d["hints"] = .data(bytes) }
        d["actions"] = .array(
            actions.map { action in
                var entry: PlistDictionary = ["key": .string(action.key), "label": .string(action.label)]
                if let name = action.gtkAction { entry["gtk-action"] = .string(name) }
                if let target = action.gtkTarget, let bytes = try? target.wireBytes() { entry["gtk-target"] = .data(bytes) }
                return .dictionary(entry)
            })
        if let image {
            d["image"] = .dictionary([
                "width": .integer(Int64(image.width)), "height": .integer(Int64(image.height)), "rowstride": .integer(Int64(image.rowstride)),
                "alpha": .boolean(image.hasAlpha), "bits": .integer(Int64(image.bitsPerSample)), "channels": .integer(Int64(image.channels)),
                "data": .data(image.data),
            ])
        }
        if let imagePath { d["image-path"] = .string(imagePath) }
        if let imageFile { d["image-file"] = .string(imageFile) }
        if let value { d["value"] = .integer(Int64(value)) }
        if let expires { d["expires"] = .unsigned(ValueMapping.microseconds(expires)) }
        if let stackTag { d["stack-tag"] = .string(stackTag) }
        if let appNotificationID { d["app-notification-id"] = .string(appNotificationID) }
        if let gtkDefaultAction { d["gtk-default-action"] = .string(gtkDefaultAction) }
        if let target = gtkDefaultTarget, let bytes = try? target.wireBytes() { d["gtk-default-target"] = .data(bytes) }
        if let desktopEntry { d["desktop-entry"] = .string(desktopEntry) }
        if duplicates > 0 { d["duplicates"] = .unsigned(UInt64(duplicates)) }
        // The store never writes a transient one; the form is whole all the same.
        if transient { d["transient"] = .boolean(true) }
        return d
    }

    /// A notification the store kept, or nil where the file is not one.
    public init?(stored d: PlistDictionary) {
        func date(_ key: String) -> Date? {
            guard let micros = d[key]?.uint64 else { return nil }
            return Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        }
        guard let raw = d["id"]?.uint64, let id = UInt32(exactly: raw), id != 0, let appID = d["app-id"]?.string,
            let summary = d["summary"]?.string, let time = date("time")
        else { return nil }
        self.init(id: id, appID: appID, appName: d["app-name"]?.string ?? appID, summary: summary, time: time)
        appIcon = d["app-icon"]?.string ?? ""
        body = d["body"]?.string ?? ""
        urgency = d["urgency"]?.int64.flatMap { UInt8(exactly: $0) }.flatMap(Urgency.init(rawValue:)) ?? .normal
        category = d["category"]?.string ?? ""
        isOpen = d["open"]?.bool ?? false
        resident = d["resident"]?.bool ?? false
        transient = d["transient"]?.bool ?? false
        source = d["source"]?.string.flatMap(Source.init(rawValue:)) ?? .freedesktop
        hints = d["hints"]?.data.flatMap { try? Value(wireBytes: $0) }.flatMap(VariantDictionary.init) ?? VariantDictionary([])
        actions = (d["actions"]?.array ?? []).compactMap { value in
            guard let entry = value.dictionary, let key = entry["key"]?.string else { return nil }
            return Action(
                key: key, label: entry["label"]?.string ?? key, gtkAction: entry["gtk-action"]?.string,
                gtkTarget: entry["gtk-target"]?.data.flatMap { try? Value(wireBytes: $0) })
        }
        if let image = d["image"]?.dictionary, let data = image["data"]?.data {
            func number(_ key: String) -> Int32 { image[key]?.int64.flatMap { Int32(exactly: $0) } ?? 0 }
            self.image = Image(
                width: number("width"), height: number("height"), rowstride: number("rowstride"), hasAlpha: image["alpha"]?.bool ?? false,
                bitsPerSample: number("bits"), channels: number("channels"), data: data)
        }
        imagePath = d["image-path"]?.string
        imageFile = d["image-file"]?.string
        value = d["value"]?.int64.flatMap { Int32(exactly: $0) }
        expires = date("expires")
        stackTag = d["stack-tag"]?.string
        appNotificationID = d["app-notification-id"]?.string ?? d["gtk-id"]?.string
        gtkDefaultAction = d["gtk-default-action"]?.string
        gtkDefaultTarget = d["gtk-default-target"]?.data.flatMap { try? Value(wireBytes: $0) }
        desktopEntry = d["desktop-entry"]?.string
        duplicates = d["duplicates"]?.uint64.flatMap(UInt32.init(exactly:)) ?? 0
    }
}
