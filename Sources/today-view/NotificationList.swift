import CGtk
import DBus
import FoundationEssentials
import TodayCore
import TodayGtk
import TodayProtocol

/// The notification center in the Today view (SPEC section 15): a header
/// with the Do Not Disturb switch and Clear All, then the notifications
/// grouped by app (the app with the newest first), newest first in each,
/// three shown per app until the group is opened; each with its actions,
/// its time and a dismiss button; each group with its own Clear. Lives on
/// GTK's main thread.
@MainActor
final class NotificationList {
    static let collapsedCount = 3

    let connection: Connection
    /// The section: header and groups, above the widgets' cards.
    let widget: Widget
    private let groupsBox: Widget
    private let dndSwitch: Widget
    private let clearAll: Widget
    private(set) var entries: [NotificationEntry] = []
    private(set) var doNotDisturb = false
    /// When Do Not Disturb goes off by itself (µs since 1970); 0: no end.
    private(set) var doNotDisturbUntil: UInt64 = 0
    /// "Do Not Disturb", or "Do Not Disturb until 18:00".
    private let dndLabel: Widget
    /// Apps whose every notification is shown.
    private var expanded: Set<String> = []
    /// While the switch is set from todayd's value, its change is not sent back.
    private var settingSwitch = false
    /// AppPolicies as todayd last gave them: what each group's menu shows.
    private var policies: [String: [String: Value]] = [:]
    /// The header's controls that `--press` reaches, by id: the menu of
    /// Do Not Disturb for a while, and its choices (`whiles`); the
    /// banners' menu and its choices; each group's menu and its checks.
    private(set) var headerControls: [String: (widget: Widget, isToggle: Bool)] = [:]
    /// The banners' menu: where they show, how many at once, whether they
    /// wait while the user is away; set from todayd's values without
    /// sending them back.
    private var positionChoices: [BannerPosition: Widget] = [:]
    private var atOnceChoices: [UInt32: Widget] = [:]
    private var waitWhileAway: Widget?
    private var settingBanners = false
    /// IdleThreshold as todayd last gave it when it was not 0: what the
    /// check brings back once turned on again.
    private var idleThreshold: UInt32 = 120

    /// Do Not Disturb for a while, as Plasma's and iOS's menus offer it:
    /// the id `--press` knows each by, its title, and its end (seconds
    /// since 1970) from now.
    static let whiles: [(id: String, title: String, end: @Sendable (UInt64) -> UInt64?)] = [
        ("do-not-disturb-1h", "For 1 hour", { wholeMinute(3600, after: $0) }),
        ("do-not-disturb-4h", "For 4 hours", { wholeMinute(4 * 3600, after: $0) }),
        ("do-not-disturb-morning", "Until tomorrow morning", { nextLocalTime(hour: 8, minute: 0, after: $0) }),
    ]

    static let css = """
        .section-title { font-weight: bold; font-size: 1.1em; }
        .group-title { font-weight: bold; }
        .notifications { padding: 6px 12px 12px 12px; }
        .notification-group list row { padding: 3px 0; }
        """

    init(connection: Connection) {
        self.connection = connection
        widget = box(vertical: true, spacing: 8)
        addClass(widget, "notifications")
        // Two rows, so that "Do Not Disturb until 18:00" fits the pane:
        // the title and Clear All, then Do Not Disturb, its switch and its
        // menu of whiles.
        let header = box(vertical: false, spacing: 8)
        let title = label("Notifications", classes: ["section-title"], wrap: false)
        gtk_widget_set_hexpand(title, 1)
        append(header, title)
        clearAll = button("Clear All") {}
        append(header, clearAll)
        append(widget, header)
        let dndRow = box(vertical: false, spacing: 8)
        dndLabel = label("Do Not Disturb", wrap: false)
        gtk_widget_set_hexpand(dndLabel, 1)
        append(dndRow, dndLabel)
        dndSwitch = shown(gtk_switch_new()!)
        gtk_widget_set_valign(dndSwitch, GTK_ALIGN_CENTER)
        setAccessibleLabel(dndSwitch, "Do Not Disturb")
        append(dndRow, dndSwitch)
        let menu = Self.menuOfWhiles(controls: &headerControls) { [connection] end in
            Self.set(Notifications.Center.doNotDisturbUntil, .uint64(end * 1_000_000), on: connection)
        }
        append(dndRow, menu)
        append(widget, dndRow)
        groupsBox = box(vertical: true, spacing: 10)
        append(widget, groupsBox)
        // Beside Clear All.
        append(header, bannerSettings())
        connect(clearAll, "clicked") { [self] in call(Notifications.Center.dismissAll, "") }
        connect(dndSwitch, "notify::active", withArgument: { [self] _ in
            guard !settingSwitch else { return }
            Self.set(Notifications.Center.doNotDisturb, .boolean(gtk_switch_get_active(cast(dndSwitch)) != 0), on: connection)
        })
    }

    /// Sets `property` of todayd's Notifications interface; a failure is
    /// said on standard error.
    private static func set(_ property: Property, _ value: Value, on connection: Connection) {
        connection.call(
            Today.busName, path: Today.managerPath, interface: .properties, member: MemberName("Set"),
            [.string(Notifications.today.name.rawValue), .string(property.name), .variant(value)]
        ) { result in
            if case .failure(let error) = result { FileSystem.writeAll(2, "today-view: \(property.name): \(error)\n") }
        }
    }

    /// What `appID`'s notifications do: its own policy, else the default
    /// one (`""`); empty (all allowed) where there is neither.
    private func policy(of appID: String) -> [String: Value] {
        policies[appID] ?? policies[""] ?? [:]
    }

    /// The menu beside the switch: a button with an arrow whose popover
    /// offers `whiles`; a choice turns Do Not Disturb on until its end
    /// (`DoNotDisturbUntil`), worked out when it is chosen.
    private static func menuOfWhiles(
        controls: inout [String: (widget: Widget, isToggle: Bool)], _ choose: @escaping (UInt64) -> Void
    ) -> Widget {
        let menu = shown(gtk_menu_button_new()!)
        gtk_widget_set_valign(menu, GTK_ALIGN_CENTER)
        setAccessibleLabel(menu, "Do Not Disturb for a while")
        gtk_widget_set_tooltip_text(menu, "Do Not Disturb for a while")
        controls["do-not-disturb-menu"] = (menu, true)
        let popover = gtk_popover_new(menu)!
        let choices = box(vertical: true, spacing: 0)
        setMargins(choices, top: 6, left: 6, bottom: 6, right: 6)
        for choice in whiles {
            let item = button(choice.title) {
                gtk_popover_popdown(cast(popover))
                if let end = choice.end(nowMicroseconds() / 1_000_000) { choose(end) }
            }
            addClass(item, "flat")
            if let title = gtk_bin_get_child(cast(item)) { gtk_label_set_xalign(cast(title), 0) }
            append(choices, item)
            controls[choice.id] = (item, false)
        }
        gtk_container_add(cast(popover), shown(choices))
        gtk_menu_button_set_popover(cast(menu), popover)
        return menu
    }

    /// A flat button with a gear whose popover (returned with it, empty)
    /// is a menu of settings; `name` is what a screen reader and its
    /// tooltip say.
    private static func gearMenu(_ name: String) -> (menu: Widget, popover: Widget) {
        let menu = shown(gtk_menu_button_new()!)
        gtk_widget_set_valign(menu, GTK_ALIGN_CENTER)
        gtk_button_set_image(cast(menu), gtk_image_new_from_icon_name("emblem-system-symbolic", GTK_ICON_SIZE_BUTTON))
        addClass(menu, "flat")
        setAccessibleLabel(menu, name)
        gtk_widget_set_tooltip_text(menu, name)
        return (menu, gtk_popover_new(menu)!)
    }

    /// The banners' places as the menu lays them out, by row and column.
    static let positions: [(position: BannerPosition, title: String, row: Int32, column: Int32)] = [
        (.topLeft, "Top left", 0, 0), (.top, "Top", 0, 1), (.topRight, "Top right", 0, 2),
        (.bottomLeft, "Bottom left", 1, 0), (.bottom, "Bottom", 1, 1), (.bottomRight, "Bottom right", 1, 2),
    ]

    /// The banners' menu, as Plasma's notification settings and mako's
    /// and dunst's files give them: where they show (BannerPosition), how
    /// many at once (BannerLimit), and whether they wait while the user is
    /// away (IdleThreshold). `--press` knows the menu by
    /// `banners-settings`, the places by `banner-position:PLACE`, the
    /// counts by `banners-at-once:N` and the check by
    /// `banners-wait-while-away`.
    private func bannerSettings() -> Widget {
        typealias C = Notifications.Center
        let (menu, popover) = Self.gearMenu("Banners' settings")
        headerControls["banners-settings"] = (menu, true)
        let content = box(vertical: true, spacing: 6)
        setMargins(content, top: 8, left: 8, bottom: 8, right: 8)
        append(content, label("Banners", classes: ["group-title"], wrap: false))
        append(content, label("Where they show", classes: ["dim"], wrap: false))
        let grid = shown(gtk_grid_new()!)
        gtk_grid_set_column_spacing(cast(grid), 6)
        var first: Widget?
        for place in Self.positions {
            let radio = shown(first.map { gtk_radio_button_new_with_label_from_widget(cast($0), place.title)! } ?? gtk_radio_button_new_with_label(nil, place.title)!)
            first = first ?? radio
            gtk_grid_attach(cast(grid), radio, place.column, place.row, 1, 1)
            positionChoices[place.position] = radio
            headerControls["banner-position:\(place.position.rawValue)"] = (radio, true)
            connect(radio, "toggled") { [self] in
                guard !settingBanners, gtk_toggle_button_get_active(cast(radio)) != 0 else { return }
                Self.set(C.bannerPosition, .string(place.position.rawValue), on: connection)
            }
        }
        append(content, grid)
        append(content, label("At once", classes: ["dim"], wrap: false))
        let counts = box(vertical: false, spacing: 6)
        var firstCount: Widget?
        for count: UInt32 in 1...3 {
            let radio = shown(firstCount.map { gtk_radio_button_new_with_label_from_widget(cast($0), "\(count)")! } ?? gtk_radio_button_new_with_label(nil, "\(count)")!)
            firstCount = firstCount ?? radio
            append(counts, radio)
            atOnceChoices[count] = radio
            headerControls["banners-at-once:\(count)"] = (radio, true)
            connect(radio, "toggled") { [self] in
                guard !settingBanners, gtk_toggle_button_get_active(cast(radio)) != 0 else { return }
                Self.set(C.bannerLimit, .uint32(count), on: connection)
            }
        }
        append(content, counts)
        let away = shown(gtk_check_button_new_with_label("Wait while I am away")!)
        gtk_widget_set_tooltip_text(away, "Banners stay until you are back after two minutes without input")
        waitWhileAway = away
        headerControls["banners-wait-while-away"] = (away, true)
        connect(away, "toggled") { [self] in
            guard !settingBanners else { return }
            Self.set(C.idleThreshold, .uint32(gtk_toggle_button_get_active(cast(away)) != 0 ? idleThreshold : 0), on: connection)
        }
        append(content, away)
        gtk_container_add(cast(popover), shown(content))
        gtk_menu_button_set_popover(cast(menu), popover)
        return menu
    }

    /// Shows the banners' settings as todayd has them, sending nothing back.
    private func showBannerSettings(_ settings: [String: Value]) {
        typealias C = Notifications.Center
        settingBanners = true
        defer { settingBanners = false }
        let position = settings[C.bannerPosition.name]?.string.flatMap(BannerPosition.init(rawValue:)) ?? .topRight
        if let radio = positionChoices[position] { gtk_toggle_button_set_active(cast(radio), 1) }
        let count = settings[C.bannerLimit.name]?.int64.flatMap { UInt32(exactly: $0) } ?? 3
        if let radio = atOnceChoices[count] { gtk_toggle_button_set_active(cast(radio), 1) }
        let idle = settings[C.idleThreshold.name]?.int64.flatMap { UInt32(exactly: $0) } ?? 120
        if idle != 0 { idleThreshold = idle }
        if let waitWhileAway { gtk_toggle_button_set_active(cast(waitWhileAway), idle != 0 ? 1 : 0) }
    }

    /// What the view shows of todayd's notification server.
    struct Fetched: Sendable {
        var entries: [NotificationEntry]
        var doNotDisturb: Bool
        /// When Do Not Disturb goes off by itself (µs since 1970); 0: no end.
        var until: UInt64
        /// AppPolicies: each app's policy, by app id (`""`: the default).
        var policies: [String: [String: Value]]
        /// Every property of todayd's Notifications interface, by name:
        /// the banners' settings among them.
        var settings: [String: Value] = [:]
    }

    /// An app's settings, as GNOME's and Plasma's notification settings
    /// give them: banners, kept in the list, sounds. What an app that has
    /// no policy of its own shows is the default policy's (`""`); a change
    /// makes the app a policy of its own from what it showed, with the one
    /// setting changed (SetAppPolicy replaces a policy whole, so its
    /// urgency and time go along). `--press` knows each check by
    /// `app-KEY:APP` and the menu by `app-settings:APP`.
    private func appSettings(_ appID: String, title: String) -> Widget {
        let (menu, popover) = Self.gearMenu("Settings of \(title)'s notifications")
        let checks = box(vertical: true, spacing: 2)
        setMargins(checks, top: 6, left: 6, bottom: 6, right: 6)
        let heading = label(title, classes: ["group-title"], wrap: false)
        append(checks, heading)
        var boxes: [(key: String, widget: Widget)] = []
        for (key, text) in Self.appSettingKeys {
            let check = shown(gtk_check_button_new_with_label(text)!)
            append(checks, check)
            boxes.append((key, check))
            headerControls["app-\(key):\(appID)"] = (check, true)
        }
        headerControls["app-settings:\(appID)"] = (menu, true)
        gtk_container_add(cast(popover), shown(checks))
        gtk_menu_button_set_popover(cast(menu), popover)
        // The checks show the policy as it is now, set without sending it
        // back; a change the user makes is sent.
        var setting = false
        func showPolicy() {
            let policy = policy(of: appID)
            setting = true
            for (key, check) in boxes { gtk_toggle_button_set_active(cast(check), policy[key]?.bool ?? true ? 1 : 0) }
            setting = false
        }
        showPolicy()
        connect(menu, "toggled") { showPolicy() }
        for (key, check) in boxes {
            connect(check, "toggled") { [self] in
                guard !setting else { return }
                var policy = policy(of: appID)
                policy[key] = .boolean(gtk_toggle_button_get_active(cast(check)) != 0)
                policies[appID] = policy
                call(Notifications.Center.setAppPolicy, appID, VariantDictionary(policy.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
            }
        }
        return menu
    }

    /// An app's settings in its group's menu: the policy's key and what the
    /// check says.
    static let appSettingKeys = [("banners", "Banners"), ("list", "Keep in the list"), ("sounds", "Sounds")]

    /// The list and Do Not Disturb as todayd has them, or nil when it does
    /// not answer (or serves no notifications).
    nonisolated static func fetch(_ connection: Connection) async -> Fetched? {
        do {
            let reply = try await connection.call(
                Today.busName, path: Today.managerPath, interface: Notifications.today.name, Notifications.Center.listNotifications)
            let properties = try await connection.call(
                Today.busName, path: Today.managerPath, interface: .properties, member: .getAll, [.string(Notifications.today.name.rawValue)])
            let values = properties.body.first?.stringDictionary ?? [:]
            let policies = (values[Notifications.Center.appPolicies.name]?.stringDictionary ?? [:]).compactMapValues(\.stringDictionary)
            return Fetched(
                entries: NotificationEntry.list(reply.body.first ?? .array(.variant, [])),
                doNotDisturb: values[Notifications.Center.doNotDisturb.name]?.bool ?? false,
                until: values[Notifications.Center.doNotDisturbUntil.name]?.uint64 ?? 0, policies: policies, settings: values)
        } catch {
            return nil
        }
    }

    func call<each Input: DBusArgument>(_ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input) {
        connection.call(
            Today.busName, path: Today.managerPath, interface: Notifications.today.name, member: method.method.name,
            method.values(repeat each inputs)
        ) { result in
            if case .failure(let error) = result { FileSystem.writeAll(2, "today-view: \(method.method.name.rawValue): \(error)\n") }
        }
    }

    /// The user has seen the list.
    func markSeen() { call(Notifications.Center.markSeen) }

    private var controls: NotificationControls {
        NotificationControls(
            invoke: { [self] id, key in
                var platform: [(String, Value)] = []
                if let token = activationToken() { platform.append(("activation-token", .string(token))) }
                call(Notifications.Center.invokeAction, id, key, VariantDictionary(platform))
            },
            reply: { [self] id, text in call(Notifications.Center.reply, id, text) },
            dismiss: { [self] id in call(Notifications.Center.dismiss, id) },
            openLink: { [self] uri in
                connection.call(
                    Today.busName, path: Today.managerPath, interface: Today.center.name, member: Today.Center.openURL.method.name,
                    Today.Center.openURL.values(uri, VariantDictionary([]))
                ) { _ in }
            })
    }

    /// Shows `fetched`; the groups are made again only when what they
    /// show changed.
    func show(_ fetched: Fetched, now: Date = Date()) {
        policies = fetched.policies
        showBannerSettings(fetched.settings)
        if fetched.doNotDisturb != doNotDisturb || gtk_switch_get_active(cast(dndSwitch)) != (fetched.doNotDisturb ? 1 : 0) {
            doNotDisturb = fetched.doNotDisturb
            settingSwitch = true
            gtk_switch_set_active(cast(dndSwitch), doNotDisturb ? 1 : 0)
            settingSwitch = false
        }
        let until = fetched.doNotDisturb ? fetched.until : 0
        if until != doNotDisturbUntil {
            doNotDisturbUntil = until
            gtk_label_set_text(cast(dndLabel), until == 0 ? "Do Not Disturb" : "Do Not Disturb until \(localMinute(until))")
        }
        guard fetched.entries != entries || children(groupsBox).isEmpty else { return }
        entries = fetched.entries
        redraw(now: now)
    }

    /// Groups are made at once until they hold this many rows (a row is
    /// some 140 pixels: four fill the window's first screen); the rest
    /// follow when the main loop is idle, a few groups at a time, so that a
    /// long list does not hold back the first picture.
    static let firstRows = 4
    static let groupsPerTurn = 4
    /// Changes with each redraw: groups still to be made for an older
    /// list are not.
    private var redrawCount = 0

    private func redraw(now: Date) {
        for child in children(groupsBox) { gtk_widget_destroy(child) }
        gtk_widget_set_sensitive(clearAll, entries.isEmpty ? 0 : 1)
        if entries.isEmpty {
            append(groupsBox, label("No notifications", classes: ["dim"]))
            return
        }
        redrawCount &+= 1
        let count = redrawCount
        var groups = NotificationEntry.groups(entries)[...]
        let controls = controls
        var rows = 0
        while rows < Self.firstRows, let group = groups.popFirst() {
            append(groupsBox, section(group, now: now, controls: controls))
            rows += expanded.contains(group.key) ? group.entries.count : min(group.entries.count, Self.collapsedCount)
        }
        guard !groups.isEmpty else { return }
        whenIdle { [self] in
            guard count == redrawCount else { return false }
            for group in groups.prefix(Self.groupsPerTurn) { append(groupsBox, section(group, now: now, controls: controls)) }
            groups = groups.dropFirst(Self.groupsPerTurn)
            return !groups.isEmpty
        }
    }

    /// One group: its header (icon, app, count, Clear), its notifications
    /// (the first three until it is opened) and the button that opens it.
    private func section(_ thread: NotificationEntry.Group, now: Date, controls: NotificationControls) -> Widget {
        let (appID, group, key) = (thread.appID, thread.entries, thread.key)
        let section = box(vertical: true, spacing: 4)
        addClass(section, "notification-group")
        let header = box(vertical: false, spacing: 6)
        append(header, appIcon(group.first?.appIcon ?? ""))
        let title = label(group.first?.appTitle ?? appID, classes: ["group-title"], wrap: false)
        gtk_widget_set_hexpand(title, 1)
        append(header, title)
        if group.count > 1 { append(header, label("\(group.count)", classes: ["dim"], wrap: false)) }
        // An app's group clears the app; a thread's, its own.
        let ids = group.map(\.id)
        let clear = button("Clear") { [self] in
            if thread.threadID.isEmpty {
                call(Notifications.Center.dismissAll, appID)
            } else {
                for id in ids { call(Notifications.Center.dismiss, id) }
            }
        }
        addClass(clear, "flat")
        setAccessibleLabel(clear, "Clear \(group.first?.appTitle ?? appID)")
        append(header, clear)
        append(header, appSettings(appID, title: group.first?.appTitle ?? appID))
        append(section, header)

        let list = shown(gtk_list_box_new()!)
        gtk_list_box_set_selection_mode(cast(list), GTK_SELECTION_NONE)
        connect(list, "row-activated", withArgument: { row in
            guard let row else { return }
            let id = notificationID(of: row.assumingMemoryBound(to: GtkWidget.self))
            if id != 0 { controls.invoke(id, "default") }
        })
        let open = expanded.contains(key)
        for entry in open ? group : Array(group.prefix(Self.collapsedCount)) {
            gtk_list_box_insert(cast(list), notificationRow(entry, now: now, controls: controls, showApp: false), -1)
        }
        append(section, list)
        if group.count > Self.collapsedCount {
            let more = button(open ? "Show less" : "Show \(group.count - Self.collapsedCount) more") { [self] in
                if expanded.contains(key) { expanded.remove(key) } else { expanded.insert(key) }
                redraw(now: Date())
            }
            addClass(more, "flat")
            append(section, more)
        }
        return section
    }
}
