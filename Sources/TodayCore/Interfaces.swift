import DBus

/// The names and interfaces of SPEC section 1 and 2, declared once.
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

    /// `io.github.todayd.Today1.Center`, as far as this version serves it.
    public static let center = Interface(
        InterfaceName("io.github.todayd.Today1.Center"),
        methods: [
            Method(MemberName("ListWidgets"), out: [Argument("widgets", "ao")]),
            Method(MemberName("SetHasContent"), in: [Argument("has_content", "b"), Argument("widget_id", "s")]),
            Method(MemberName("PerformUpdate"), in: [Argument("widget_id", "s")], out: [Argument("result", "s")]),
            Method(MemberName("UpdateAll"), out: [Argument("results", "a{ss}")]),
            Method(MemberName("OpenURL"), in: [Argument("url", "s"), Argument("options", "a{sv}")], out: [Argument("handler", "s")]),
            Method(MemberName("ResolveURL"), in: [Argument("url", "s")], out: [Argument("handler", "s")]),
            Method(MemberName("ContainerPathForGroup"), in: [Argument("group_id", "s")], out: [Argument("path", "s")]),
            Method(MemberName("GroupObject"), in: [Argument("group_id", "s")], out: [Argument("group", "o")]),
            Method(MemberName("RegisterApp"), in: [Argument("bundle_id", "s")]),
            Method(MemberName("Reload")),
        ],
        properties: [
            Property("Version", "s", changeSignal: .const),
            Property("BundleDirectories", "as"),
        ])

    /// `io.github.todayd.Today1.Widget`, as far as this version serves it.
    public static let widget = Interface(
        InterfaceName("io.github.todayd.Today1.Widget"),
        methods: [
            Method(MemberName("PerformUpdate"), out: [Argument("result", "s")]),
            Method(MemberName("Activate"), in: [Argument("platform_data", "a{sv}")], out: [Argument("handler", "s")]),
        ],
        properties: [
            Property("BundleIdentifier", "s", changeSignal: .const),
            Property("ContainerBundleIdentifier", "s", changeSignal: .const),
            Property("DisplayName", "s"),
            Property("IconPath", "s"),
            Property("HasContent", "b"),
            Property("PreferredHeight", "d"),
            Property("MarginInsets", "(dddd)"),
            Property("Snapshot", "a{sv}"),
            Property("LastResult", "s"),
            Property("LastFailure", "s"),
            Property("LastUpdated", "t"),
            Property("UpdateInterval", "u"),
            Property("NextScheduledUpdate", "t"),
            Property("ScheduledUpdatesLeftToday", "u"),
            Property("Groups", "as"),
        ],
        signals: [
            Signal(MemberName("Updated"), [Argument("result", "s")])
        ])

    /// `io.github.todayd.Today1.Group`: the defaults of one app group.
    public static let group = Interface(
        InterfaceName("io.github.todayd.Today1.Group"),
        methods: [
            Method(MemberName("Get"), in: [Argument("key", "s")], out: [Argument("value", "v")]),
            Method(MemberName("GetAll"), out: [Argument("values", "a{sv}")]),
            Method(MemberName("Set"), in: [Argument("key", "s"), Argument("value", "v")]),
            Method(MemberName("Remove"), in: [Argument("key", "s")]),
            Method(MemberName("Update"), in: [Argument("set", "a{sv}"), Argument("remove", "as")]),
        ],
        properties: [
            Property("Identifier", "s", changeSignal: .const),
            Property("ContainerPath", "s", changeSignal: .const),
        ],
        signals: [
            Signal(MemberName("Changed"), [Argument("keys", "as")])
        ])

    /// `io.github.todayd.Today1.Provider`, which D-Bus widget providers serve.
    public static let provider = Interface(
        InterfaceName("io.github.todayd.Today1.Provider"),
        methods: [
            Method(
                MemberName("PerformUpdate"), in: [Argument("previous_snapshot", "a{sv}")],
                out: [Argument("result", "s"), Argument("snapshot", "a{sv}")])
        ])
}
