import CGtk
import FoundationEssentials
import Glibc
import Posix

// The GTK 3 calls the Today view and the banners make, in one place:
// pointer casts (GTK's type-cast macros do not import), signal trampolines
// (g_signal_connect is a macro; g_signal_connect_data with @convention(c)
// callbacks and the Swift closure as Unmanaged user data), widgets shown
// as they are made (as GTK 4 does), and main-loop scheduling.

package typealias Widget = UnsafeMutablePointer<GtkWidget>

/// A widget as the GTK type a call takes (GtkLabel, GtkBox…), as
/// GTK_LABEL() and the other casts do.
package func cast<T>(_ widget: Widget) -> UnsafeMutablePointer<T> { UnsafeMutableRawPointer(widget).assumingMemoryBound(to: T.self) }

/// A widget as the GObject that g_object calls take.
package func object(_ widget: Widget) -> UnsafeMutablePointer<GObject> { UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GObject.self) }

/// Any GTK object pointer as the raw instance GObject calls take.
package func raw(_ pointer: Widget) -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }

/// `widget`, shown: GTK 3 makes widgets hidden, and a container's
/// `show_all` would also show what is hidden on purpose.
@discardableResult
package func shown(_ widget: Widget) -> Widget {
    gtk_widget_show(widget)
    return widget
}

/// A Swift closure kept alive for as long as the signal's object lives.
private final class Closure {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

private let releaseClosure: GClosureNotify = { data, _ in
    if let data { Unmanaged<Closure>.fromOpaque(data).release() }
}

/// Connects `signal` of `object`, whose handler takes the instance and user
/// data (clicked, activate, toggled…), to `body`.
package func connect(_ object: Widget, _ signal: String, _ body: @escaping () -> Void) {
    connect(instance: raw(object), signal, body)
}

/// `connect` for any GObject (a frame clock, a display).
package func connect(instance: UnsafeMutableRawPointer, _ signal: String, _ body: @escaping () -> Void) {
    let data = Unmanaged.passRetained(Closure(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
        guard let data else { return }
        Unmanaged<Closure>.fromOpaque(data).takeUnretainedValue().body()
    }
    g_signal_connect_data(
        instance, signal, unsafeBitCast(handler, to: GCallback.self), data, releaseClosure,
        GConnectFlags(rawValue: 0))
}

/// Runs `body` once, after the next frame of `window` is painted (and
/// sent to the display server), or not at all if it is not realized.
package func afterNextFrame(of window: Widget, _ body: @escaping () -> Void) {
    guard let surface = gtk_widget_get_window(window), let clock = gdk_window_get_frame_clock(surface) else { return }
    var done = false
    connect(instance: UnsafeMutableRawPointer(clock), "after-paint") {
        guard !done else { return }
        done = true
        gdk_display_sync(gdk_window_get_display(surface))
        body()
    }
    gtk_widget_queue_draw(window)
}

/// Connects a signal whose handler takes the instance, one pointer and user
/// data (row-activated), to `body`, which gets that pointer.
package func connect(_ object: Widget, _ signal: String, withArgument body: @escaping (UnsafeMutableRawPointer?) -> Void) {
    final class Box {
        let body: (UnsafeMutableRawPointer?) -> Void
        init(_ body: @escaping (UnsafeMutableRawPointer?) -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, argument, data in
        guard let data else { return }
        Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body(argument)
    }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(
        raw(object), signal, unsafeBitCast(handler, to: GCallback.self), data, release,
        GConnectFlags(rawValue: 0))
}

/// Connects `key-press-event` of `window` to `body`, which gets the key
/// and the modifier state and says whether it handled the key.
package func onKeyPress(_ window: Widget, _ body: @escaping (_ key: UInt32, _ state: UInt32) -> Bool) {
    final class Box {
        let body: (UInt32, UInt32) -> Bool
        init(_ body: @escaping (UInt32, UInt32) -> Bool) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GdkEventKey>?, UnsafeMutableRawPointer?) -> gboolean = {
        _, event, data in
        guard let data, let event else { return 0 }
        return Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body(event.pointee.keyval, event.pointee.state) ? 1 : 0
    }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(raw(window), "key-press-event", unsafeBitCast(handler, to: GCallback.self), data, release, GConnectFlags(rawValue: 0))
}

/// A widget handed to a closure that another thread passes on to the main
/// loop: @unchecked because the pointer is only used there, by `onMainLoop`.
package struct MainLoopWidget: @unchecked Sendable {
    package let widget: Widget
    package init(widget: Widget) { self.widget = widget }
}

/// Runs `body` on GTK's main loop (from any thread).
package func onMainLoop(_ body: @escaping @Sendable () -> Void) {
    final class Job: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Job(body)).toOpaque()
    g_idle_add_full(
        G_PRIORITY_DEFAULT_IDLE,
        { data in
            guard let data else { return 0 }
            Unmanaged<Job>.fromOpaque(data).takeRetainedValue().body()
            return 0  // G_SOURCE_REMOVE
        }, data, nil)
}

/// Runs `body` whenever the main loop has nothing else to do (after
/// drawing), for as long as it returns true.
package func whenIdle(_ body: @escaping () -> Bool) {
    final class Repeat {
        let body: () -> Bool
        init(_ body: @escaping () -> Bool) { self.body = body }
    }
    let data = Unmanaged.passRetained(Repeat(body)).toOpaque()
    g_idle_add_full(
        G_PRIORITY_DEFAULT_IDLE,
        { data in
            guard let data else { return 0 }
            return Unmanaged<Repeat>.fromOpaque(data).takeUnretainedValue().body() ? 1 : 0
        }, data, { data in if let data { Unmanaged<Repeat>.fromOpaque(data).release() } })
}

/// Runs `body` every `seconds` on the main loop, for as long as it returns true.
package func every(seconds: UInt32, _ body: @escaping () -> Bool) {
    every(milliseconds: seconds * 1000, body)
}

/// Runs `body` every `milliseconds` on the main loop, for as long as it
/// returns true.
package func every(milliseconds: UInt32, _ body: @escaping () -> Bool) {
    final class Repeat {
        let body: () -> Bool
        init(_ body: @escaping () -> Bool) { self.body = body }
    }
    let data = Unmanaged.passRetained(Repeat(body)).toOpaque()
    g_timeout_add_full(
        G_PRIORITY_DEFAULT, milliseconds,
        { data in
            guard let data else { return 0 }
            return Unmanaged<Repeat>.fromOpaque(data).takeUnretainedValue().body() ? 1 : 0
        }, data, { data in if let data { Unmanaged<Repeat>.fromOpaque(data).release() } })
}

// MARK: Widgets, as Swift

package func addClass(_ widget: Widget, _ name: String) {
    gtk_style_context_add_class(gtk_widget_get_style_context(widget), name)
}

/// Gives `widget` the style class `name`, or takes it away.
package func setClass(_ widget: Widget, _ name: String, _ on: Bool) {
    guard let context = gtk_widget_get_style_context(widget) else { return }
    if on {
        gtk_style_context_add_class(context, name)
    } else {
        gtk_style_context_remove_class(context, name)
    }
}

package func label(_ text: String, classes: [String] = [], wrap: Bool = true) -> Widget {
    let label = shown(gtk_label_new(text)!)
    gtk_label_set_line_wrap(cast(label), wrap ? 1 : 0)
    gtk_label_set_xalign(cast(label), 0)
    if wrap { gtk_label_set_line_wrap_mode(cast(label), PANGO_WRAP_WORD_CHAR) }
    for name in classes { addClass(label, name) }
    return label
}

package func box(vertical: Bool, spacing: Int32 = 6) -> Widget {
    shown(gtk_box_new(vertical ? GTK_ORIENTATION_VERTICAL : GTK_ORIENTATION_HORIZONTAL, spacing)!)
}

/// Adds `child` to a box (after the others), a bin or a window.
package func append(_ parent: Widget, _ child: Widget) {
    gtk_container_add(cast(parent), child)
}

/// The children of a container, in order; none for another widget.
package func children(_ widget: Widget) -> [Widget] {
    guard g_type_check_instance_is_a(UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GTypeInstance.self), gtk_container_get_type()) != 0
    else { return [] }
    let list = gtk_container_get_children(cast(widget))
    defer { g_list_free(list) }
    var result: [Widget] = []
    var node = list
    while let current = node {
        if let data = current.pointee.data { result.append(data.assumingMemoryBound(to: GtkWidget.self)) }
        node = current.pointee.next
    }
    return result
}

package func button(_ title: String?, icon: String? = nil, _ action: @escaping () -> Void) -> Widget {
    let button: Widget
    if let icon, title == nil {
        button = shown(gtk_button_new_from_icon_name(icon, GTK_ICON_SIZE_BUTTON)!)
    } else {
        button = shown(gtk_button_new()!)
        setContent(of: button, title: title ?? "", icon: icon)
    }
    connect(button, "clicked", action)
    return button
}

/// A button's child: its title, after its icon when it has one.
package func setContent(of button: Widget, title: String, icon: String?) {
    guard let icon else { return gtk_button_set_label(cast(button), title) }
    let content = box(vertical: false, spacing: 6)
    let image = shown(gtk_image_new_from_icon_name(icon, GTK_ICON_SIZE_BUTTON)!)
    gtk_image_set_pixel_size(cast(image), 16)
    append(content, image)
    append(content, shown(gtk_label_new(title)!))
    append(button, content)
}

/// Sets what a screen reader says for `widget`.
package func setAccessibleLabel(_ widget: Widget, _ text: String) {
    guard let accessible = gtk_widget_get_accessible(widget) else { return }
    atk_object_set_name(accessible, text)
}

/// The name a screen reader says for `widget` (`setAccessibleLabel`), or
/// nil where it has none.
package func accessibleName(_ widget: Widget) -> String? {
    guard let accessible = gtk_widget_get_accessible(widget), let name = atk_object_get_name(accessible) else { return nil }
    let text = String(cString: name)
    return text.isEmpty ? nil : text
}

/// G_TYPE_BOOLEAN, a macro over a fundamental type number.
package func G_TYPE_BOOLEAN_TYPE() -> GType { GType(5 << 2) }

/// Asks GTK for its dark style (`true`) or its light one.
package func preferDarkStyle(_ dark: Bool) {
    guard let settings = gtk_settings_get_default() else { return }
    var value = GValue()
    g_value_init(&value, G_TYPE_BOOLEAN_TYPE())
    g_value_set_boolean(&value, dark ? 1 : 0)
    g_object_set_property(UnsafeMutableRawPointer(settings).assumingMemoryBound(to: GObject.self), "gtk-application-prefer-dark-theme", &value)
    g_value_unset(&value)
}

package func setMargins(_ widget: Widget, top: Int32, left: Int32, bottom: Int32, right: Int32) {
    gtk_widget_set_margin_top(widget, top)
    gtk_widget_set_margin_start(widget, left)
    gtk_widget_set_margin_bottom(widget, bottom)
    gtk_widget_set_margin_end(widget, right)
}

/// The picture in `bytes` (PNG or JPEG), or nil when GdkPixbuf cannot read them.
package func pixbuf(bytes: Data) -> OpaquePointer? {
    guard let loader = gdk_pixbuf_loader_new() else { return nil }
    defer { g_object_unref(UnsafeMutableRawPointer(loader)) }
    var error: UnsafeMutablePointer<GError>?
    let written = bytes.withUnsafeBytes { buffer in
        gdk_pixbuf_loader_write(loader, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), gsize(buffer.count), &error)
    }
    if let failed = error { g_error_free(failed) }
    error = nil
    let closed = gdk_pixbuf_loader_close(loader, &error)
    if let error { g_error_free(error) }
    guard written != 0, closed != 0, let pixbuf = gdk_pixbuf_loader_get_pixbuf(loader) else { return nil }
    g_object_ref(UnsafeMutableRawPointer(pixbuf))
    return pixbuf
}

/// The picture in the file at `path`, or nil.
package func pixbuf(file path: String) -> OpaquePointer? {
    var error: UnsafeMutablePointer<GError>?
    let pixbuf = gdk_pixbuf_new_from_file(path, &error)
    if let error { g_error_free(error) }
    return pixbuf
}

/// An image of `pixbuf` scaled, keeping its shape, to fill
/// `width`×`height` as far as it can; takes the pixbuf.
package func picture(_ pixbuf: OpaquePointer, width: Int32, height: Int32) -> Widget {
    defer { g_object_unref(UnsafeMutableRawPointer(pixbuf)) }
    let (w, h) = (gdk_pixbuf_get_width(pixbuf), gdk_pixbuf_get_height(pixbuf))
    let scale = min(Double(width) / Double(max(w, 1)), Double(height) / Double(max(h, 1)))
    guard scale != 1, let scaled = gdk_pixbuf_scale_simple(pixbuf, max(1, Int32(Double(w) * scale)), max(1, Int32(Double(h) * scale)), GDK_INTERP_BILINEAR)
    else { return shown(gtk_image_new_from_pixbuf(pixbuf)!) }
    defer { g_object_unref(UnsafeMutableRawPointer(scaled)) }
    return shown(gtk_image_new_from_pixbuf(scaled)!)
}

package func loadCSS(_ css: String) {
    let provider = gtk_css_provider_new()!
    var error: UnsafeMutablePointer<GError>?
    gtk_css_provider_load_from_data(provider, css, -1, &error)
    if let error {
        FileDescriptor.standardError.writeAll("\(programName): the style sheet: \(String(cString: error.pointee.message))\n")
        g_error_free(error)
    }
    if let screen = gdk_screen_get_default() {
        gtk_style_context_add_provider_for_screen(screen, OpaquePointer(provider), UInt32(GTK_STYLE_PROVIDER_PRIORITY_APPLICATION))
    }
}

package func typeName(_ widget: Widget) -> String {
    String(cString: g_type_name(G_TYPE_FROM_INSTANCE_TYPE(widget)))
}

/// The text of every visible label and button under `widget`, in tree
/// order: what the window shows, for tests and `--describe`.
package func visibleTexts(_ widget: Widget) -> [String] {
    guard gtk_widget_get_visible(widget) != 0 else { return [] }
    var texts: [String] = []
    if typeName(widget) == "GtkLabel", let text = gtk_label_get_text(cast(widget)) {
        texts.append(String(cString: text))
    }
    for child in children(widget) { texts += visibleTexts(child) }
    return texts
}

/// Where Tab takes the keyboard focus in `window`, from the start, as GTK
/// moves it: a line per stop naming what has the focus as a screen reader
/// says it (its accessible name; a button's is its text unless set), else
/// by its first text, until the focus comes round again. For tests and
/// `--describe`.
package func focusChain(_ window: Widget) -> [String] {
    var stops: [String] = []
    var seen: [UnsafeMutableRawPointer] = []
    // The window as the desktop makes it when it is chosen: active, with
    // the keyboard (where no window manager runs, as under Xvfb, nothing
    // else does, and a list row would not know it has the focus).
    if let event = gdk_event_new(GDK_FOCUS_CHANGE), let surface = gtk_widget_get_window(window) {
        event.pointee.focus_change.window = OpaquePointer(g_object_ref(UnsafeMutableRawPointer(surface)))
        event.pointee.focus_change.in = 1
        gtk_widget_send_focus_change(window, event)
        gdk_event_free(event)
    }
    gtk_window_set_focus(cast(window), nil)
    for _ in 0..<200 {
        guard gtk_widget_child_focus(window, GTK_DIR_TAB_FORWARD) != 0, let focused = gtk_window_get_focus(cast(window)) else { break }
        if seen.contains(raw(focused)) { break }
        seen.append(raw(focused))
        stops.append("\(typeName(focused)): \(accessibleName(focused) ?? visibleTexts(focused).first ?? "")")
    }
    return stops
}

/// G_TYPE_FROM_INSTANCE, a macro: the class's type of an instance.
package func G_TYPE_FROM_INSTANCE_TYPE(_ widget: Widget) -> GType {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GTypeInstance.self).pointee.g_class.pointee.g_type
}

/// Draws `widget` once, as GTK draws it on screen, into a PNG at `path`
/// (written beside it and renamed over it: a reader sees a whole picture).
package func savePNG(of widget: Widget, to path: String) -> Bool {
    layOutNow(widget)
    let width = gtk_widget_get_allocated_width(widget), height = gtk_widget_get_allocated_height(widget)
    guard width > 1, height > 1, let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height) else { return false }
    defer { cairo_surface_destroy(surface) }
    guard let context = cairo_create(surface) else { return false }
    gtk_widget_draw(widget, context)
    cairo_destroy(context)
    let part = path + ".part"
    guard cairo_surface_write_to_png(surface, part) == CAIRO_STATUS_SUCCESS else { return false }
    do {
        try Files.rename(part, to: path)
        return true
    } catch {
        return false
    }
}

/// Lays `widget` out again at the size it has, as the next frame would:
/// a change since the last frame (a card updated, a row added) leaves it
/// waiting for that, and GTK draws nothing of a widget in that state.
private func layOutNow(_ widget: Widget) {
    var allocation = GtkAllocation()
    gtk_widget_get_allocation(widget, &allocation)
    // Asked first: GTK lays out no widget whose size it has not asked.
    var minimum: Int32 = 0
    var natural: Int32 = 0
    gtk_widget_get_preferred_width(widget, &minimum, &natural)
    allocation.width = max(allocation.width, minimum)
    gtk_widget_get_preferred_height_for_width(widget, allocation.width, &minimum, &natural)
    allocation.height = max(allocation.height, minimum)
    gtk_widget_size_allocate(widget, &allocation)
}

/// The size a card icon's file had, kept on the image for `cardIcons`.
private let iconSizeKey = "today-icon-size"

/// A card's icon, 24 pixels: the image file at `file`, else the theme's
/// icon `named`. Named `card-icon`, for `cardIcons`.
package func cardIcon(file: String?, named: String) -> Widget {
    let image: Widget
    if let file, let loaded = pixbuf(file: file) {
        let size = (Int(gdk_pixbuf_get_width(loaded)) << 16) | Int(gdk_pixbuf_get_height(loaded))
        image = picture(loaded, width: 24, height: 24)
        g_object_set_data(object(image), iconSizeKey, UnsafeMutableRawPointer(bitPattern: size))
    } else {
        image = shown(gtk_image_new_from_icon_name(file == nil ? named : "image-missing", GTK_ICON_SIZE_LARGE_TOOLBAR)!)
        gtk_image_set_pixel_size(cast(image), 24)
    }
    gtk_widget_set_name(image, "card-icon")
    return image
}

/// Each visible card icon under `widget` as GTK holds it, a line each,
/// for tests and `--describe`: `icon NAME: file W×H` for an image file
/// that loaded (the file's size), `icon NAME: named ICON (in the
/// theme|not in the theme)`, or `icon NAME: missing` where GTK could not
/// load the file. NAME is the label beside it, the card's name.
package func cardIcons(_ widget: Widget) -> [String] {
    guard gtk_widget_get_visible(widget) != 0 else { return [] }
    var lines: [String] = []
    let inside = children(widget)
    for (index, child) in inside.enumerated() where String(cString: gtk_widget_get_name(child)) == "card-icon" && gtk_widget_get_visible(child) != 0 {
        let name = inside.dropFirst(index + 1).first.flatMap { gtk_label_get_text(cast($0)) }.map { String(cString: $0) } ?? ""
        let image: UnsafeMutablePointer<GtkImage> = cast(child)
        switch gtk_image_get_storage_type(image) {
        case GTK_IMAGE_PIXBUF:
            let size = Int(bitPattern: g_object_get_data(object(child), iconSizeKey))
            lines.append("icon \(name): file \(size >> 16)×\(size & 0xffff)")
        case GTK_IMAGE_ICON_NAME:
            var icon: UnsafePointer<gchar>?
            gtk_image_get_icon_name(image, &icon, nil)
            let iconName = icon.map { String(cString: $0) } ?? ""
            let found = iconName != "image-missing" && gtk_icon_theme_has_icon(gtk_icon_theme_get_default(), iconName) != 0
            lines.append(
                iconName == "image-missing" ? "icon \(name): missing" : "icon \(name): named \(iconName) (\(found ? "in the theme" : "not in the theme"))")
        default:
            lines.append("icon \(name): missing")
        }
    }
    for child in inside { lines += cardIcons(child) }
    return lines
}

/// The height of the default screen's first monitor, in pixels (a
/// window can be no higher).
package func screenHeight() -> Int32 {
    guard let display = gdk_display_get_default(), let monitor = gdk_display_get_monitor(display, 0) else { return 16_000 }
    var area = GdkRectangle()
    gdk_monitor_get_geometry(monitor, &area)
    return area.height
}

/// The height `widget` would like at `width`.
package func naturalHeight(_ widget: Widget, width: Int32) -> Int32 {
    var minimum: Int32 = 0
    var natural: Int32 = 0
    gtk_widget_get_preferred_height_for_width(widget, width, &minimum, &natural)
    return natural
}

/// For each row of `list`, whether all of it lies inside `window`: a line
/// `card N of M: in the picture` or `card N of M: cut off`, for tests and
/// `--describe`.
package func rowsInside(_ list: Widget, window: Widget) -> [String] {
    let rows = children(list)
    let height = gtk_widget_get_allocated_height(window)
    return rows.enumerated().map { index, row in
        var x: Int32 = 0
        var y: Int32 = 0
        let placed = gtk_widget_translate_coordinates(row, window, 0, 0, &x, &y) != 0
        let inside = placed && y >= 0 && y + gtk_widget_get_allocated_height(row) <= height
        return "card \(index + 1) of \(rows.count): \(inside ? "in the picture" : "cut off")"
    }
}

/// Runs `body` when `widget` (an event box) is clicked with the first
/// button, and stops the click there.
package func onClick(_ widget: Widget, _ body: @escaping () -> Void) {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GdkEventButton>?, UnsafeMutableRawPointer?) -> gboolean = {
        _, event, data in
        guard let data, let event, event.pointee.button == 1 else { return 0 }
        Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body()
        return 1
    }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(raw(widget), "button-release-event", unsafeBitCast(handler, to: GCallback.self), data, release, GConnectFlags(rawValue: 0))
}

/// The program's name as its messages begin: `today-view`, `today-banners`.
package let programName = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "") } ?? "today"
