import CGtk
import FoundationEssentials
import TodayCore
import TodayProtocol

/// What a notification's controls do; the view and the banners each pass
/// their calls to todayd.
struct NotificationControls {
    /// An action chosen: its key (`default`: the notification itself).
    var invoke: (UInt32, String) -> Void
    var reply: (UInt32, String) -> Void
    var dismiss: (UInt32) -> Void
    /// A link in the body: opened through OpenURL.
    var openLink: (String) -> Void
}

/// The key under which a row keeps its notification's id.
private let notificationKey = "today-notification-id"

/// The id of the notification a row shows (0: none).
func notificationID(of row: Widget) -> UInt32 {
    UInt32(truncatingIfNeeded: Int(bitPattern: g_object_get_data(object(row), notificationKey)))
}

/// A notification as the list and the banners show it (SPEC section 15),
/// as a row of a GtkListBox, whose activation is a click on the
/// notification (`default`): the app's icon and name, the time, a dismiss
/// button; the summary, the body (its markup), the picture, the progress,
/// a button for each action and a reply field where it takes one.
@MainActor
///
/// `showApp`: the app's icon and name in the header (a banner); in the
/// list, the group's header says them.
func notificationRow(_ entry: NotificationEntry, now: Date, controls: NotificationControls, showApp: Bool = true) -> Widget {
    let row = shown(gtk_list_box_row_new()!)
    gtk_list_box_row_set_activatable(cast(row), 1)
    g_object_set_data(object(row), notificationKey, UnsafeMutableRawPointer(bitPattern: Int(entry.id)))
    setAccessibleLabel(row, "\(entry.appTitle): \(entry.summary)")
    let id = entry.id

    let content = box(vertical: true, spacing: 4)
    addClass(content, "notification")
    if entry.urgency == .critical { addClass(content, "critical") }
    if !entry.isOpen { addClass(content, "closed") }

    let header = box(vertical: false, spacing: 6)
    if showApp {
        append(header, appIcon(entry.appIcon))
        append(header, label(entry.appTitle, classes: ["dim", "app-name"], wrap: false))
    }
    let time = label(entry.age(at: now) + (entry.isOpen ? "" : " · closed"), classes: ["dim", "time"], wrap: false)
    gtk_widget_set_hexpand(time, 1)
    gtk_label_set_xalign(cast(time), showApp ? 1 : 0)
    append(header, time)
    let dismiss = button(nil, icon: "window-close-symbolic") { controls.dismiss(id) }
    addClass(dismiss, "flat")
    gtk_widget_set_tooltip_text(dismiss, "Dismiss")
    setAccessibleLabel(dismiss, "Dismiss \(entry.summary)")
    append(header, dismiss)
    append(content, header)

    let middle = box(vertical: false, spacing: 10)
    if let path = entry.imagePath, let loaded = pixbuf(file: path.hasPrefix("file://") ? String(path.dropFirst(7)) : path) {
        let image = picture(loaded, width: 64, height: 64)
        gtk_widget_set_valign(image, GTK_ALIGN_START)
        append(middle, image)
    }
    let texts = box(vertical: true, spacing: 2)
    gtk_widget_set_hexpand(texts, 1)
    append(texts, label(entry.summary, classes: ["summary"]))
    if !entry.body.isEmpty {
        let body = label("", classes: ["body"])
        gtk_label_set_markup(cast(body), entry.body)
        onActivateLink(body) { uri in controls.openLink(uri) }
        append(texts, body)
    }
    append(middle, texts)
    append(content, middle)

    if let value = entry.value {
        let progress = shown(gtk_progress_bar_new()!)
        gtk_progress_bar_set_fraction(cast(progress), Double(min(max(value, 0), 100)) / 100)
        gtk_progress_bar_set_text(cast(progress), "\(value)%")
        gtk_progress_bar_set_show_text(cast(progress), 1)
        append(content, progress)
    }
    let buttons = entry.buttons
    if !buttons.isEmpty {
        let bar = box(vertical: false, spacing: 6)
        for action in buttons {
            let key = action.key
            let press = button(action.label.isEmpty ? key : action.label) { controls.invoke(id, key) }
            gtk_widget_set_hexpand(press, 1)
            append(bar, press)
        }
        append(content, bar)
    }
    if let placeholder = entry.replyLabel {
        let field = box(vertical: false, spacing: 6)
        let entryField = shown(gtk_entry_new()!)
        gtk_entry_set_placeholder_text(cast(entryField), placeholder)
        gtk_widget_set_hexpand(entryField, 1)
        setAccessibleLabel(entryField, placeholder)
        let send = {
            let text = gtk_entry_get_text(cast(entryField)).map { String(cString: $0) } ?? ""
            if !text.isEmpty { controls.reply(id, text) }
        }
        connect(entryField, "activate", send)
        append(field, entryField)
        append(field, button("Send", send))
        append(content, field)
    }
    append(row, content)
    return row
}

/// An app's icon, 16 pixels: a file, else a name from the icon theme.
func appIcon(_ icon: String) -> Widget {
    let path = icon.hasPrefix("file://") ? String(icon.dropFirst(7)) : icon
    if path.hasPrefix("/"), let loaded = pixbuf(file: path) { return picture(loaded, width: 16, height: 16) }
    let image = shown(gtk_image_new_from_icon_name(icon.isEmpty || path.hasPrefix("/") ? "dialog-information-symbolic" : icon, GTK_ICON_SIZE_MENU)!)
    gtk_image_set_pixel_size(cast(image), 16)
    return image
}

/// Connects a label's `activate-link` to `body`, which gets the link's
/// URI; GTK's own opening is never used.
func onActivateLink(_ label: Widget, _ body: @escaping (String) -> Void) {
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
let notificationCSS = """
    .notification { padding: 10px 12px; border-radius: 10px; background: alpha(currentColor, 0.06); }
    .notification.critical { border-left: 4px solid #c01c28; }
    .notification.closed .summary { opacity: 0.75; }
    .notification .summary { font-weight: bold; }
    .notification .app-name, .notification .time { font-size: smaller; }
    """

/// An activation token for the app an action will bring forward (XDG
/// activation on Wayland, a startup notification id on X11), or nil.
func activationToken() -> String? {
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
