import CGtk
import DBus
import FoundationEssentials
import Glibc
import TodayCore
import TodayGtk
import TodayProtocol

/// The window: a banner while todayd is away, then one card per widget
/// with content, in ListWidgets order. Lives on GTK's main thread; D-Bus
/// answers come back to it through `onMainLoop`.
@MainActor
final class TodayView {
    let connection: Connection
    let pane: Bool
    let screenshot: String?
    /// With a screenshot, print what the window shows, a line per text.
    let describe: Bool
    /// With a screenshot: seconds to wait before taking it, following
    /// changes meanwhile (0: as soon as the first cards are shown).
    let delay: UInt32
    let style: Style
    /// Actions to press, by id, as a click would, once a card offers them
    /// (for scripts and tests).
    let presses: [String]
    /// A window even where the compositor could show a panel.
    let windowed: Bool
    /// Exit once the first frame showing what todayd answered is on
    /// screen (for benchmarks: the moment a user sees the view).
    let firstFrame: Bool
    /// Edit: the gallery, and controls on each card to move, resize,
    /// configure and remove it (SPEC section 16).
    var editing: Bool
    var editButton: Widget?
    var gallery: Widget?
    /// The card whose settings form opens once it is shown (--settings);
    /// a picture is then of the form.
    var settingsFor: String?
    var settingsDialog: Widget?
    private var firstFrameAwaited = false
    var finished = false
    var status: Int32 = 0

    var window: Widget?
    var list: Widget?
    /// What the scroller holds: the notifications, then the cards.
    private var content: Widget?
    private var scroller: Widget?
    private var notifications: NotificationList?
    /// Whether the list was seen since it last changed.
    private var markedSeen = false
    /// Whether the first list shown was marked seen: opening the view does that.
    private var markedSeenOnce = false
    /// Whether the view is a panel along the screen's edge (layer-shell).
    private var isPanel = false
    /// The user's style.css, followed.
    private var userStyle: UserStyle?
    /// Whether the next list shown follows a `present`.
    private var presenting = false
    private var banner: Widget?
    var cards: [TodayCard] = []
    /// The "updated … ago" label of each card, kept current.
    private var updatedLabels: [(Widget, TodayCard)] = []
    /// The card ids of each row of the list, in order.
    var cardLines: [[String]] = []
    /// Each shown card's row, by card id: a redraw keeps the rows of cards
    /// that did not change (a reorder moves them) and makes the rest.
    var rows: [String: CardRow] = [:]

    /// A card's row and what the view keeps of it.
    struct CardRow {
        var card: TodayCard
        var row: Widget
        var updated: Widget
        var controls: [String: (widget: Widget, isToggle: Bool)]
    }
    /// Rows made while the notifications are still being read (`prepare`),
    /// each with whether it was made half of a line; the next `redraw`
    /// takes those of unchanged cards and drops the rest.
    private var prepared: [String: (row: CardRow, paired: Bool)] = [:]
    private var shotTaken = false
    /// Whether the picture is already waiting for the window to be laid out.
    private var shotScheduled = false
    /// Whether the window was sized to show every card for the picture.
    private var shotFitted = false
    /// Whether every subscription is confirmed: changes from then on show.
    private var subscribed = false
    /// The last state `announce` printed.
    private var announced: String?
    /// Whether the light or dark style is settled: a picture waits for the
    /// desktop's preference, asked at start.
    private var styleKnown = true
    private var shotWanted = false
    /// The shown cards' buttons and toggles, by action id.
    private var controls: [String: (widget: Widget, isToggle: Bool)] = [:]
    private var pressed: Set<String> = []

    init(
        connection: Connection, pane: Bool, screenshot: String?, describe: Bool, delay: UInt32 = 0, style: Style = .system,
        presses: [String] = [], windowed: Bool = false, firstFrame: Bool = false, editing: Bool = false
    ) {
        self.editing = editing
        self.windowed = windowed
        self.firstFrame = firstFrame
        self.presses = presses
        self.delay = delay
        self.style = style
        self.connection = connection
        self.pane = pane
        self.screenshot = screenshot
        self.describe = describe
    }

    static let css = """
        .card { padding: 12px; border-radius: 12px; background: alpha(currentColor, 0.06); }
        .card-name { font-weight: bold; }
        .card-title { font-size: 1.2em; font-weight: bold; }
        .dim { opacity: 0.7; }
        .failure { color: #c01c28; }
        .banner { padding: 8px; background: #e5a50a; color: black; }
        list { background: transparent; }
        row { padding: 6px 12px; }
        """

    func start() {
        // todayd is asked first: its answers (fifty cards' round trips, a
        // long list read on the connection's thread) come while GTK reads
        // its theme and the window is made, and are put in once the main
        // loop runs, after this.
        subscribe()
        refresh()
        loadCSS(Self.css + notificationCSS + NotificationList.css)
        userStyle = UserStyle.follow()
        switch style {
        case .light: preferDarkStyle(false)
        case .dark: preferDarkStyle(true)
        case .system:
            styleKnown = false
            Style.follow(on: connection, { dark in onMainLoop { preferDarkStyle(dark) } }) { [self] in
                onMainLoop { [self] in
                    MainActor.assumeIsolated {
                        let settled = { [self] in
                            styleKnown = true
                            // A moment for the new style to be drawn, then the picture.
                            if shotWanted {
                                every(seconds: 1) { [self] in
                                    takeScreenshot()
                                    return false
                                }
                            }
                        }
                        // GTK works the new style out in the window's next
                        // frame: a picture drawn before it would show the old.
                        if let window = self.window, gtk_widget_get_mapped(window) != 0 {
                            afterNextFrame(of: window, settled)
                        } else {
                            settled()
                        }
                    }
                }
            }
        }
        let window = gtk_window_new(GTK_WINDOW_TOPLEVEL)!
        self.window = window
        gtk_window_set_title(cast(window), "Today")
        // What the user's style.css names it by.
        addClass(window, "today")
        gtk_window_set_default_size(cast(window), pane ? 360 : 520, pane ? 900 : 640)
        connect(window, "destroy") { [self] in finished = true }
        if screenshot == nil, !firstFrame, !windowed, gtk_layer_is_supported() != 0 {
            // A notification center's panel: along the right edge, over
            // other windows, the keyboard when clicked into. On the overlay
            // layer, over a fullscreen window too: the view shows only when
            // the user asks for it (unlike a banner, which the top layer
            // keeps under a film or a game).
            isPanel = true
            gtk_layer_init_for_window(cast(window))
            gtk_layer_set_namespace(cast(window), "today-view")
            gtk_layer_set_layer(cast(window), GTK_LAYER_SHELL_LAYER_OVERLAY)
            for edge in [GTK_LAYER_SHELL_EDGE_TOP, GTK_LAYER_SHELL_EDGE_BOTTOM, GTK_LAYER_SHELL_EDGE_RIGHT] {
                gtk_layer_set_anchor(cast(window), edge, 1)
            }
            gtk_layer_set_keyboard_mode(cast(window), GTK_LAYER_SHELL_KEYBOARD_MODE_ON_DEMAND)
            gtk_widget_set_size_request(window, 400, -1)
        }

        let column = box(vertical: true, spacing: 0)
        let banner = label("todayd is not running: the cards show what they last showed, and come back to life when it does", classes: ["banner"])
        gtk_widget_set_visible(banner, 0)
        self.banner = banner
        append(column, banner)
        let scroller = shown(gtk_scrolled_window_new(nil, nil)!)
        self.scroller = scroller
        gtk_scrolled_window_set_policy(cast(scroller), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC)
        gtk_widget_set_vexpand(scroller, 1)
        let list = shown(gtk_list_box_new()!)
        self.list = list
        gtk_list_box_set_selection_mode(cast(list), GTK_SELECTION_NONE)
        connect(list, "row-activated", withArgument: { [self] row in
            guard let row else { return }
            let index = Int(gtk_list_box_row_get_index(row.assumingMemoryBound(to: GtkListBoxRow.self)))
            guard cardLines.indices.contains(index), let id = cardLines[index].first, let card = cards.first(where: { $0.id == id }) else { return }
            call(card.path, Today.widget.name, Today.Widget.activate, VariantDictionary([]))
        })
        let content = box(vertical: true, spacing: 0)
        self.content = content
        let notifications = NotificationList(connection: connection)
        self.notifications = notifications
        append(content, notifications.widget)
        append(content, widgetsHeader())
        let gallery = box(vertical: true, spacing: 6)
        self.gallery = gallery
        gtk_widget_set_visible(gallery, 0)
        append(content, gallery)
        append(content, list)
        append(scroller, content)
        append(column, scroller)
        append(window, column)

        // Ctrl+R updates every widget.
        onKeyPress(window) { [self] key, state in
            // Escape puts the panel away.
            if key == UInt32(GDK_KEY_Escape), isPanel {
                hide()
                return true
            }
            // In Edit, Alt+Up and Alt+Down move the card that has the focus.
            if editing, state & GDK_MOD1_MASK.rawValue != 0, key == UInt32(GDK_KEY_Up) || key == UInt32(GDK_KEY_Down) {
                return moveFocusedCard(by: key == UInt32(GDK_KEY_Up) ? -1 : 1)
            }
            guard (key == UInt32(GDK_KEY_r) || key == UInt32(GDK_KEY_R)), state & GDK_CONTROL_MASK.rawValue != 0 else { return false }
            call(Today.managerPath, Today.center.name, Today.Center.updateAll)
            return true
        }

        gtk_window_present(cast(window))
        if editing { showGallery() }
        every(seconds: 30) { [self] in
            let now = Date()
            for (label, card) in updatedLabels { gtk_label_set_text(cast(label), card.updated(at: now)) }
            return !finished
        }
        if firstFrame {
            every(seconds: 4) { [self] in
                FileSystem.writeAll(2, "today-view: todayd did not answer within 4 s\n")
                status = 1
                finished = true
                return false
            }
        }
        if screenshot != nil {
            // todayd may never answer: the picture is taken anyway after a while.
            every(seconds: delay > 0 ? delay : 4) { [self] in
                takeScreenshot()
                return false
            }
        }
    }

    // MARK: Shown and hidden

    /// Shows the view, or hides it where it is shown (`--toggle`).
    func toggle() {
        guard let window else { return }
        if gtk_widget_get_visible(window) != 0 { hide() } else { present() }
    }

    /// Shows the view and brings it forward; what it lists is seen.
    func present() {
        guard let window else { return }
        gtk_widget_show(window)
        gtk_window_present(cast(window))
        if describe { FileSystem.writeAll(1, "window: shown\n") }
        markedSeen = false
        presenting = true
        refresh()
    }

    func hide() {
        guard let window else { return }
        gtk_widget_hide(window)
        if describe { FileSystem.writeAll(1, "window: hidden\n") }
    }

    // MARK: todayd

    private func subscribe() {
        let connection = connection
        Task.detached { [self] in
            let changed: @Sendable (Message) -> Void = { [self] _ in self.refreshFromAnyThread() }
            for rule in [
                MatchRule(interface: .properties, member: .propertiesChanged),
                MatchRule(interface: .objectManager),
                MatchRule(interface: Notifications.today.name, member: Notifications.Center.notificationsChanged.name),
            ] {
                var bus = rule
                bus.sender = Today.busName.rawValue
                _ = try? await connection.subscribe(bus) { _ in }
                _ = try? await connection.subscribe(rule, addToBus: false, handler: changed)
            }
            _ = try? await connection.subscribe(
                MatchRule(sender: "org.freedesktop.DBus", interface: .bus, member: .nameOwnerChanged, arg0: Today.busName.rawValue),
                handler: changed)
            onMainLoop { [self] in
                MainActor.assumeIsolated {
                    subscribed = true
                    announce()
                }
            }
        }
    }

    /// With --describe, a line `state: N cards` or `state: away` each time
    /// what the window shows changes, once the view follows changes: a test
    /// waits for it before it changes something.
    private func announce() {
        guard describe, subscribed, let banner else { return }
        let state = gtk_widget_get_visible(banner) != 0 ? "away" : "\(cards.count) cards"
        guard state != announced else { return }
        announced = state
        FileSystem.writeAll(1, "state: \(state)\n")
    }

    nonisolated func refreshFromAnyThread() {
        onMainLoop { [self] in MainActor.assumeIsolated { self.refresh() } }
    }

    /// Reads every widget and the notifications again; shows them, or the
    /// banner when todayd is away.
    func refresh() {
        let connection = connection
        Task.detached { [self] in
            // One after the other, the cards first: read at once, the cards'
            // round trips waited behind a long list's answer (with a
            // thousand notifications, the first frame came some 100 ms later).
            // The cards' rows are made while the notifications are read, and
            // both are put in together, so that one frame shows them.
            let fetchedCards = await Self.fetch(connection)
            onMainLoop { [self] in MainActor.assumeIsolated { prepare(fetchedCards) } }
            let fetchedNotifications = await NotificationList.fetch(connection)
            onMainLoop { [self] in
                MainActor.assumeIsolated {
                    if let fetchedNotifications { self.show(fetchedNotifications) }
                    self.show(fetchedCards)
                }
            }
        }
    }

    /// Shows the notifications; opening the view marks them seen, and so
    /// does a change while it is shown (as a panel, or as the active window).
    private func show(_ fetched: NotificationList.Fetched) {
        guard let notifications, let window else { return }
        let changed = fetched.entries != notifications.entries
        notifications.show(fetched)
        if changed { markedSeen = false }
        // Shown as a panel, or as the window the user works in; and the
        // moment the view opens (or is presented), whatever it is.
        let looking = gtk_widget_get_visible(window) != 0 && (isPanel || gtk_window_is_active(cast(window)) != 0 || !markedSeenOnce || presenting)
        presenting = false
        if looking, !markedSeen, !fetched.entries.isEmpty {
            markedSeen = true
            markedSeenOnce = true
            notifications.markSeen()
        }
    }

    /// The widgets' cards, or nil when todayd does not answer. The first
    /// call starts todayd through D-Bus activation where it is installed.
    nonisolated static func fetch(_ connection: Connection) async -> [TodayCard]? {
        do {
            // The user's layout (SPEC section 16); ListWidgets from a
            // todayd that has none.
            let paths: [ObjectPath]
            if let layout = try? await connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Get"),
                [.string(Today.center.name.rawValue), .string(Today.Center.layout.name)], timeout: .seconds(25)
            ).value(Variant.self, answering: "Get").value, case .array(.objectPath, let elements) = layout {
                paths = elements.compactMap { if case .objectPath(let path) = $0 { path } else { nil } }
            } else {
                paths = try await connection.call(
                    Today.busName, path: Today.managerPath, interface: Today.center.name, Today.Center.listWidgets, timeout: .seconds(25)
                ).value(ObjectPathList.self, answering: "ListWidgets").paths
            }
            var cards: [TodayCard] = []
            let directories = Directories(environment: ProcessInfo.processInfo.environment)
            for path in paths {
                let reply = try await connection.call(
                    Today.busName, path: path, interface: .properties, member: .getAll, [.string(Today.widget.name.rawValue)])
                let values = try reply.value(VariantDictionary.self, answering: "GetAll").dictionary
                let instance = WidgetInstanceID(path: path)
                let id = instance?.description ?? values[Today.Widget.bundleIdentifier.name]?.string ?? path.rawValue
                var card = TodayCard(id: id, properties: values) { AppIcon.desktopEntryIcon(of: $0, in: directories) }
                if let instance, !instance.isDefault,
                    let settings = try? await connection.call(
                        Today.busName, path: path, interface: .properties, member: .getAll, [.string(Today.instance.name.rawValue)]
                    ).value(VariantDictionary.self, answering: "GetAll").dictionary
                {
                    card.take(instance: settings)
                }
                cards.append(card)
            }
            return cards
        } catch {
            return nil
        }
    }

    /// A call whose answer only matters through the signals that follow.
    func call<each Input: DBusArgument>(
        _ path: ObjectPath, _ interface: InterfaceName, _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input,
        done: (@Sendable () -> Void)? = nil
    ) {
        let connection = connection
        let member = method.method.name
        let arguments = method.values(repeat each inputs)
        Task.detached {
            _ = try? await connection.call(Today.busName, path: path, interface: interface, member: member, arguments, timeout: .seconds(120))
            if let done { onMainLoop(done) }
        }
    }

    // MARK: Cards

    func show(_ fetched: [TodayCard]?) {
        guard let list, let banner else { return }
        defer { announce() }
        gtk_widget_set_visible(banner, fetched == nil ? 1 : 0)
        guard let fetched else { return }
        let shown = fetched.filter(\.isShown)
        if shown != cards || updatedLabels.isEmpty && !shown.isEmpty {
            cards = shown
            redraw(list, shown)
        }
        pressAsked()
        if let id = settingsFor, settingsDialog == nil, let card = cards.first(where: { $0.id == id }) {
            openSettings(for: card)
        }
        if firstFrame, !firstFrameAwaited, let window {
            // The cards and the notifications were just put in: the next
            // frame shows them.
            firstFrameAwaited = true
            afterNextFrame(of: window) { [self] in finished = true }
        }
        if screenshot != nil, !shotTaken, delay == 0, !shotScheduled {
            // Once the window is on screen and laid out, the picture.
            shotScheduled = true
            whenLaidOut(height: 1) { [self] in takeScreenshot() }
        }
    }

    /// Presses each action asked for once a card shows it, as a click
    /// would; with --describe, says what the control shows right after.
    private func pressAsked() {
        for id in presses where !pressed.contains(id) {
            guard let (control, isToggle) = controls[id] ?? notifications?.headerControls[id] else { continue }
            pressed.insert(id)
            // What a click does: a toggle turns over, a button is clicked,
            // both at once (gtk_widget_activate clicks a moment later, as
            // a key press does, and a change shown meanwhile rebuilds the
            // cards under it).
            if isToggle {
                gtk_toggle_button_set_active(cast(control), gtk_toggle_button_get_active(cast(control)) == 0 ? 1 : 0)
            } else {
                gtk_button_clicked(cast(control))
            }
            guard describe else { continue }
            let state = isToggle ? (gtk_toggle_button_get_active(cast(control)) != 0 ? ": on" : ": off") : ""
            FileSystem.writeAll(1, "pressed \(id)\(state)\n")
        }
    }

    func takeScreenshot() {
        guard let screenshot, let window, !shotTaken else { return }
        guard styleKnown else {
            shotWanted = true
            return
        }
        // The picture shows every card: a window too short for them grows
        // to their height first, and the picture is taken once that is laid out.
        if !shotFitted, let list {
            shotFitted = true
            let width = gtk_widget_get_allocated_width(window)
            let bannerHeight = banner.map { gtk_widget_get_visible($0) != 0 ? naturalHeight($0, width: width) : 0 } ?? 0
            let wanted = naturalHeight(content ?? list, width: width) + bannerHeight
            // The content is laid out whole inside its scroller's viewport,
            // which shows what fits.
            let visible = scroller.map { gtk_widget_get_allocated_height($0) } ?? 0
            if wanted > visible + bannerHeight {
                let height = min(wanted, 16_000)
                gtk_window_resize(cast(window), width, height)
                // The X server may give less than asked (the screen's height).
                whenLaidOut(height: min(height, screenHeight())) { [self] in takeScreenshot() }
                return
            }
        }
        shotTaken = true
        if let dialog = settingsDialog {
            // The form: its texts and its picture.
            if describe { FileSystem.writeAll(1, visibleTexts(dialog).map { $0 + "\n" }.joined()) }
            if !savePNG(of: dialog, to: screenshot) {
                FileSystem.writeAll(2, "today-view: cannot render the settings to \(screenshot)\n")
                status = 1
            }
            finished = true
            return
        }
        if describe {
            let placement = list.map { rowsInside($0, window: window) } ?? []
            let switches = notifications.map { ["do not disturb: \($0.doNotDisturb ? "on" : "off")"] } ?? []
            FileSystem.writeAll(1, (visibleTexts(window) + cardIcons(window) + placement + switches).map { $0 + "\n" }.joined())
        }
        if !savePNG(of: window, to: screenshot) {
            FileSystem.writeAll(2, "today-view: cannot render the window to \(screenshot)\n")
            status = 1
        }
        // After the picture: moving the focus changes what it would show.
        if describe { FileSystem.writeAll(1, focusChain(window).map { "focus " + $0 + "\n" }.joined()) }
        finished = true
    }

    /// Runs `body` once the window is mapped and at least `height` pixels
    /// high, and a frame later (every 50 ms it looks; after 3 s it runs
    /// anyway).
    private func whenLaidOut(height: Int32, _ body: @escaping () -> Void) {
        guard let window else { return }
        var waited: UInt32 = 0
        every(milliseconds: 50) {
            waited += 50
            let ready = gtk_widget_get_mapped(window) != 0 && gtk_widget_get_allocated_width(window) > 1
                && gtk_widget_get_allocated_height(window) >= height
            guard ready || waited >= 3000 else { return true }
            every(milliseconds: 50) {
                body()
                return false
            }
            return false
        }
    }

    /// Makes the rows of `fetched`'s cards that the view does not show as
    /// they are, outside the window (so that no frame is drawn for them),
    /// for the `redraw` that puts them in.
    private func prepare(_ fetched: [TodayCard]?) {
        guard let fetched else { return }
        let now = Date()
        for line in Self.lines(of: fetched.filter(\.isShown)) {
            for card in line where rows[card.id]?.card != card && prepared[card.id]?.row.card != card {
                let made = row(for: card, now: now, paired: line.count > 1)
                // Held until a redraw puts it in or drops it.
                g_object_ref_sink(raw(made.row))
                if let old = prepared.updateValue((made, line.count > 1), forKey: card.id) { dropPrepared(old.row) }
            }
        }
    }

    /// The row made beforehand for `card` as it is, or nil.
    private func takePrepared(_ card: TodayCard, paired: Bool) -> CardRow? {
        guard let ready = prepared.removeValue(forKey: card.id) else { return nil }
        guard ready.row.card == card, ready.paired == paired else {
            dropPrepared(ready.row)
            return nil
        }
        return ready.row
    }

    private func dropPrepared(_ row: CardRow) {
        gtk_widget_destroy(row.row)
        g_object_unref(raw(row.row))
    }

    /// Puts `shown`'s rows in `list` in order: the row of a card that did
    /// not change is kept (taken out and put back where it now goes), the
    /// others made; with --describe, says how many of each.
    private func redraw(_ list: Widget, _ shown: [TodayCard]) {
        let now = Date()
        var kept: [String: CardRow] = [:]
        for card in shown {
            guard let old = rows[card.id], old.card == card, kept[card.id] == nil else { continue }
            // Held while out of its line, which would otherwise free it.
            g_object_ref(raw(old.row))
            if let parent = gtk_widget_get_parent(old.row) { gtk_container_remove(cast(parent), old.row) }
            kept[card.id] = old
        }
        for row in children(list) { gtk_widget_destroy(row) }
        var next: [String: CardRow] = [:]
        var made = 0
        var lines: [[String]] = []
        for line in Self.lines(of: shown) {
            let row = gtk_list_box_row_new()!
            gtk_widget_show(row)
            gtk_list_box_row_set_activatable(cast(row), 1)
            // Small cards two to a row, each half of it.
            let holder = line.count > 1 ? box(vertical: false, spacing: 12) : row
            if line.count > 1 {
                gtk_box_set_homogeneous(cast(holder), 1)
                append(row, holder)
            }
            for card in line {
                let entry: CardRow
                // A row held here (kept, or made beforehand) is let go once its line has it.
                var held = true
                if let old = kept.removeValue(forKey: card.id) {
                    entry = old
                } else if let ready = takePrepared(card, paired: line.count > 1) {
                    entry = ready
                    made += 1
                } else {
                    entry = self.row(for: card, now: now, paired: line.count > 1)
                    made += 1
                    held = false
                }
                gtk_container_add(cast(holder), entry.row)
                if held { g_object_unref(raw(entry.row)) }
                next[card.id] = entry
            }
            setAccessibleLabel(row, line.map(\.accessibilityLabel).joined(separator: "; "))
            gtk_list_box_insert(cast(list), row, -1)
            lines.append(line.map(\.id))
        }
        // Kept for a card that is now shown twice: nothing holds it.
        for (_, old) in kept { g_object_unref(raw(old.row)) }
        for (_, unused) in prepared { dropPrepared(unused.row) }
        prepared = [:]
        rows = next
        cardLines = lines
        updatedLabels = shown.compactMap { card in next[card.id].map { ($0.updated, card) } }
        controls = [:]
        for card in shown {
            for (id, control) in next[card.id]?.controls ?? [:] where controls[id] == nil { controls[id] = control }
        }
        if shown.isEmpty {
            gtk_list_box_insert(cast(list), label("No widget has anything to show.", classes: ["dim"]), -1)
        }
        if describe, screenshot == nil {
            FileSystem.writeAll(1, "cards: \(made) made, \(shown.count - made) kept\n")
            reportPlaces()
        }
    }

    /// With --describe in a window: where each card is on the screen, once
    /// laid out (`place ID X Y WIDTH HEIGHT`), for scripts that point at it.
    private func reportPlaces() {
        whenLaidOut(height: 1) { [self] in
            guard let window, let surface = gtk_widget_get_window(window) else { return }
            var originX: Int32 = 0
            var originY: Int32 = 0
            gdk_window_get_origin(surface, &originX, &originY)
            var lines = ""
            for card in cards {
                guard let widget = rows[card.id]?.row else { continue }
                var x: Int32 = 0
                var y: Int32 = 0
                guard gtk_widget_translate_coordinates(widget, window, 0, 0, &x, &y) != 0 else { continue }
                lines += "place \(card.id) \(originX + x) \(originY + y) \(gtk_widget_get_allocated_width(widget)) \(gtk_widget_get_allocated_height(widget))\n"
            }
            FileSystem.writeAll(1, lines)
        }
    }

    /// The rows the cards go in: one card each, but two small cards one
    /// after the other share a row.
    static func lines(of cards: [TodayCard]) -> [[TodayCard]] {
        var lines: [[TodayCard]] = []
        for card in cards {
            if card.family == .small, let last = lines.last, last.count == 1, last[0].family == .small {
                lines[lines.count - 1].append(card)
            } else {
                lines.append([card])
            }
        }
        return lines
    }

    /// A card: its box inside an event box that a click activates (the
    /// row's activation, Enter, activates its first card).
    private func row(for card: TodayCard, now: Date, paired: Bool) -> CardRow {
        let row = shown(gtk_event_box_new()!)
        gtk_event_box_set_visible_window(cast(row), 0)
        setAccessibleLabel(row, card.accessibilityLabel)
        let path = card.path
        onClick(row) { [self] in call(path, Today.widget.name, Today.Widget.activate, VariantDictionary([])) }
        if editing { enableDragging(row, id: card.id) }
        let content = box(vertical: true, spacing: 6)
        addClass(content, "card")
        let (top, left, bottom, right) = card.margins
        setMargins(content, top: Int32(clamping: Int(top.rounded())), left: Int32(clamping: Int(left.rounded())), bottom: Int32(clamping: Int(bottom.rounded())), right: Int32(clamping: Int(right.rounded())))
        if card.preferredHeight > 0 { gtk_widget_set_size_request(content, -1, Int32(clamping: Int(min(card.preferredHeight, 4000).rounded()))) }

        let header = box(vertical: false, spacing: 8)
        switch card.icon {
        case .file(let path): append(header, cardIcon(file: path, named: AppIcon.fallbackName))
        case .named(let icon): append(header, cardIcon(file: nil, named: icon))
        }
        let name = label(card.name, classes: ["card-name"], wrap: false)
        gtk_widget_set_hexpand(name, 1)
        append(header, name)
        let spinner = gtk_spinner_new()!
        append(header, spinner)
        let refresh = button(nil, icon: "view-refresh-symbolic") { [self] in
            gtk_widget_set_visible(spinner, 1)
            gtk_spinner_start(cast(spinner))
            let running = MainLoopWidget(widget: spinner)
            call(path, Today.widget.name, Today.Widget.performUpdate) {
                gtk_spinner_stop(cast(running.widget))
                gtk_widget_set_visible(running.widget, 0)
            }
        }
        gtk_widget_set_tooltip_text(refresh, "Update \(card.name)")
        setAccessibleLabel(refresh, "Update \(card.name)")
        append(header, refresh)
        append(content, header)

        if let title = card.title { append(content, label(title, classes: ["card-title"])) }
        if let subtitle = card.subtitle { append(content, label(subtitle, classes: ["dim"])) }
        if let body = card.body { append(content, label(body)) }
        switch card.image {
        case .bytes(let data)?:
            if let loaded = pixbuf(bytes: data) { append(content, picture(loaded, width: 480, height: 160)) }
        case .path(let path)?:
            if let loaded = pixbuf(file: path) { append(content, picture(loaded, width: 480, height: 160)) }
        case nil: break
        }
        for item in card.items {
            let text = item.title + (item.subtitle.map { " — \($0)" } ?? "")
            let row = button(text) { [self] in
                if let action = item.action {
                    call(path, Today.widget.name, Today.Widget.performAction, action, VariantDictionary([]))
                } else if let url = item.url {
                    call(Today.managerPath, Today.center.name, Today.Center.openURL, url.absoluteString, VariantDictionary([]))
                }
            }
            addClass(row, "flat")
            if let child = gtk_bin_get_child(cast(row)) { gtk_label_set_xalign(cast(child), 0) }
            append(content, row)
        }
        var own: [String: (widget: Widget, isToggle: Bool)] = [:]
        if !card.actions.isEmpty {
            let bar = box(vertical: false, spacing: 6)
            for action in card.actions {
                let press = { [self] in call(path, Today.widget.name, Today.Widget.performAction, action.id, VariantDictionary([])) }
                let control: Widget
                if action.isToggle {
                    control = shown(gtk_toggle_button_new()!)
                    setContent(of: control, title: action.title, icon: action.iconName)
                    gtk_toggle_button_set_active(cast(control), action.isOn ? 1 : 0)
                    connect(control, "toggled", press)
                } else {
                    control = button(action.title, icon: action.iconName, press)
                }
                setAccessibleLabel(control, action.accessibilityLabel ?? action.title)
                if own[action.id] == nil { own[action.id] = (control, action.isToggle) }
                append(bar, control)
            }
            append(content, bar)
        }
        if let failure = card.failure { append(content, label(failure, classes: ["failure"])) }
        let updated = label(card.updated(at: now), classes: ["dim", "caption"])
        append(content, updated)
        if editing { append(content, editBar(for: card)) }
        // A large card is taller; a small one, half as wide.
        switch card.family {
        case .large: gtk_widget_set_size_request(content, -1, max(320, Int32(clamping: Int(min(card.preferredHeight, 4000).rounded()))))
        case .small where !paired:
            // Alone in its row: half of it.
            gtk_widget_set_halign(row, GTK_ALIGN_START)
            gtk_widget_set_size_request(row, 230, -1)
        case .small, .medium: break
        }
        append(row, content)
        return CardRow(card: card, row: row, updated: updated, controls: own)
    }
}
