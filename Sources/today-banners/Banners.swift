import CGtk
import CDisplay
import CSystem
import DBus
import FoundationEssentials
import Glibc
import Posix
import TodayGtk
import TodayProtocol

/// `today-banners`: the banners (SPEC section 15). todayd hands each
/// notification that passes Do Not Disturb, the inhibitions and its app's
/// policy to `Banners.Show`; the bus starts this program at the first. At
/// most three show at once (fewer where BannerLimit says), newest on top, in one surface at the screen's
/// top-right corner (or where BannerPosition and BannerOutput say) that
/// never takes the keyboard by itself; the rest wait their turn. While the
/// pointer is on them, or the user is away (IdleThreshold), nothing
/// expires. A banner goes when its notification closes or leaves the
/// list, or when the user acts on it. With nothing shown for a minute the
/// program ends (the next banner starts it again); on Wayland not while
/// the user is away.
@MainActor
final class Banners {
    /// SPEC's most at once.
    static let mostAtOnce = 3
    static let width: Int32 = 380
    static let idleSeconds: Double = 60
    /// How long after a banner shows the next spare card is made.
    static let spareDelay: UInt32 = 250

    let connection: Connection
    let describe: Bool
    let screenshot: String?
    /// Action keys to press, each once, on the first banner offering it.
    let presses: [String]
    /// Replies to type, each once, into the first banner that takes one.
    let replies: [String]
    let stay: Bool
    var finished = false
    var status: Int32 = 0

    /// At most this many at once (todayd's BannerLimit), 1 to 3.
    private var most = Banners.mostAtOnce
    private var showing: [NotificationEntry] = []
    /// Each shown banner's card, by its notification's id: one whose
    /// notification did not change is kept as it is when another comes or
    /// goes, and one whose notification changed is filled again.
    private var cards: [UInt32: NotificationCard] = [:]
    /// A card made ahead, filtered out of the list, that the next banner
    /// fills: the widgets made and styled while nothing waits on them. A
    /// banner that goes leaves its card here, where there is none.
    private var spare: NotificationCard?
    private var queued: [NotificationEntry] = []
    private var window: Widget?
    private var list: Widget?
    private var onLayerShell = false
    /// The user's style.css, followed.
    private var userStyle: UserStyle?
    /// Whether the banners are on the overlay layer, over a fullscreen
    /// window, rather than the top layer, under it.
    private var overFullscreen = false
    /// todayd holds expiry for the banners (HoldExpiry): while the
    /// pointer is on them, a banner being read does not go from under it,
    /// and while the user is away (IdleThreshold), what shows waits for
    /// their return.
    private var holdingExpiry = false
    /// The pointer moves on the banners.
    private var pointerOn = false
    /// No input for IdleThreshold seconds, as the display server says.
    private var away = false
    /// Seconds without input after which the user is away (todayd's
    /// IdleThreshold); 0: never. Nil until todayd has said.
    private var idleThreshold: UInt32?
    /// The display server's watch for `idleThreshold`; nil where there is
    /// none, or it cannot say.
    private var idleWatch: OpaquePointer?
    /// Where the banners show (todayd's BannerPosition), followed live.
    private var position = BannerPosition.topRight
    /// The output they show on, by its name (todayd's BannerOutput);
    /// empty: the compositor's choice.
    private var output = ""
    /// The compositor closed the banners' surface (its output was switched
    /// off, or went): until the outputs or the setting change, they show
    /// where the compositor puts them, and not again at once where it
    /// closes them again within a couple of seconds.
    private var closedOn: (output: String, at: Date)?
    /// Under X11, the primary monitor's work area, which the banners keep
    /// 12 pixels in from. GDK asks the X server for the work area at each
    /// look (three round trips), so it is looked up at start and whenever
    /// the last banner has gone, not while a banner waits to be shown.
    private var workArea: GdkRectangle?
    private var idleSince = Date()
    private var announced: String?
    private var pressed: Set<String> = []
    private var repliesSent = 0

    init(connection: Connection, describe: Bool, screenshot: String?, presses: [String], replies: [String] = [], stay: Bool) {
        self.replies = replies
        self.connection = connection
        self.describe = describe
        self.screenshot = screenshot
        self.presses = presses
        self.stay = stay
    }

    static let css = """
        window.banners { background: transparent; }
        .banner-list { background: transparent; }
        .banner-list row { padding: 0; margin-bottom: 8px; background: transparent; }
        .banner-list .notification { background: @theme_bg_color; border: 1px solid alpha(currentColor, 0.15); }
        """

    func start() {
        loadCSS(notificationCSS + Self.css)
        userStyle = UserStyle.follow()
        // Light or dark, as the desktop prefers, followed live.
        Style.follow(on: connection, { dark in onMainLoop { preferDarkStyle(dark) } }, known: {})
        let window = gtk_window_new(GTK_WINDOW_TOPLEVEL)!
        self.window = window
        gtk_window_set_title(cast(window), "Notifications")
        addClass(window, "banners")
        gtk_widget_set_size_request(window, Self.width, -1)
        gtk_window_set_resizable(cast(window), 0)
        if gtk_layer_is_supported() != 0 {
            // sway, Plasma: a layer surface over other windows.
            onLayerShell = true
            gtk_layer_init_for_window(cast(window))
            gtk_layer_set_namespace(cast(window), "todayd-banners")
            gtk_layer_set_layer(cast(window), GTK_LAYER_SHELL_LAYER_TOP)
            anchor(window)
            gtk_layer_set_keyboard_mode(cast(window), GTK_LAYER_SHELL_KEYBOARD_MODE_NONE)
        } else {
            // X11: an undecorated window of the notification type, at the
            // work area's corner (or edge), that the window manager never focuses.
            gtk_window_set_type_hint(cast(window), GDK_WINDOW_TYPE_HINT_NOTIFICATION)
            gtk_window_set_decorated(cast(window), 0)
            gtk_window_set_accept_focus(cast(window), 0)
            gtk_window_set_focus_on_map(cast(window), 0)
            gtk_window_set_keep_above(cast(window), 1)
            gtk_window_set_skip_taskbar_hint(cast(window), 1)
            gtk_window_set_skip_pager_hint(cast(window), 1)
            workArea = lookUpWorkArea()
        }
        let list = shown(gtk_list_box_new()!)
        self.list = list
        addClass(list, "banner-list")
        gtk_list_box_set_selection_mode(cast(list), GTK_SELECTION_NONE)
        connect(list, "row-activated", withArgument: { [self] row in
            guard let row else { return }
            let id = notificationID(of: row.assumingMemoryBound(to: GtkWidget.self))
            if id != 0 { invoke(id, "default") }
        })
        // Cards keep their place in the list; the order is their banner's,
        // and a card with no banner is filtered out: it takes no room, and
        // GTK keeps its style worked out, where a hidden widget's would be
        // worked out again when it is shown.
        gtk_list_box_set_sort_func(
            cast(list),
            { a, b, _ in
                guard let a, let b else { return 0 }
                return Int32(clamping: bannerPlace(of: a) - bannerPlace(of: b))
            }, nil, nil)
        gtk_list_box_set_filter_func(cast(list), { row, _ in row.map { bannerPlace(of: $0) > 0 ? 1 : 0 } ?? 0 }, nil, nil)
        setMargins(list, top: 0, left: 0, bottom: 0, right: 0)
        append(window, list)
        makeSpare()
        followPointer(window)
        followOutputs(window)
        connect(window, "destroy") { [self] in finished = true }
        serve()
        every(seconds: 5) { [self] in
            // On Wayland it stays while the user is away: started again, its
            // watch would count their absence from then, and the banners
            // that come meanwhile would not wait.
            let watching = away && idleWatch.map { today_idle_knows_the_past($0) == 0 } == true
            if !stay, !watching, showing.isEmpty, queued.isEmpty, Date().timeIntervalSince(idleSince) >= Self.idleSeconds { finished = true }
            return !finished
        }
    }

    private func lookUpWorkArea() -> GdkRectangle? {
        guard let display = gdk_display_get_default(),
            let monitor = outputsMonitor() ?? gdk_display_get_primary_monitor(display) ?? gdk_display_get_monitor(display, 0)
        else { return nil }
        var area = GdkRectangle()
        gdk_monitor_get_workarea(monitor, &area)
        return area
    }

    /// On layer-shell: anchored to `position`'s edges, 12 pixels in from
    /// each (along the top or bottom edge alone, the compositor centres it).
    private func anchor(_ window: Widget) {
        let edges = [
            (GTK_LAYER_SHELL_EDGE_TOP, position.atTop), (GTK_LAYER_SHELL_EDGE_BOTTOM, !position.atTop),
            (GTK_LAYER_SHELL_EDGE_LEFT, position.atLeft), (GTK_LAYER_SHELL_EDGE_RIGHT, position.atRight),
        ]
        for (edge, anchored) in edges {
            gtk_layer_set_anchor(cast(window), edge, anchored ? 1 : 0)
            gtk_layer_set_margin(cast(window), edge, anchored ? 12 : 0)
        }
    }

    /// Under X11: the top-left corner for a window of `width` and `height`
    /// at `position` in `area`, 12 pixels in.
    static func place(width: Int32, height: Int32, at position: BannerPosition, in area: GdkRectangle) -> (x: Int32, y: Int32) {
        let x = position.atLeft ? area.x + 12 : position.atRight ? area.x + area.width - 12 - width : area.x + (area.width - width) / 2
        let y = position.atTop ? area.y + 12 : area.y + area.height - 12 - height
        return (x, y)
    }

    /// The monitor of the output named `output`; nil where that is empty
    /// or no such output is connected.
    private func outputsMonitor() -> OpaquePointer? {
        guard !output.isEmpty, closedOn?.output != output, let display = gdk_display_get_default() else { return nil }
        for index in 0..<gdk_display_get_n_monitors(display) {
            guard let monitor = gdk_display_get_monitor(display, index), let name = today_monitor_name(monitor) else { continue }
            defer { g_free(name) }
            if String(cString: name) == output { return monitor }
        }
        return nil
    }

    /// Shows the banners on the output named `output`, or where the
    /// compositor puts them where it is empty or not connected; at once
    /// where they show.
    private func placeOnOutput() {
        guard let window else { return }
        let monitor = outputsMonitor()
        if describe, !output.isEmpty {
            let state = monitor != nil ? "" : closedOn?.output == output ? " (closed by the compositor)" : " (not connected)"
            FileDescriptor.standardOutput.writeAll("output: \(output)\(state)\n")
        }
        if onLayerShell {
            // Unmapped first: a layer surface's output is the one it was
            // made on, and the surface is made again when it maps.
            gtk_widget_hide(window)
            gtk_layer_set_monitor(cast(window), monitor)
        } else {
            workArea = lookUpWorkArea()
        }
        if !showing.isEmpty { redraw() }
    }

    /// Follows the outputs as they come and go: the banners' output may
    /// have been connected, or gone (with the banners on it). On
    /// layer-shell the compositor closes the surface of an output that
    /// goes, which GTK takes for a request to close the window: the window
    /// stays, and shows again where the compositor puts it.
    private func followOutputs(_ window: Widget) {
        guard let display = gdk_display_get_default() else { return }
        typealias Handler = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void
        let changed: Handler = { _, _, data in
            guard let data else { return }
            let banners = Unmanaged<Banners>.fromOpaque(data).takeUnretainedValue()
            MainActor.assumeIsolated {
                banners.closedOn = nil
                banners.placeOnOutput()
            }
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        for signal in ["monitor-added", "monitor-removed"] {
            g_signal_connect_data(UnsafeMutableRawPointer(display), signal, unsafeBitCast(changed, to: GCallback.self), me, nil, GConnectFlags(rawValue: 0))
        }
        typealias Closing = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean
        let closing: Closing = { _, _, data in
            guard let data else { return 1 }
            let banners = Unmanaged<Banners>.fromOpaque(data).takeUnretainedValue()
            MainActor.assumeIsolated { banners.closedByTheCompositor() }
            return 1
        }
        if onLayerShell {
            g_signal_connect_data(raw(window), "delete-event", unsafeBitCast(closing, to: GCallback.self), me, nil, GConnectFlags(rawValue: 0))
        }
    }

    /// The compositor closed the banners' surface: hidden, and shown again
    /// on the next turn where the compositor puts them, unless it closed
    /// them there too a moment ago (no output to show on: the next banner
    /// or a change of the outputs tries again).
    private func closedByTheCompositor() {
        guard let window else { return }
        gtk_widget_hide(window)
        let now = Date()
        let again = closedOn.map { now.timeIntervalSince($0.at) < 2 } ?? false
        closedOn = (output, now)
        if describe { FileDescriptor.standardOutput.writeAll("closed by the compositor\n") }
        guard !again else { return }
        onMainLoop { [self] in MainActor.assumeIsolated { placeOnOutput() } }
    }

    /// Does what a setting todayd says (at start, and at each change) asks.
    private func follow(setting name: String, _ value: Value) {
        typealias C = Notifications.Center
        switch name {
        case C.bannerPosition.name:
            if let position = value.string.flatMap(BannerPosition.init(rawValue:)) { move(to: position) }
        case C.bannerOutput.name:
            if let name = value.string, name != output {
                output = name
                closedOn = nil
                placeOnOutput()
            }
        case C.bannerLimit.name:
            if let limit = value.int64.flatMap({ Int(exactly: $0) }), (1...Self.mostAtOnce).contains(limit) { show(atMost: limit) }
        case C.idleThreshold.name:
            if let seconds = value.int64.flatMap({ UInt32(exactly: $0) }) { watchIdle(seconds) }
        default:
            break
        }
    }

    /// At most `limit` banners at once (BannerLimit changed): the oldest
    /// shown past it wait their turn again, first in line; under it, those
    /// waiting show.
    private func show(atMost limit: Int) {
        guard limit != most else { return }
        most = limit
        if describe { FileDescriptor.standardOutput.writeAll("at once: \(limit)\n") }
        if showing.count > most {
            queued.insert(contentsOf: showing[most...].reversed(), at: 0)
            showing.removeSubrange(most...)
        }
        while showing.count < most, !queued.isEmpty { showing.insert(queued.removeFirst(), at: 0) }
        if !showing.isEmpty { redraw() }
    }

    /// Moves the banners to `position` (BannerPosition changed).
    private func move(to position: BannerPosition) {
        guard position != self.position, let window else { return }
        self.position = position
        if describe { FileDescriptor.standardOutput.writeAll("position: \(position.rawValue)\n") }
        if onLayerShell { anchor(window) }
        if !showing.isEmpty { redraw() }
    }

    /// Follows IdleThreshold: watches the display server for that long
    /// without input (none for 0), from now.
    private func watchIdle(_ seconds: UInt32) {
        guard seconds != idleThreshold else { return }
        idleThreshold = seconds
        if let idleWatch { today_idle_stop(idleWatch) }
        away = false
        let changed: today_idle_changed = { idle, data in
            guard let data else { return }
            let banners = Unmanaged<Banners>.fromOpaque(data).takeUnretainedValue()
            MainActor.assumeIsolated {
                banners.away = idle != 0
                if banners.describe { FileDescriptor.standardOutput.writeAll("user: \(idle != 0 ? "away" : "back")\n") }
                banners.holdOrLetGo()
            }
        }
        idleWatch = today_idle_watch(seconds, changed, Unmanaged.passUnretained(self).toOpaque())
        if describe {
            let source = idleWatch.map { String(cString: today_idle_source($0)) } ?? "none"
            FileDescriptor.standardOutput.writeAll("idle: \(seconds) s, from \(source)\n")
        }
        holdOrLetGo()
    }

    /// Reads the settings the banners follow (BannerPosition,
    /// BannerOutput, BannerLimit, IdleThreshold), handing each to `apply` by its name,
    /// and follows them whenever todayd says they changed. Awaited before
    /// the banners' name is taken, so that the first banner (whose Show the
    /// bus holds until then) shows in place.
    private nonisolated static func followSettings(on connection: Connection, _ apply: @escaping @Sendable (String, Value) -> Void) async {
        typealias C = Notifications.Center
        let names = [C.bannerPosition.name, C.bannerOutput.name, C.bannerLimit.name, C.idleThreshold.name]
        // The bus is asked for todayd's signals; they are matched here
        // without the sender, which they carry as a unique name.
        let rule = MatchRule(interface: .properties, member: .propertiesChanged, arg0: Notifications.today.name.rawValue)
        var bus = rule
        bus.sender = Today.busName.rawValue
        _ = try? await connection.subscribe(bus) { _ in }
        _ = try? await connection.subscribe(rule, addToBus: false) { message in
            guard let changed = message.body.count > 1 ? message.body[1].stringDictionary : nil else { return }
            for name in names { if let value = changed[name] { apply(name, value.unwrapped) } }
        }
        for name in names {
            let reply = try? await connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: .get,
                [.string(Notifications.today.name.rawValue), .string(name)])
            if let value = reply?.body.first { apply(name, value.unwrapped) }
        }
    }

    /// Holds expiry while the pointer moves on the banners, as GNOME Shell
    /// keeps a banner under the pointer; lets it go when the pointer
    /// leaves them (not for one of their own widgets) or they all go. A
    /// move, not an enter: a banner that shows up under a pointer at rest
    /// in the corner is not being read, and goes in its time.
    private func followPointer(_ window: Widget) {
        gtk_widget_add_events(window, Int32(GDK_POINTER_MOTION_MASK.rawValue | GDK_LEAVE_NOTIFY_MASK.rawValue))
        typealias Moved = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean
        let moved: Moved = { _, _, data in
            guard let data else { return 0 }
            let banners = Unmanaged<Banners>.fromOpaque(data).takeUnretainedValue()
            MainActor.assumeIsolated {
                banners.pointerOn = true
                banners.holdOrLetGo()
            }
            return 0
        }
        typealias Handler = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GdkEventCrossing>?, UnsafeMutableRawPointer?) -> gboolean
        let left: Handler = { _, event, data in
            guard let data, let event, event.pointee.detail != GDK_NOTIFY_INFERIOR else { return 0 }
            let banners = Unmanaged<Banners>.fromOpaque(data).takeUnretainedValue()
            MainActor.assumeIsolated {
                banners.pointerOn = false
                banners.holdOrLetGo()
            }
            return 0
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        g_signal_connect_data(raw(window), "motion-notify-event", unsafeBitCast(moved, to: GCallback.self), me, nil, GConnectFlags(rawValue: 0))
        g_signal_connect_data(raw(window), "leave-notify-event", unsafeBitCast(left, to: GCallback.self), me, nil, GConnectFlags(rawValue: 0))
    }

    /// Holds expiry while the pointer is on the banners or the user is
    /// away with banners showing; lets it go otherwise.
    private func holdOrLetGo() {
        let hold = !showing.isEmpty && (pointerOn || away)
        guard hold != holdingExpiry else { return }
        holdingExpiry = hold
        if describe { FileDescriptor.standardOutput.writeAll("expiry: \(hold ? "held" : "let go")\n") }
        call(Notifications.Center.holdExpiry, hold)
    }

    // MARK: The bus

    /// Serves Banners.Show, then takes the name (a call the bus queued
    /// while starting this program is answered once the name is ours), and
    /// follows what todayd says of the notifications showing.
    private func serve() {
        let connection = connection
        connection.objects.export(
            Notifications.bannersPath,
            [
                ExportedInterface(
                    Notifications.banners,
                    bindings: [
                        Notifications.Banners.show.immediate { [self] _, notification in
                            guard let entry = NotificationEntry(notification.dictionary) else {
                                throw DBusError(.invalidArgs, "the notification has no id")
                            }
                            onMainLoop { [self] in MainActor.assumeIsolated { show(entry) } }
                            return []
                        }
                    ])
            ])
        Task.detached { [self] in
            let heard: @Sendable (Message) -> Void = { [self] message in
                let ids: (changed: [UInt32], removed: [UInt32], closed: UInt32?)
                switch message.member {
                case Notifications.Center.notificationsChanged.name.rawValue:
                    func list(_ index: Int) -> [UInt32] {
                        index < message.body.count ? (message.body[index].elements ?? []).compactMap { $0.int64.flatMap(UInt32.init(exactly:)) } : []
                    }
                    ids = (list(0), list(1), nil)
                case Notifications.Freedesktop.notificationClosed.name.rawValue:
                    ids = ([], [], try? message.values(UInt32.self, UInt32.self).0)
                default:
                    // todayd's name changed hands: what is shown can no longer be acted on.
                    let owner = (try? message.values(String.self, String.self, String.self))?.2 ?? ""
                    if owner.isEmpty { onMainLoop { [self] in MainActor.assumeIsolated { clear() } } }
                    return
                }
                onMainLoop { [self] in MainActor.assumeIsolated { follow(changed: ids.changed, removed: ids.removed + (ids.closed.map { [$0] } ?? [])) } }
            }
            for rule in [
                MatchRule(interface: Notifications.today.name, member: Notifications.Center.notificationsChanged.name),
                MatchRule(interface: Notifications.freedesktop.name, member: Notifications.Freedesktop.notificationClosed.name),
            ] {
                var bus = rule
                bus.sender = Today.busName.rawValue
                _ = try? await connection.subscribe(bus) { _ in }
                _ = try? await connection.subscribe(rule, addToBus: false, handler: heard)
            }
            _ = try? await connection.subscribe(
                MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged, arg0: Today.busName.rawValue), handler: heard)
            await Self.followSettings(on: connection) { [self] name, value in
                onMainLoop { [self] in MainActor.assumeIsolated { follow(setting: name, value) } }
            }
            let reply = try? await connection.requestName(Notifications.bannersName, flags: [.doNotQueue])
            onMainLoop { [self] in
                MainActor.assumeIsolated {
                    guard reply == .primaryOwner || reply == .alreadyOwner else {
                        FileDescriptor.standardError.writeAll("\(programName): another program shows the banners (\(Notifications.bannersName.rawValue) has an owner)\n")
                        status = 1
                        finished = true
                        return
                    }
                    if describe { FileDescriptor.standardOutput.writeAll("banners: serving\n") }
                }
            }
        }
    }

    /// A call to todayd's Notifications interface; the signals that follow
    /// say what it did.
    private func call<each Input: DBusArgument>(_ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input) {
        connection.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, member: method.method.name,
            method.values(repeat each inputs)
        ) { result in
            if case .failure(let error) = result { FileDescriptor.standardError.writeAll("\(programName): \(method.method.name.rawValue): \(error)\n") }
        }
    }

    private func invoke(_ id: UInt32, _ key: String) {
        var platform: [(String, Value)] = []
        if let token = activationToken() { platform.append(("activation-token", .string(token))) }
        call(Notifications.Center.invokeAction, id, key, VariantDictionary(platform))
        drop([id])
    }

    private var controls: NotificationControls {
        NotificationControls(
            invoke: { [self] id, key in invoke(id, key) },
            reply: { [self] id, text in
                call(Notifications.Center.reply, id, text)
                drop([id])
            },
            dismiss: { [self] id in
                call(Notifications.Center.dismiss, id)
                drop([id])
            },
            openLink: { [self] uri in
                connection.call(
                    Today.busName, path: Today.managerPath, interface: Today.center.name, member: Today.Center.openURL.method.name,
                    Today.Center.openURL.values(uri, VariantDictionary([]))
                ) { _ in }
            })
    }

    // MARK: What is shown

    func show(_ entry: NotificationEntry) {
        if let at = showing.firstIndex(where: { $0.id == entry.id }) {
            // Replaced: the new content, on top.
            showing.remove(at: at)
            showing.insert(entry, at: 0)
        } else if let at = queued.firstIndex(where: { $0.id == entry.id }) {
            queued[at] = entry
        } else if showing.count < most {
            showing.insert(entry, at: 0)
        } else {
            queued.append(entry)
        }
        redraw()
    }

    /// Follows NotificationsChanged and NotificationClosed: a banner whose
    /// notification left, or closed, goes; one that changed is redrawn.
    private func follow(changed: [UInt32], removed: [UInt32]) {
        drop(removed)
        let watched = Set((showing + queued).map(\.id))
        let refresh = changed.filter { watched.contains($0) }
        guard !refresh.isEmpty else { return }
        let connection = connection
        Task.detached { [self] in
            for id in refresh {
                let reply = try? await connection.call(
                    Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.getNotification, id)
                let entry = reply?.body.first?.stringDictionary.flatMap(NotificationEntry.init)
                onMainLoop { [self] in
                    MainActor.assumeIsolated {
                        guard let entry, entry.isOpen else { return drop([id]) }
                        if let at = showing.firstIndex(where: { $0.id == id }) { showing[at] = entry }
                        if let at = queued.firstIndex(where: { $0.id == id }) { queued[at] = entry }
                        redraw()
                    }
                }
            }
        }
    }

    private func drop(_ ids: [UInt32]) {
        let gone = Set(ids)
        let before = showing.count + queued.count
        showing.removeAll { gone.contains($0.id) }
        queued.removeAll { gone.contains($0.id) }
        guard showing.count + queued.count != before else { return }
        while showing.count < most, !queued.isEmpty { showing.insert(queued.removeFirst(), at: 0) }
        redraw()
    }

    private func clear() {
        showing = []
        queued = []
        redraw()
    }

    private func redraw() {
        guard let window, let list else { return }
        let now = Date()
        var next: [UInt32: NotificationCard] = [:]
        var gone = cards.filter { id, _ in !showing.contains { $0.id == id } }.map(\.value)
        var (made, filled) = (0, 0)
        for (place, entry) in showing.enumerated() {
            let card: NotificationCard
            if let kept = cards[entry.id] {
                card = kept
            } else if let free = gone.popLast() ?? spare {
                if free === spare { spare = nil }
                card = free
            } else {
                card = newCard()
                made += 1
            }
            if card.entry != entry {
                card.fill(entry, now: now)
                filled += 1
            }
            g_object_set_data(object(card.row), bannerPlaceKey, UnsafeMutableRawPointer(bitPattern: place + 1))
            next[entry.id] = card
        }
        for card in gone {
            // A card that has been shown is readier than one made ahead
            // (its icons loaded, its text's layouts made): it stays.
            if let made = spare { gtk_widget_destroy(made.row) }
            card.clear()
            g_object_set_data(object(card.row), bannerPlaceKey, nil)
            spare = card
        }
        cards = next
        gtk_list_box_invalidate_filter(cast(list))
        gtk_list_box_invalidate_sort(cast(list))
        if describe, !showing.isEmpty { FileDescriptor.standardOutput.writeAll("rows: \(made) made, \(filled) filled, \(showing.count - filled) kept\n") }
        if showing.isEmpty {
            gtk_widget_hide(window)
            pointerOn = false
            holdOrLetGo()
            idleSince = now
            // For the next first banner, while nothing waits on it.
            if !onLayerShell { workArea = lookUpWorkArea() }
            // Idle until the next banner: the heap the banners took goes
            // back to the system (glibc keeps freed memory otherwise).
            today_malloc_give_back()
        } else {
            // Shown while the user is away: held until they are back.
            holdOrLetGo()
            if onLayerShell {
                // The keyboard only for a reply, and only when clicked into.
                let typing = showing.contains { $0.replyLabel != nil }
                gtk_layer_set_keyboard_mode(cast(window), typing ? GTK_LAYER_SHELL_KEYBOARD_MODE_ON_DEMAND : GTK_LAYER_SHELL_KEYBOARD_MODE_NONE)
                // Over other windows, and under a fullscreen one (a film, a
                // game, a presentation) unless a critical one shows, as
                // GNOME Shell does: the top layer, which the compositor
                // keeps below a fullscreen window, or the overlay layer.
                let critical = showing.contains { $0.urgency == .critical }
                if critical != overFullscreen {
                    overFullscreen = critical
                    // Unmapped first: sway 1.7 takes a surface's layer
                    // when it is mapped, not when it changes after.
                    gtk_widget_hide(window)
                    gtk_layer_set_layer(cast(window), critical ? GTK_LAYER_SHELL_LAYER_OVERLAY : GTK_LAYER_SHELL_LAYER_TOP)
                    if describe { FileDescriptor.standardOutput.writeAll("layer: \(critical ? "overlay" : "top")\n") }
                }
            } else if let area = workArea ?? lookUpWorkArea() {
                // Placed by its top-left corner, from the size it takes:
                // a window manager may not honour a gravity (and on a bare
                // X server none does), which would leave it off the screen.
                var natural = GtkRequisition()
                gtk_widget_get_preferred_size(window, nil, &natural)
                let width = max(natural.width, Self.width)
                let (x, y) = Self.place(width: width, height: natural.height, at: position, in: area)
                gtk_window_move(cast(window), x, y)
                if describe { FileDescriptor.standardOutput.writeAll("placed: \(x) \(y) \(width)\n") }
            }
            // As small as what it shows.
            gtk_window_resize(cast(window), Self.width, 1)
            gtk_widget_show(window)
            // To the display server now, not after the work the main loop
            // finds next (the spare card made ahead).
            if let display = gdk_display_get_default() { gdk_display_flush(display) }
        }
        if spare == nil {
            // For a banner that comes while this one shows; a moment
            // later, not while this one's window goes up.
            every(milliseconds: Self.spareDelay) { [self] in
                makeSpare()
                return false
            }
        }
        announce()
        pressAsked()
        if screenshot != nil, !showing.isEmpty {
            every(milliseconds: 700) { [self] in
                takeScreenshot()
                return false
            }
        }
    }

    /// A card for a banner, in the list and filtered out until it is filled.
    private func newCard() -> NotificationCard {
        let card = NotificationCard(controls: controls, showApp: true)
        // Long lines wrap within the banner's width instead of widening it.
        limitNaturalWidth(of: card.row, characters: 36)
        if let list { gtk_list_box_insert(cast(list), card.row, -1) }
        return card
    }

    /// Makes a spare card, if there is none, and works out its style now
    /// (measuring it does) rather than when a banner waits on it.
    private func makeSpare() {
        guard spare == nil, list != nil else { return }
        let card = newCard()
        var natural = GtkRequisition()
        gtk_widget_get_preferred_size(card.row, nil, &natural)
        spare = card
    }

    /// With --describe, `banners: ID… queued: ID…` (newest first) each time
    /// that changes.
    private func announce() {
        guard describe else { return }
        let state = "banners: \(showing.map { "\($0.id)" }.joined(separator: " ")) queued: \(queued.map { "\($0.id)" }.joined(separator: " "))"
        guard state != announced else { return }
        announced = state
        FileDescriptor.standardOutput.writeAll(state + "\n")
    }

    /// Presses each action asked for (--press KEY) on the first banner that
    /// offers it, as a click on its button does; types each reply asked for
    /// (--reply TEXT) into the first reply field and presses Enter there.
    private func pressAsked() {
        guard let list else { return }
        if repliesSent < replies.count,
            let row = children(list).first(where: { row in showing.first { $0.id == notificationID(of: row) }?.replyLabel != nil }),
            let field = findWidget(in: row, type: "GtkEntry")
        {
            let text = replies[repliesSent]
            repliesSent += 1
            if describe { FileDescriptor.standardOutput.writeAll("replied on \(notificationID(of: row))\n") }
            gtk_entry_set_text(cast(field), text)
            gtk_widget_activate(field)
            return
        }
        for key in presses where !pressed.contains(key) {
            for row in children(list) {
                guard let entry = showing.first(where: { $0.id == notificationID(of: row) }),
                    let label = entry.buttons.first(where: { $0.key == key })?.label,
                    let control = findButton(in: row, labelled: label)
                else { continue }
                pressed.insert(key)
                if describe { FileDescriptor.standardOutput.writeAll("pressed \(key) on \(entry.id)\n") }
                gtk_button_clicked(cast(control))
                return
            }
        }
    }

    private func takeScreenshot() {
        guard let screenshot, let window, !showing.isEmpty else { return }
        if savePNG(of: window, to: screenshot) {
            if describe { FileDescriptor.standardOutput.writeAll("picture: \(showing.count) banners\n") }
        } else {
            FileDescriptor.standardError.writeAll("\(programName): cannot render the banners to \(screenshot)\n")
        }
    }
}

/// The key under which a banner's row keeps its place, 1 for the top.
private let bannerPlaceKey = "today-banner-place"

/// A banner row's place (1 for the top); a hidden spare's is 0.
private func bannerPlace(of row: UnsafeMutablePointer<GtkListBoxRow>) -> Int {
    Int(bitPattern: g_object_get_data(UnsafeMutableRawPointer(row).assumingMemoryBound(to: GObject.self), bannerPlaceKey))
}

/// Caps the natural width of the wrapping labels under `widget` at about
/// `characters`: GTK asks a wrapping label for the width of its whole
/// text on one line, and a window sized to what it shows grows with it.
func limitNaturalWidth(of widget: Widget, characters: Int32) {
    if typeName(widget) == "GtkLabel", gtk_label_get_line_wrap(cast(widget)) != 0 {
        gtk_label_set_max_width_chars(cast(widget), characters)
    }
    for child in children(widget) { limitNaturalWidth(of: child, characters: characters) }
}

/// The first widget of GTK type `type` under `widget`.
func findWidget(in widget: Widget, type: String) -> Widget? {
    if typeName(widget) == type { return widget }
    for child in children(widget) {
        if let found = findWidget(in: child, type: type) { return found }
    }
    return nil
}

/// The first button under `widget` whose text is `text`.
func findButton(in widget: Widget, labelled text: String) -> Widget? {
    if typeName(widget) == "GtkButton", visibleTexts(widget).first == text { return widget }
    for child in children(widget) {
        if let found = findButton(in: child, labelled: text) { return found }
    }
    return nil
}

