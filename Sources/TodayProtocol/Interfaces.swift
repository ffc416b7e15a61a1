import DBus

/// The names and interfaces of SPEC section 1 and 2, declared once. The
/// documentation strings appear in the introspection XML, which is also
/// installed as data/dbus/io.github.todayd.Today1.xml.
public enum Today {
    public static let busName = BusName("io.github.todayd.Today1")
    public static let managerPath = ObjectPath("/io/github/todayd/Today1")
    public static let widgetsPath = ObjectPath("/io/github/todayd/Today1/widgets")
    public static let providerPath = ObjectPath("/io/github/todayd/Today1/Provider")
    public static let groupsPath = ObjectPath("/io/github/todayd/Today1/groups")
    public static let version = "0.2.0"

    public static func widgetPath(_ bundleID: BundleID) -> ObjectPath {
        widgetPath(bundleID.rawValue)
    }

    public static func widgetPath(_ bundleID: String) -> ObjectPath {
        widgetsPath.appending(escaped: bundleID)
    }

    public static func groupPath(_ groupID: GroupID) -> ObjectPath {
        groupPath(groupID.rawValue)
    }

    public static func groupPath(_ groupID: String) -> ObjectPath {
        groupsPath.appending(escaped: groupID)
    }

    /// The path at which an app with `id` exports org.freedesktop.Application
    /// (Desktop Entry spec: `.` → `/`, `-` → `_`, a leading `/`).
    public static func applicationPath(_ id: String) -> ObjectPath? {
        ObjectPath(rawValue: "/" + id.replacingScalars(".", with: "/").replacingScalars("-", with: "_"))
    }

    /// The interfaces todayd serves and the one providers serve, in the
    /// order of SPEC section 2.
    public static let interfaces = [center, widget, instance, group, provider, Notifications.today]

    public static let center = Interface(
        InterfaceName("io.github.todayd.Today1.Center"),
        methods: [
            Center.listWidgets, Center.setHasContent, Center.performUpdate, Center.updateAll, Center.openURL,
            Center.resolveURL, Center.containerPathForGroup, Center.groupObject, Center.registerApp, Center.reload,
            Center.reloadTimelines, Center.reloadAllTimelines, Center.addWidget, Center.removeWidget, Center.setLayout,
            Center.getCurrentConfigurations,
        ],
        properties: [Center.version, Center.bundleDirectories, Center.notificationServer, Center.layout],
        doc: "io.github.todayd.Today1.Center: the manager object's interface.")

    /// The members of `center`.
    public enum Center {
        public static let listWidgets = MethodDeclaration(
            MemberName("ListWidgets"), out: [Argument("widgets", "ao")],
            doc: "All widgets, sorted by DisplayName, then id.")
        public static let setHasContent = MethodDeclaration(
            MemberName("SetHasContent"), in: ("has_content", Bool.self), ("widget_id", BundleID.self),
            doc: """
                NCWidgetController.setHasContent. Caller: the widget or its container app.
                A widget without content is kept, but applets hide it and no scheduled update runs for it.
                """)
        public static let performUpdate = MethodDeclaration(
            MemberName("PerformUpdate"), in: ("widget_id", BundleID.self), out: [Argument("result", "s")],
            doc: "As Widget.PerformUpdate: new-data, no-data or failed.")
        public static let updateAll = MethodDeclaration(
            MemberName("UpdateAll"), out: [Argument("results", "a{ss}")],
            doc: "Updates every widget that has content, concurrently; the result of each by widget id.")
        public static let openURL = MethodDeclaration(
            MemberName("OpenURL"), in: ("url", String.self), ("options", VariantDictionary.self), out: [Argument("handler", "s")],
            doc: "Opens the URL in the app that handles its scheme; returns that app's id.")
        public static let resolveURL = MethodDeclaration(
            MemberName("ResolveURL"), in: ("url", String.self), out: [Argument("handler", "s")],
            doc: "Which app OpenURL would hand the URL to, launching nothing.")
        public static let containerPathForGroup = MethodDeclaration(
            MemberName("ContainerPathForGroup"), in: ("group_id", GroupID.self), out: [Argument("path", "s")],
            doc: "containerURLForSecurityApplicationGroupIdentifier: creates the folder. The caller must be entitled to the group.")
        public static let groupObject = MethodDeclaration(
            MemberName("GroupObject"), in: ("group_id", GroupID.self), out: [Argument("group", "o")],
            doc: "The group's object. The caller must be entitled to the group.")
        public static let registerApp = MethodDeclaration(
            MemberName("RegisterApp"), in: ("bundle_id", BundleID.self),
            doc: "An unsandboxed caller says which installed bundle it is, once per connection.")
        public static let reload = MethodDeclaration(MemberName("Reload"), doc: "Rescans the bundle folders now, and reads notifications.plist and layout.plist again.")
        public static let reloadTimelines = MethodDeclaration(
            MemberName("ReloadTimelines"), in: ("widget_id", BundleID.self),
            doc: "WidgetCenter.reloadTimelines(ofKind:): updates that widget now. Caller: the widget or its container app.")
        public static let reloadAllTimelines = MethodDeclaration(
            MemberName("ReloadAllTimelines"),
            doc: "WidgetCenter.reloadAllTimelines(): updates every widget of the caller's container app.")
        public static let addWidget = MethodDeclaration(
            MemberName("AddWidget"), in: ("kind", BundleID.self), ("configuration", VariantDictionary.self), ("family", String.self),
            ("position", Int32.self), out: [Argument("instance", "o")],
            doc: """
                Places a new instance of the widget kind at position in Layout (-1: at the end), with its configuration
                (checked against the kind's TodayParameters) and family ("": the kind's first).
                """)
        public static let removeWidget = MethodDeclaration(
            MemberName("RemoveWidget"), in: ("instance", ObjectPath.self),
            doc: "Takes an instance out of the layout: an added one is gone, a kind's own object stays but is not shown.")
        public static let setLayout = MethodDeclaration(
            MemberName("SetLayout"), in: ("layout", ObjectPathList.self),
            doc: "The user's order: a permutation of Layout, InvalidArgs otherwise. Stored in $XDG_CONFIG_HOME/todayd/layout.plist.")
        public static let getCurrentConfigurations = MethodDeclaration(
            MemberName("GetCurrentConfigurations"), in: ("kind", BundleID.self), out: [Argument("instances", "a(osa{sv})")],
            doc: "WidgetCenter.currentConfigurations: the placed instances of the kind. Caller: the widget or its container app.")

        public static let version = Property("Version", "s", changeSignal: .const, doc: "todayd's version.")
        public static let bundleDirectories = Property(
            "BundleDirectories", "as", doc: "The folders scanned for bundles, highest precedence first.")
        public static let notificationServer = Property(
            "NotificationServer", "s",
            doc: "serving, off, or 'queued OWNER (PROGRAM)' while another server has org.freedesktop.Notifications.")
        public static let layout = Property(
            "Layout", "ao",
            doc: """
                What the Today view shows, in order: instances with content. Every kind with content in ListWidgets order
                until the user changes it; then the user's order, a new kind at the end.
                """)
    }

    public static let instance = Interface(
        InterfaceName("io.github.todayd.Today1.Instance"),
        methods: [Instance.configure],
        properties: [Instance.kind, Instance.configuration, Instance.family],
        doc: "io.github.todayd.Today1.Instance: on each added widget instance, beside its Widget interface.")

    /// The members of `instance`.
    public enum Instance {
        public static let configure = MethodDeclaration(
            MemberName("Configure"), in: ("configuration", VariantDictionary.self), ("family", String.self),
            doc: "Checks every value against the kind's parameters (InvalidArgs names the one at fault) and updates the instance at once.")
        public static let kind = Property("Kind", "o", changeSignal: .const, doc: "The kind's own object.")
        public static let configuration = Property("Configuration", "a{sv}", doc: "The values the user chose; a parameter left out is at its default.")
        public static let family = Property("Family", "s", doc: "small, medium or large.")
    }

    public static let widget = Interface(
        InterfaceName("io.github.todayd.Today1.Widget"),
        methods: [Widget.performUpdate, Widget.activate, Widget.performAction, Widget.getTimeline, Widget.getPreview, Widget.getOptions],
        properties: Widget.properties,
        signals: [Widget.updated, Widget.actionPerformed],
        doc: "io.github.todayd.Today1.Widget: one object per widget extension.")

    /// The members of `widget`.
    public enum Widget {
        public static let performUpdate = MethodDeclaration(
            MemberName("PerformUpdate"), out: [Argument("result", "s")],
            doc: """
                widgetPerformUpdate: runs the provider and stores its snapshot; new-data, no-data or failed.
                Calls that arrive while an update of this widget runs share its result.
                """)
        public static let activate = MethodDeclaration(
            MemberName("Activate"), in: ("platform_data", VariantDictionary.self), out: [Argument("handler", "s")],
            doc: "The user tapped the widget: opens Snapshot[\"url\"] as OpenURL would, or starts the container app.")
        public static let performAction = MethodDeclaration(
            MemberName("PerformAction"), in: ("action_id", String.self), ("platform_data", VariantDictionary.self),
            out: [Argument("result", "s")],
            doc: """
                The user pressed a button or toggle of the current snapshot: runs the provider's action and stores what
                it returns; new-data, no-data or failed. Error.NoSuchAction when the snapshot offers no such action.
                """)
        public static let getTimeline = MethodDeclaration(
            MemberName("GetTimeline"), out: [Argument("entries", "a(ta{sv}d)")],
            doc: "The current entry and those after it: date (microseconds since the epoch), snapshot, relevance.")

        public static let bundleIdentifier = Property("BundleIdentifier", "s", changeSignal: .const)
        public static let containerBundleIdentifier = Property("ContainerBundleIdentifier", "s", changeSignal: .const)
        public static let displayName = Property(
            "DisplayName", "s", doc: "CFBundleDisplayName, else CFBundleName, else the id; localized for todayd's locale.")
        public static let localizedDisplayNames = Property(
            "LocalizedDisplayNames", "a{ss}",
            doc: "Every localization of DisplayName, by language tag, from the widget's <lang>.lproj/InfoPlist.strings.")
        public static let iconPath = Property("IconPath", "s", doc: "The container app's CFBundleIconFile, absolute; empty when none.")
        public static let hasContent = Property("HasContent", "b", doc: "The last SetHasContent; true for a widget never told otherwise.")
        public static let preferredHeight = Property("PreferredHeight", "d", doc: "preferredContentSize.height; 0: the applet decides.")
        public static let marginInsets = Property("MarginInsets", "(dddd)", doc: "Top, left, bottom, right.")
        public static let snapshot = Property(
            "Snapshot", "a{sv}",
            doc: "The current content: the timeline entry whose date has come, from the cache at once, before any provider runs.")
        public static let currentEntryDate = Property(
            "CurrentEntryDate", "t", doc: "Date of the entry Snapshot shows, microseconds since the epoch; 0: never updated.")
        public static let nextEntryDate = Property(
            "NextEntryDate", "t", doc: "When Snapshot changes to the next entry without a provider run; 0: none.")
        public static let relevance = Property("Relevance", "d", doc: "The current entry's relevance score; 0 when none.")
        public static let reloadPolicy = Property(
            "ReloadPolicy", "s", doc: "interval, at-end, after or never: what the last timeline asked for.")
        public static let sandboxed = Property("Sandboxed", "b", doc: "Whether the provider runs confined.")
        public static let lastResult = Property("LastResult", "s", doc: "Empty (never), new-data, no-data or failed.")
        public static let lastFailure = Property("LastFailure", "s", doc: "Why the last failed update failed; empty after a success.")
        public static let lastUpdated = Property("LastUpdated", "t", doc: "Microseconds since the epoch; 0: never.")
        public static let updateInterval = Property(
            "UpdateInterval", "u", doc: "Seconds between scheduled updates; 0: only on request.")
        public static let nextScheduledUpdate = Property("NextScheduledUpdate", "t", doc: "Microseconds since the epoch; 0: none.")
        public static let scheduledUpdatesLeftToday = Property(
            "ScheduledUpdatesLeftToday", "u", doc: "What is left of today's budget of scheduled updates.")
        public static let groups = Property("Groups", "as", doc: "The app groups the widget is entitled to.")
        public static let parameters = Property(
            "Parameters", "aa{sv}",
            doc: """
                The kind's TodayParameters, for a form: key, title (localized), type (string, integer, boolean, choice),
                default where it has one, choices (aa{sv} of value and title), dynamic.
                """)
        public static let supportedFamilies = Property("SupportedFamilies", "as", doc: "TodaySupportedFamilies; the first is the default.")
        public static let getPreview = MethodDeclaration(
            MemberName("GetPreview"), in: ("configuration", VariantDictionary.self), ("family", String.self), out: [Argument("snapshot", "a{sv}")],
            doc: """
                What the kind looks like, for the gallery: its TodayPlaceholder, else a provider run with TODAY_PREVIEW=1
                (context preview true) under a 2 s limit, kept for the next call with the same settings.
                """)
        public static let getOptions = MethodDeclaration(
            MemberName("GetOptions"), in: ("key", String.self), out: [Argument("choices", "aa{sv}")],
            doc: "A dynamic choice's values (value, title), from the provider's perform-options KEY, for a form.")

        /// In the order of SPEC section 4, which is the order GetAll answers in.
        public static let properties = [
            bundleIdentifier, containerBundleIdentifier, displayName, localizedDisplayNames, iconPath, hasContent, preferredHeight,
            marginInsets, snapshot, currentEntryDate, nextEntryDate, relevance, reloadPolicy, sandboxed, lastResult, lastFailure,
            lastUpdated, updateInterval, nextScheduledUpdate, scheduledUpdatesLeftToday, groups, parameters, supportedFamilies,
        ]

        public static let updated = Signal(
            MemberName("Updated"), [Argument("result", "s")], doc: "After every update and every action, whoever asked for it.")
        public static let actionPerformed = Signal(
            MemberName("ActionPerformed"), [Argument("action_id", "s"), Argument("result", "s")], doc: "After every action.")
    }

    public static let group = Interface(
        InterfaceName("io.github.todayd.Today1.Group"),
        methods: [Group.get, Group.getAll, Group.set, Group.remove, Group.update],
        properties: [Group.identifier, Group.containerPath],
        signals: [Group.changed],
        doc: """
            io.github.todayd.Today1.Group: UserDefaults(suiteName:) of one app group. Every method checks that the
            caller is entitled to the group; a write is atomic and durable before the reply.
            """)

    /// The members of `group`.
    public enum Group {
        public static let get = MethodDeclaration(
            MemberName("Get"), in: ("key", String.self), out: [Argument("value", "v")], doc: "Error.NoSuchKey where absent.")
        public static let getAll = MethodDeclaration(MemberName("GetAll"), out: [Argument("values", "a{sv}")])
        public static let set = MethodDeclaration(MemberName("Set"), in: ("key", String.self), ("value", Variant.self))
        public static let remove = MethodDeclaration(MemberName("Remove"), in: ("key", String.self), doc: "No error where absent.")
        public static let update = MethodDeclaration(
            MemberName("Update"), in: ("set", VariantDictionary.self), ("remove", [String].self), doc: "Several changes in one write.")

        public static let identifier = Property("Identifier", "s", changeSignal: .const)
        public static let containerPath = Property(
            "ContainerPath", "s", changeSignal: .const, doc: "Readable by entitled callers only.")

        public static let changed = Signal(
            MemberName("Changed"), [Argument("keys", "as")], doc: "Sent to each entitled connection that registered, never broadcast.")
    }

    public static let provider = Interface(
        InterfaceName("io.github.todayd.Today1.Provider"),
        methods: [
            Provider.performUpdate, Provider.getTimeline, Provider.performAction, Provider.performUpdateIn, Provider.getTimelineIn,
            Provider.performActionIn,
        ],
        doc: "io.github.todayd.Today1.Provider: served by D-Bus widget providers at /io/github/todayd/Today1/Provider.")

    /// The members of `provider`, which todayd calls.
    public enum Provider {
        public static let performUpdate = MethodDeclaration(
            MemberName("PerformUpdate"), in: ("previous_snapshot", VariantDictionary.self),
            out: [Argument("result", "s"), Argument("snapshot", "a{sv}")])
        public static let getTimeline = MethodDeclaration(
            MemberName("GetTimeline"), in: ("previous_snapshot", VariantDictionary.self),
            out: [Argument("result", "s"), Argument("entries", "aa{sv}"), Argument("policy", "a{sv}")],
            doc: "Called instead of PerformUpdate when the widget sets TodayTimeline.")
        public static let performAction = MethodDeclaration(
            MemberName("PerformAction"),
            in: ("action_id", String.self), ("arguments", VariantDictionary.self), ("previous_snapshot", VariantDictionary.self),
            out: [Argument("result", "s"), Argument("snapshot", "a{sv}")],
            doc: "An action of the snapshot; arguments has state (b) for a toggle: the state asked for.")
        public static let performUpdateIn = MethodDeclaration(
            MemberName("PerformUpdateIn"), in: ("context", VariantDictionary.self), ("previous_snapshot", VariantDictionary.self),
            out: [Argument("result", "s"), Argument("snapshot", "a{sv}")],
            doc: """
                PerformUpdate for one instance, called instead where the widget sets TodayParameters or TodaySupportedFamilies:
                context has instance (s, empty for the kind's own), configuration (a{sv}), family (s) and preview (b).
                """)
        public static let getTimelineIn = MethodDeclaration(
            MemberName("GetTimelineIn"), in: ("context", VariantDictionary.self), ("previous_snapshot", VariantDictionary.self),
            out: [Argument("result", "s"), Argument("entries", "aa{sv}"), Argument("policy", "a{sv}")],
            doc: "GetTimeline for one instance, as PerformUpdateIn.")
        public static let performActionIn = MethodDeclaration(
            MemberName("PerformActionIn"),
            in: ("context", VariantDictionary.self), ("action_id", String.self), ("arguments", VariantDictionary.self),
            ("previous_snapshot", VariantDictionary.self), out: [Argument("result", "s"), Argument("snapshot", "a{sv}")],
            doc: "PerformAction for one instance, as PerformUpdateIn.")
    }

    /// org.freedesktop.Application, of the Desktop Entry specification's
    /// D-Bus activation: what a TodayKit app exports at its
    /// `applicationPath`, and what todayd calls to hand it a URL (SPEC
    /// section 6).
    public static let application = Interface(
        InterfaceName("org.freedesktop.Application"), methods: [Application.activate, Application.open, Application.activateAction])

    /// The members of `application`.
    public enum Application {
        public static let activate = MethodDeclaration(MemberName("Activate"), in: ("platform_data", VariantDictionary.self))
        public static let open = MethodDeclaration(
            MemberName("Open"), in: ("uris", [String].self), ("platform_data", VariantDictionary.self))
        public static let activateAction = MethodDeclaration(
            MemberName("ActivateAction"),
            in: ("action_name", String.self), ("parameter", VariantArray.self), ("platform_data", VariantDictionary.self))
    }

    /// The installed interface file: every interface of SPEC section 2.
    public static var interfaceXML: String {
        Interface.introspectionDocType + "<node>\n" + interfaces.map { $0.introspectionXML() }.joined() + "</node>\n"
    }
}
