import DBus

/// The notification interfaces of SPEC section 14, declared once: the
/// Desktop Notifications Specification's, GLib's GNotification server's,
/// and todayd's own for the view, banners, bars and todayctl.
public enum Notifications {
    public static let freedesktopName = BusName("org.freedesktop.Notifications")
    public static let freedesktopPath = ObjectPath("/org/freedesktop/Notifications")
    public static let gtkName = BusName("org.gtk.Notifications")
    public static let gtkPath = ObjectPath("/org/gtk/Notifications")

    public static let interfaces = [freedesktop, gtk, today]

    /// Where todayd hands the notifications that pass Do Not Disturb, the
    /// inhibitions and their app's policy to be shown as banners (SPEC
    /// section 15): served by `today-banners`, which the bus starts
    /// at the first banner.
    public static let bannersName = BusName("io.github.todayd.Today1.Banners")
    public static let bannersPath = ObjectPath("/io/github/todayd/Today1/Banners")

    public static let banners = Interface(
        InterfaceName("io.github.todayd.Today1.Banners"),
        methods: [Banners.show],
        doc: "io.github.todayd.Today1.Banners: the banners, shown for todayd.")

    /// The members of `banners`.
    public enum Banners {
        public static let show = MethodDeclaration(
            MemberName("Show"), in: ("notification", VariantDictionary.self),
            doc: "Shows the notification (as ListNotifications gives it) as a banner, or updates its banner; it goes when the notification closes.")
    }

    public static let freedesktop = Interface(
        InterfaceName("org.freedesktop.Notifications"),
        methods: [
            Freedesktop.notify, Freedesktop.closeNotification, Freedesktop.getCapabilities, Freedesktop.getServerInformation,
            Freedesktop.inhibit, Freedesktop.unInhibit,
        ],
        properties: [Freedesktop.inhibited],
        signals: [Freedesktop.notificationClosed, Freedesktop.actionInvoked, Freedesktop.activationToken, Freedesktop.notificationReplied],
        doc: "org.freedesktop.Notifications: the Desktop Notifications Specification 1.2, with Plasma's inhibitions and inline replies.")

    /// The members of `freedesktop`.
    public enum Freedesktop {
        public static let notify = MethodDeclaration(
            MemberName("Notify"),
            in: ("app_name", String.self), ("replaces_id", UInt32.self), ("app_icon", String.self), ("summary", String.self),
            ("body", String.self), ("actions", [String].self), ("hints", VariantDictionary.self), ("expire_timeout", Int32.self),
            out: [Argument("id", "u")],
            doc: "A new notification, or one replacing replaces_id in place; its id, never 0 and never given twice.")
        public static let closeNotification = MethodDeclaration(
            MemberName("CloseNotification"), in: ("id", UInt32.self), doc: "The sender recalls it: closed (reason 3) and removed from the list.")
        public static let getCapabilities = MethodDeclaration(MemberName("GetCapabilities"), out: [Argument("capabilities", "as")])
        public static let getServerInformation = MethodDeclaration(
            MemberName("GetServerInformation"),
            out: [Argument("name", "s"), Argument("vendor", "s"), Argument("version", "s"), Argument("spec_version", "s")])
        public static let inhibit = MethodDeclaration(
            MemberName("Inhibit"), in: ("desktop_entry", String.self), ("reason", String.self), ("hints", VariantDictionary.self),
            out: [Argument("cookie", "u")],
            doc: "Banners stay hidden (critical ones still show) until UnInhibit or until the caller's connection closes.")
        public static let unInhibit = MethodDeclaration(MemberName("UnInhibit"), in: ("cookie", UInt32.self))
        public static let inhibited = Property("Inhibited", "b")

        public static let notificationClosed = Signal(
            MemberName("NotificationClosed"), [Argument("id", "u"), Argument("reason", "u")],
            doc: "1 expired, 2 dismissed by the user, 3 CloseNotification, 4 other; exactly once per notification.")
        public static let actionInvoked = Signal(MemberName("ActionInvoked"), [Argument("id", "u"), Argument("action_key", "s")])
        public static let activationToken = Signal(MemberName("ActivationToken"), [Argument("id", "u"), Argument("activation_token", "s")])
        public static let notificationReplied = Signal(MemberName("NotificationReplied"), [Argument("id", "u"), Argument("text", "s")])

        public static let capabilities = [
            "actions", "action-icons", "body", "body-hyperlinks", "body-markup", "icon-static", "persistence", "inline-reply", "inhibitions",
            "x-canonical-private-synchronous", "x-dunst-stack-tag", "private-synchronous", "synchronous",
        ]
    }

    public static let gtk = Interface(
        InterfaceName("org.gtk.Notifications"),
        methods: [Gtk.addNotification, Gtk.removeNotification],
        doc: "org.gtk.Notifications: what GLib's GNotification uses when this name has an owner.")

    /// The members of `gtk`.
    public enum Gtk {
        public static let addNotification = MethodDeclaration(
            MemberName("AddNotification"), in: ("app_id", String.self), ("id", String.self), ("notification", VariantDictionary.self))
        public static let removeNotification = MethodDeclaration(
            MemberName("RemoveNotification"), in: ("app_id", String.self), ("id", String.self))
    }

    public static let today = Interface(
        InterfaceName("io.github.todayd.Today1.Notifications"),
        methods: [
            Center.listNotifications, Center.getNotification, Center.dismiss, Center.dismissAll, Center.invokeAction, Center.reply, Center.markSeen,
            Center.holdExpiry,
            Center.setAppPolicy, Center.schedule, Center.pendingRequests, Center.removePending, Center.removeDelivered, Center.setCategories,
        ],
        properties: [
            Center.count, Center.unseen, Center.doNotDisturb, Center.doNotDisturbUntil, Center.doNotDisturbSchedule, Center.appPolicies,
            Center.bannerPosition, Center.bannerOutput, Center.bannerLimit, Center.idleThreshold, Center.listLimit,
        ],
        signals: [Center.notificationsChanged],
        doc: "io.github.todayd.Today1.Notifications: the notification center, for the view, banners, bars and todayctl.")

    /// The members of `today`.
    public enum Center {
        public static let listNotifications = MethodDeclaration(
            MemberName("ListNotifications"), out: [Argument("notifications", "aa{sv}")], doc: "The list, newest first.")
        public static let getNotification = MethodDeclaration(
            MemberName("GetNotification"), in: ("id", UInt32.self), out: [Argument("notification", "a{sv}")],
            doc: "Error.NoSuchNotification where not in the list.")
        public static let dismiss = MethodDeclaration(MemberName("Dismiss"), in: ("id", UInt32.self), doc: "As the user's dismissal (reason 2).")
        public static let dismissAll = MethodDeclaration(
            MemberName("DismissAll"), in: ("app_id", String.self), doc: "Every notification of that app; \"\": all.")
        public static let invokeAction = MethodDeclaration(
            MemberName("InvokeAction"), in: ("id", UInt32.self), ("action_key", String.self), ("platform_data", VariantDictionary.self),
            doc: "As a click on that action; activation-token in platform_data is passed on.")
        public static let reply = MethodDeclaration(MemberName("Reply"), in: ("id", UInt32.self), ("text", String.self), doc: "An inline reply.")
        public static let markSeen = MethodDeclaration(MemberName("MarkSeen"), doc: "The user has seen the list: Unseen becomes 0.")
        public static let holdExpiry = MethodDeclaration(
            MemberName("HoldExpiry"), in: ("hold", Bool.self),
            doc: "While held (the pointer is on the banners), no notification expires; let go (or the caller gone), those whose time came meanwhile close 3 s later.")
        public static let setAppPolicy = MethodDeclaration(
            MemberName("SetAppPolicy"), in: ("app_id", String.self), ("policy", VariantDictionary.self),
            doc: "banners b, list b (kept in the list), sounds b, urgency y (overrides), timeout i (milliseconds open, 0: until dismissed; overrides); app \"\": the default; an empty dict removes the policy.")

        // Apps notify the iOS way (SPEC section 18): for a caller with a
        // bundle identity, each app its own requests.
        public static let schedule = MethodDeclaration(
            MemberName("Schedule"), in: ("request_id", String.self), ("content", VariantDictionary.self), ("trigger", VariantDictionary.self),
            doc: "Delivers the content when the trigger says ({}: now; after, date, repeats); replaces the app's pending or delivered request of that id.")
        public static let pendingRequests = MethodDeclaration(
            MemberName("PendingRequests"), out: [Argument("requests", "aa{sv}")],
            doc: "The caller's requests not yet delivered: id, content, trigger, next (µs since the epoch).")
        public static let removePending = MethodDeclaration(
            MemberName("RemovePending"), in: ("request_ids", [String].self), doc: "Forgets the caller's pending requests of these ids.")
        public static let removeDelivered = MethodDeclaration(
            MemberName("RemoveDelivered"), in: ("request_ids", [String].self),
            doc: "Takes the caller's delivered notifications of these request ids out of the list.")
        public static let setCategories = MethodDeclaration(
            MemberName("SetCategories"), in: ("categories", VariantDictionaries.self),
            doc: "The caller's categories: id, actions (id, title, foreground, destructive, text-input, placeholder); replaces those set before.")

        public static let count = Property("Count", "u", doc: "Notifications in the list.")
        public static let unseen = Property("Unseen", "u", doc: "Added since the last MarkSeen.")
        public static let doNotDisturb = Property(
            "DoNotDisturb", "b", access: .readwrite, doc: "Banners hidden (critical ones still show); the list fills as usual.")
        public static let doNotDisturbUntil = Property(
            "DoNotDisturbUntil", "t", access: .readwrite,
            doc: "When Do Not Disturb goes off by itself, µs since the epoch (whole seconds); 0: when turned off. Setting a later time turns it on; setting DoNotDisturb clears it.")
        public static let doNotDisturbSchedule = Property(
            "DoNotDisturbSchedule", "(ss)", access: .readwrite, doc: "Daily from, to, HH:MM local time; (\"\", \"\"): none.")
        public static let appPolicies = Property("AppPolicies", "a{sa{sv}}")
        public static let bannerPosition = Property(
            "BannerPosition", "s", access: .readwrite,
            doc: "Where the banners show: top-right (the default), top-left, top, bottom-right, bottom-left or bottom.")
        public static let bannerOutput = Property(
            "BannerOutput", "s", access: .readwrite,
            doc: "The output the banners show on, by its name (DP-1, HDMI-A-1); \"\" (the default): the compositor's choice, the focused output on sway, the primary monitor under X11. One not connected is the default.")
        public static let bannerLimit = Property(
            "BannerLimit", "u", access: .readwrite, doc: "At most this many banners at once, 1 to 3 (3 unless set); the rest wait their turn.")
        public static let listLimit = Property(
            "ListLimit", "u", access: .readwrite,
            doc: "At most this many notifications in the list, 1 to 10000 (1000 unless set); lowered, the oldest leave (NotificationClosed 4 where open).")
        public static let idleThreshold = Property(
            "IdleThreshold", "u", access: .readwrite,
            doc: "Seconds without the user's input after which the banners hold expiry (HoldExpiry) until the user is back; 0: never. 120 unless set.")

        public static let notificationsChanged = Signal(
            MemberName("NotificationsChanged"), [Argument("changed", "au"), Argument("removed", "au")], doc: "After every change.")
    }
}

/// Where the banners show (BannerPosition): a corner of the screen, or the
/// middle of its top or bottom edge, as mako's `anchor`, dunst's `origin`
/// and SwayNotificationCenter's `positionX` and `positionY` give it.
public enum BannerPosition: String, CaseIterable, Sendable {
    case topRight = "top-right", topLeft = "top-left", top
    case bottomRight = "bottom-right", bottomLeft = "bottom-left", bottom

    /// Along the top edge, else the bottom.
    public var atTop: Bool { self == .topRight || self == .topLeft || self == .top }
    /// At the left edge, the right, or neither (the middle).
    public var atLeft: Bool { self == .topLeft || self == .bottomLeft }
    public var atRight: Bool { self == .topRight || self == .bottomRight }

    /// The positions as a sentence names them: "top-right, top-left, … or bottom".
    public static var choices: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
    }
}
