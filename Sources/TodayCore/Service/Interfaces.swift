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

    public static func widgetPath(_ bundleID: String) -> ObjectPath {
        widgetsPath.appending(escaped: bundleID)
    }

    public static func groupPath(_ groupID: String) -> ObjectPath {
        groupsPath.appending(escaped: groupID)
    }

    /// The interfaces todayd serves and the one providers serve, in the
    /// order of SPEC section 2.
    public static let interfaces = [center, widget, group, provider]

    public static let center = Interface(
        InterfaceName("io.github.todayd.Today1.Center"),
        methods: [
            Method(
                MemberName("ListWidgets"), out: [Argument("widgets", "ao")],
                doc: "All widgets, sorted by DisplayName, then id."),
            Method(
                MemberName("SetHasContent"), in: [Argument("has_content", "b"), Argument("widget_id", "s")],
                doc: """
                    NCWidgetController.setHasContent. Caller: the widget or its container app.
                    A widget without content is kept, but applets hide it and no scheduled update runs for it.
                    """),
            Method(
                MemberName("PerformUpdate"), in: [Argument("widget_id", "s")], out: [Argument("result", "s")],
                doc: "As Widget.PerformUpdate: new-data, no-data or failed."),
            Method(
                MemberName("UpdateAll"), out: [Argument("results", "a{ss}")],
                doc: "Updates every widget that has content, concurrently; the result of each by widget id."),
            Method(
                MemberName("OpenURL"), in: [Argument("url", "s"), Argument("options", "a{sv}")], out: [Argument("handler", "s")],
                doc: "Opens the URL in the app that handles its scheme; returns that app's id."),
            Method(
                MemberName("ResolveURL"), in: [Argument("url", "s")], out: [Argument("handler", "s")],
                doc: "Which app OpenURL would hand the URL to, launching nothing."),
            Method(
                MemberName("ContainerPathForGroup"), in: [Argument("group_id", "s")], out: [Argument("path", "s")],
                doc: "containerURLForSecurityApplicationGroupIdentifier: creates the folder. The caller must be entitled to the group."),
            Method(
                MemberName("GroupObject"), in: [Argument("group_id", "s")], out: [Argument("group", "o")],
                doc: "The group's object. The caller must be entitled to the group."),
            Method(
                MemberName("RegisterApp"), in: [Argument("bundle_id", "s")],
                doc: "An unsandboxed caller says which installed bundle it is, once per connection."),
            Method(MemberName("Reload"), doc: "Rescans the bundle folders now."),
            Method(
                MemberName("ReloadTimelines"), in: [Argument("widget_id", "s")],
                doc: "WidgetCenter.reloadTimelines(ofKind:): updates that widget now. Caller: the widget or its container app."),
            Method(
                MemberName("ReloadAllTimelines"),
                doc: "WidgetCenter.reloadAllTimelines(): updates every widget of the caller's container app."),
        ],
        properties: [
            Property("Version", "s", changeSignal: .const, doc: "todayd's version."),
            Property("BundleDirectories", "as", doc: "The folders scanned for bundles, highest precedence first."),
        ],
        doc: "io.github.todayd.Today1.Center: the manager object's interface.")

    public static let widget = Interface(
        InterfaceName("io.github.todayd.Today1.Widget"),
        methods: [
            Method(
                MemberName("PerformUpdate"), out: [Argument("result", "s")],
                doc: """
                    widgetPerformUpdate: runs the provider and stores its snapshot; new-data, no-data or failed.
                    Calls that arrive while an update of this widget runs share its result.
                    """),
            Method(
                MemberName("Activate"), in: [Argument("platform_data", "a{sv}")], out: [Argument("handler", "s")],
                doc: "The user tapped the widget: opens Snapshot[\"url\"] as OpenURL would, or starts the container app."),
            Method(
                MemberName("PerformAction"), in: [Argument("action_id", "s"), Argument("platform_data", "a{sv}")],
                out: [Argument("result", "s")],
                doc: """
                    The user pressed a button or toggle of the current snapshot: runs the provider's action and stores what
                    it returns; new-data, no-data or failed. Error.NoSuchAction when the snapshot offers no such action.
                    """),
            Method(
                MemberName("GetTimeline"), out: [Argument("entries", "a(ta{sv}d)")],
                doc: "The current entry and those after it: date (microseconds since the epoch), snapshot, relevance."),
        ],
        properties: [
            Property("BundleIdentifier", "s", changeSignal: .const),
            Property("ContainerBundleIdentifier", "s", changeSignal: .const),
            Property("DisplayName", "s", doc: "CFBundleDisplayName, else CFBundleName, else the id; localized for todayd's locale."),
            Property(
                "LocalizedDisplayNames", "a{ss}",
                doc: "Every localization of DisplayName, by language tag, from the widget's <lang>.lproj/InfoPlist.strings."),
            Property("IconPath", "s", doc: "The container app's CFBundleIconFile, absolute; empty when none."),
            Property("HasContent", "b", doc: "The last SetHasContent; true for a widget never told otherwise."),
            Property("PreferredHeight", "d", doc: "preferredContentSize.height; 0: the applet decides."),
            Property("MarginInsets", "(dddd)", doc: "Top, left, bottom, right."),
            Property(
                "Snapshot", "a{sv}",
                doc: "The current content: the timeline entry whose date has come, from the cache at once, before any provider runs."),
            Property("CurrentEntryDate", "t", doc: "Date of the entry Snapshot shows, microseconds since the epoch; 0: never updated."),
            Property("NextEntryDate", "t", doc: "When Snapshot changes to the next entry without a provider run; 0: none."),
            Property("Relevance", "d", doc: "The current entry's relevance score; 0 when none."),
            Property("ReloadPolicy", "s", doc: "interval, at-end, after or never: what the last timeline asked for."),
            Property("Sandboxed", "b", doc: "Whether the provider runs confined."),
            Property("LastResult", "s", doc: "Empty (never), new-data, no-data or failed."),
            Property("LastFailure", "s", doc: "Why the last failed update failed; empty after a success."),
            Property("LastUpdated", "t", doc: "Microseconds since the epoch; 0: never."),
            Property("UpdateInterval", "u", doc: "Seconds between scheduled updates; 0: only on request."),
            Property("NextScheduledUpdate", "t", doc: "Microseconds since the epoch; 0: none."),
            Property("ScheduledUpdatesLeftToday", "u", doc: "What is left of today's budget of scheduled updates."),
            Property("Groups", "as", doc: "The app groups the widget is entitled to."),
        ],
        signals: [
            Signal(MemberName("Updated"), [Argument("result", "s")], doc: "After every update and every action, whoever asked for it."),
            Signal(MemberName("ActionPerformed"), [Argument("action_id", "s"), Argument("result", "s")], doc: "After every action."),
        ],
        doc: "io.github.todayd.Today1.Widget: one object per widget extension.")

    public static let group = Interface(
        InterfaceName("io.github.todayd.Today1.Group"),
        methods: [
            Method(
                MemberName("Get"), in: [Argument("key", "s")], out: [Argument("value", "v")],
                doc: "Error.NoSuchKey where absent."),
            Method(MemberName("GetAll"), out: [Argument("values", "a{sv}")]),
            Method(MemberName("Set"), in: [Argument("key", "s"), Argument("value", "v")]),
            Method(MemberName("Remove"), in: [Argument("key", "s")], doc: "No error where absent."),
            Method(
                MemberName("Update"), in: [Argument("set", "a{sv}"), Argument("remove", "as")],
                doc: "Several changes in one write."),
        ],
        properties: [
            Property("Identifier", "s", changeSignal: .const),
            Property("ContainerPath", "s", changeSignal: .const, doc: "Readable by entitled callers only."),
        ],
        signals: [
            Signal(
                MemberName("Changed"), [Argument("keys", "as")],
                doc: "Sent to each entitled connection that registered, never broadcast.")
        ],
        doc: """
            io.github.todayd.Today1.Group: UserDefaults(suiteName:) of one app group. Every method checks that the
            caller is entitled to the group; a write is atomic and durable before the reply.
            """)

    public static let provider = Interface(
        InterfaceName("io.github.todayd.Today1.Provider"),
        methods: [
            Method(
                MemberName("PerformUpdate"), in: [Argument("previous_snapshot", "a{sv}")],
                out: [Argument("result", "s"), Argument("snapshot", "a{sv}")]),
            Method(
                MemberName("GetTimeline"), in: [Argument("previous_snapshot", "a{sv}")],
                out: [Argument("result", "s"), Argument("entries", "aa{sv}"), Argument("policy", "a{sv}")],
                doc: "Called instead of PerformUpdate when the widget sets TodayTimeline."),
            Method(
                MemberName("PerformAction"),
                in: [Argument("action_id", "s"), Argument("arguments", "a{sv}"), Argument("previous_snapshot", "a{sv}")],
                out: [Argument("result", "s"), Argument("snapshot", "a{sv}")],
                doc: "An action of the snapshot; arguments has state (b) for a toggle: the state asked for."),
        ],
        doc: "io.github.todayd.Today1.Provider: served by D-Bus widget providers at /io/github/todayd/Today1/Provider.")

    /// The installed interface file: every interface of SPEC section 2.
    public static var interfaceXML: String {
        Interface.introspectionDocType + "<node>\n" + interfaces.map { $0.introspectionXML() }.joined() + "</node>\n"
    }
}
