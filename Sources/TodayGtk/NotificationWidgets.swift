import CGtk
import FoundationEssentials
import TodayProtocol

/// What a notification's controls do; the view and the banners each pass
/// their calls to todayd.
package struct NotificationControls {
    /// An action chosen: its key (`default`: the notification itself).
    package var invoke: (UInt32, String) -> Void
    package var reply: (UInt32, String) -> Void
    package var dismiss: (UInt32) -> Void
    /// A link in the body: opened through OpenURL.
    package var openLink: (String) -> Void

    package init(
        invoke: @escaping (UInt32, String) -> Void, reply: @escaping (UInt32, String) -> Void, dismiss: @escaping (UInt32) -> Void,
        openLink: @escaping (String) -> Void
    ) {
        self.invoke = invoke
        self.reply = reply
        self.dismiss = dismiss
        self.openLink = openLink
    }
}

/// The key under which a row keeps its notification's id.
private let notificationKey = "today-notification-id"

/// The key under which a row keeps the card that fills it.
private let cardKey = "today-notification-card"

/// The id of the notification a row shows (0: none).
package func notificationID(of row: Widget) -> UInt32 {
    UInt32(truncatingIfNeeded: Int(bitPattern: g_object_get_data(object(row), notificationKey)))
}

/// A notification as the list and the banners show it (SPEC section 15),
/// as a row of a GtkListBox, whose activation is a click on the
/// notification (`default`): the app's icon and name, the time, a dismiss
/// button; the summary, the body (its markup), the picture, the progress,
/// a button for each action and a reply field where it takes one.
@MainActor
package func notificationRow(_ entry: NotificationEntry, now: Date, controls: NotificationControls, showApp: Bool = true) -> Widget {
    let card = NotificationCard(controls: controls, showApp: showApp)
    card.fill(entry, now: now)
    return card.row
}

/// A notification's row and the widgets in it, made once and filled with
/// a notification, then filled again with another or with the same one
/// changed: only what differs is redone. The banners keep one made ahead,
/// and fill a shown one in place when its notification is replaced (a
/// progress that moves, a new summary), so that what a person waits for
/// is the new text laid out, not a whole tree of widgets made and styled.
/// The row keeps its card for as long as it lives.
@MainActor
package final class NotificationCard {
    package let row: Widget
    /// What it shows; nil while it has shown nothing.
    package private(set) var entry: NotificationEntry?
    private let controls: NotificationControls
    private let showApp: Bool
    private let content: Widget
    private let header: Widget
    /// The app's icon (a banner): the GtkImage, and what it shows.
    private var icon: (widget: Widget, source: String)?
    private let appName: Widget?
    private let time: Widget
    private let dismiss: Widget
    private let middle: Widget
    private var image: (widget: Widget, path: String)?
    private let summary: Widget
    private let body: Widget
    private var progress: Widget?
    private var buttons: (bar: Widget, shown: [(key: String, label: String)])?
    private var reply: (field: Widget, placeholder: String)?

    /// The least width of the summary and the body, in characters.
    package static let leastCharacters: Int32 = 24

    package init(controls: NotificationControls, showApp: Bool) {
        self.controls = controls
        self.showApp = showApp
        row = shown(gtk_list_box_row_new()!)
        gtk_list_box_row_set_activatable(cast(row), 1)
        content = box(vertical: true, spacing: 4)
        addClass(content, "notification")
        header = box(vertical: false, spacing: 6)
        if showApp {
            appName = label("", classes: ["dim", "app-name"], wrap: false)
        } else {
            appName = nil
        }
        time = label("", classes: ["dim", "time"], wrap: false)
        gtk_widget_set_hexpand(time, 1)
        gtk_label_set_xalign(cast(time), showApp ? 1 : 0)
        dismiss = button(nil, icon: "window-close-symbolic") {}
        addClass(dismiss, "flat")
        gtk_widget_set_tooltip_text(dismiss, "Dismiss")
        middle = box(vertical: false, spacing: 10)
        let texts = box(vertical: true, spacing: 2)
        gtk_widget_set_hexpand(texts, 1)
        summary = label("", classes: ["summary"])
        body = label("", classes: ["body"])
        for text in [summary, body] {
            // A least width: without one GTK finds it by laying the text
            // out with a line for each word, and Pango shapes the rest of
            // the text again at each line (490 shapings for a banner, 58
            // with it).
            gtk_label_set_width_chars(cast(text), Self.leastCharacters)
        }
        append(texts, summary)
        append(texts, body)
        append(middle, texts)
        if let appName { append(header, appName) }
        append(header, time)
        append(header, dismiss)
        append(content, header)
        append(content, middle)
        append(row, content)
        // The handlers ask the card which notification it shows now.
        connect(dismiss, "clicked") { [weak self] in
            if let id = self?.entry?.id { controls.dismiss(id) }
        }
        onActivateLink(body) { uri in controls.openLink(uri) }
        g_object_set_data_full(
            object(row), cardKey, Unmanaged.passRetained(self).toOpaque(),
            { data in if let data { Unmanaged<NotificationCard>.fromOpaque(data).release() } })
    }

    /// The card `row` was made with, if it is a notification's row.
    package static func of(_ row: Widget) -> NotificationCard? {
        g_object_get_data(object(row), cardKey).map { Unmanaged<NotificationCard>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Shows `entry`: the texts, and the parts it has, made or dropped as
    /// it has them.
    package func fill(_ entry: NotificationEntry, now: Date) {
        let old = self.entry
        self.entry = entry
        let id = entry.id
        g_object_set_data(object(row), notificationKey, UnsafeMutableRawPointer(bitPattern: Int(id)))
        if old?.id != id || old?.appTitle != entry.appTitle || old?.summary != entry.summary {
            setAccessibleLabel(row, "\(entry.appTitle): \(entry.summary)")
            setAccessibleLabel(dismiss, "Dismiss \(entry.summary)")
        }
        setClass(content, "critical", entry.urgency == .critical)
        setClass(content, "low", entry.urgency == .low)
        setClass(content, "closed", !entry.isOpen)

        if showApp, let appName {
            if icon?.source != entry.appIcon {
                if let icon { gtk_widget_destroy(icon.widget) }
                let made = appIcon(entry.appIcon)
                append(header, made)
                gtk_box_reorder_child(cast(header), made, 0)
                icon = (made, entry.appIcon)
            }
            setText(appName, entry.appTitle)
        }
        setText(time, entry.age(at: now) + (entry.isOpen ? "" : " · closed"))

        if image?.path != entry.imagePath {
            if let image { gtk_widget_destroy(image.widget) }
            image = nil
            if let path = entry.imagePath, let loaded = pixbuf(file: path.hasPrefix("file://") ? String(path.dropFirst(7)) : path) {
                let shownImage = picture(loaded, width: 64, height: 64)
                gtk_widget_set_valign(shownImage, GTK_ALIGN_START)
                append(middle, shownImage)
                gtk_box_reorder_child(cast(middle), shownImage, 0)
                image = (shownImage, path)
            }
        }
        setText(summary, entry.countedSummary)
        if old?.body != entry.body {
            gtk_label_set_markup(cast(body), entry.body)
        }
        gtk_widget_set_visible(body, entry.body.isEmpty ? 0 : 1)

        if let value = entry.value {
            let progress = self.progress ?? {
                let made = shown(gtk_progress_bar_new()!)
                gtk_progress_bar_set_show_text(cast(made), 1)
                append(content, made)
                gtk_box_reorder_child(cast(content), made, 2)
                return made
            }()
            self.progress = progress
            gtk_progress_bar_set_fraction(cast(progress), Double(min(max(value, 0), 100)) / 100)
            gtk_progress_bar_set_text(cast(progress), "\(value)%")
        } else if let progress {
            gtk_widget_destroy(progress)
            self.progress = nil
        }

        let wanted = entry.buttons
        if let buttons, !buttons.shown.elementsEqual(wanted, by: { $0 == $1 }) || old?.id != id {
            gtk_widget_destroy(buttons.bar)
            self.buttons = nil
        }
        if buttons == nil, !wanted.isEmpty {
            let bar = box(vertical: false, spacing: 6)
            for action in wanted {
                let key = action.key
                let press = button(action.label.isEmpty ? key : action.label) { [controls] in controls.invoke(id, key) }
                gtk_widget_set_hexpand(press, 1)
                append(bar, press)
            }
            append(content, bar)
            gtk_box_reorder_child(cast(content), bar, progress == nil ? 2 : 3)
            buttons = (bar, wanted)
        }

        // A reply being typed stays while the notification is only updated.
        if let reply, reply.placeholder != entry.replyLabel || old?.id != id {
            gtk_widget_destroy(reply.field)
            self.reply = nil
        }
        if reply == nil, let placeholder = entry.replyLabel {
            let field = box(vertical: false, spacing: 6)
            let entryField = shown(gtk_entry_new()!)
            gtk_entry_set_placeholder_text(cast(entryField), placeholder)
            gtk_widget_set_hexpand(entryField, 1)
            setAccessibleLabel(entryField, placeholder)
            let send = { [controls] in
                let text = gtk_entry_get_text(cast(entryField)).map { String(cString: $0) } ?? ""
                if !text.isEmpty { controls.reply(id, text) }
            }
            connect(entryField, "activate", send)
            append(field, entryField)
            append(field, button("Send", send))
            append(content, field)
            reply = (field, placeholder)
        }
    }

    /// Empties the card for later use: it answers to no notification.
    package func clear() {
        entry = nil
        g_object_set_data(object(row), notificationKey, nil)
    }
}

/// Sets a label's text, if it changed (a new text is laid out again).
private func setText(_ label: Widget, _ text: String) {
    let current = gtk_label_get_text(cast(label)).map { String(cString: $0) }
    if current != text { gtk_label_set_text(cast(label), text) }
}

/// An app's icon, 16 pixels: a file, else a name from the icon theme.
package func appIcon(_ icon: String) -> Widget {
    let path = icon.hasPrefix("file://") ? String(icon.dropFirst(7)) : icon
    if path.hasPrefix("/"), let loaded = pixbuf(file: path) { return picture(loaded, width: 16, height: 16) }
    let image = shown(gtk_image_new_from_icon_name(icon.isEmpty || path.hasPrefix("/") ? "dialog-information-symbolic" : icon, GTK_ICON_SIZE_MENU)!)
    gtk_image_set_pixel_size(cast(image), 16)
    return image
}

/// Connects a label's `activate-link` to `body`, which gets the link's
/// URI; GTK's own opening is never used.
package func onActivateLink(_ label: Widget, _ body: @escaping (String) -> Void) {
    final class Box {
        let body: (String) -> Void
        init(_ body: @escaping (String) -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> gboolean = { _, uri, data in
        guard let data, let uri else { return 1 }
        Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body(String(cString: uri))
        return 1
    }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(raw(label), "activate-link", unsafeBitCast(handler, to: GCallback.self), data, release, GConnectFlags(rawValue: 0))
}

/// The style of notifications, in the view and the banners.
package let notificationCSS = """
    .notification { padding: 10px 12px; border-radius: 10px; background: alpha(currentColor, 0.06); }
    .notification.critical { border-left: 4px solid #c01c28; }
    .notification.closed .summary { opacity: 0.75; }
    .notification .summary { font-weight: bold; }
    .notification .app-name, .notification .time { font-size: smaller; }
    """

/// An activation token for the app an action will bring forward (XDG
/// activation on Wayland, a startup notification id on X11), or nil.
package func activationToken() -> String? {
    guard let display = gdk_display_get_default(), let context = gdk_display_get_app_launch_context(display) else { return nil }
    defer { g_object_unref(UnsafeMutableRawPointer(context)) }
    let launch = UnsafeMutableRawPointer(context).assumingMemoryBound(to: GAppLaunchContext.self)
    // GLib before 2.82 wants the app being launched; which app answers is
    // todayd's to find, so a stand-in names the request.
    guard let standIn = g_app_info_create_from_commandline("true", "Today", G_APP_INFO_CREATE_NONE, nil) else { return nil }
    defer { g_object_unref(UnsafeMutableRawPointer(standIn)) }
    guard let id = g_app_launch_context_get_startup_notify_id(launch, standIn, nil) else { return nil }
    defer { g_free(id) }
    let token = String(cString: id)
    return token.isEmpty ? nil : token
}
