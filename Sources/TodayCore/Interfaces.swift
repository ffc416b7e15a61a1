import DBus

/// The names and interfaces of SPEC section 1 and 2, declared once.
public enum Today {
    public static let busName = BusName("io.github.todayd.Today1")
    public static let managerPath = ObjectPath("/io/github/todayd/Today1")
    public static let widgetsPath = ObjectPath("/io/github/todayd/Today1/widgets")
    public static let version = "0.1.0"

    public static func widgetPath(_ bundleID: String) -> ObjectPath {
        widgetsPath.appending(escaped: bundleID)
    }

    /// The part of `io.github.todayd.Today1.Center` this version serves.
    public static let center = Interface(
        InterfaceName("io.github.todayd.Today1.Center"),
        methods: [
            Method(MemberName("ListWidgets"), out: [Argument("widgets", "ao")]),
            Method(MemberName("Reload")),
        ],
        properties: [
            Property("Version", "s", changeSignal: .const),
            Property("BundleDirectories", "as"),
        ])

    /// The part of `io.github.todayd.Today1.Widget` this version serves:
    /// what the manifests say.
    public static let widget = Interface(
        InterfaceName("io.github.todayd.Today1.Widget"),
        properties: [
            Property("BundleIdentifier", "s", changeSignal: .const),
            Property("ContainerBundleIdentifier", "s", changeSignal: .const),
            Property("DisplayName", "s"),
            Property("IconPath", "s"),
            Property("PreferredHeight", "d"),
            Property("MarginInsets", "(dddd)"),
            Property("UpdateInterval", "u"),
            Property("Groups", "as"),
        ])
}
