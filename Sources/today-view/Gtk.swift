import CGtk
import FoundationEssentials

// The GTK calls the Today view makes, in one place: pointer casts (GTK's
// type-cast macros do not import), signal trampolines (g_signal_connect is
// a macro; g_signal_connect_data with @convention(c) callbacks and the
// Swift closure as Unmanaged user data), and main-loop scheduling.

typealias Widget = UnsafeMutablePointer<GtkWidget>

/// A widget as the GTK type a call takes (GtkLabel, GtkBox… import as
/// opaque pointers), as GTK_LABEL() and the other casts do.
func cast(_ widget: Widget) -> OpaquePointer { OpaquePointer(widget) }

/// A widget as a GTK type whose instance struct is public (GtkBox, GtkButton…).
func cast<T>(_ widget: Widget) -> UnsafeMutablePointer<T> { UnsafeMutableRawPointer(widget).assumingMemoryBound(to: T.self) }

/// Any GTK object pointer as the raw instance GObject calls take.
func raw(_ pointer: Widget) -> UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }

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
func connect(_ object: Widget, _ signal: String, _ body: @escaping () -> Void) {
    let data = Unmanaged.passRetained(Closure(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
        guard let data else { return }
        Unmanaged<Closure>.fromOpaque(data).takeUnretainedValue().body()
    }
    g_signal_connect_data(
        raw(object), signal, unsafeBitCast(handler, to: GCallback.self), data, releaseClosure,
        GConnectFlags(rawValue: 0))
}

/// Connects a signal whose handler takes the instance, one pointer and user
/// data (row-activated), to `body`, which gets that pointer.
func connect(_ object: Widget, _ signal: String, withArgument body: @escaping (UnsafeMutableRawPointer?) -> Void) {
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

/// A widget handed to a closure that another thread passes on to the main
/// loop: @unchecked because the pointer is only used there, by `onMainLoop`.
struct MainLoopWidget: @unchecked Sendable {
    let widget: Widget
}

/// Runs `body` on GTK's main loop (from any thread).
func onMainLoop(_ body: @escaping @Sendable () -> Void) {
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

/// Runs `body` every `seconds` on the main loop, for as long as it returns true.
func every(seconds: UInt32, _ body: @escaping () -> Bool) {
    final class Repeat {
        let body: () -> Bool
        init(_ body: @escaping () -> Bool) { self.body = body }
    }
    let data = Unmanaged.passRetained(Repeat(body)).toOpaque()
    g_timeout_add_seconds_full(
        G_PRIORITY_DEFAULT, seconds,
        { data in
            guard let data else { return 0 }
            return Unmanaged<Repeat>.fromOpaque(data).takeUnretainedValue().body() ? 1 : 0
        }, data, { data in if let data { Unmanaged<Repeat>.fromOpaque(data).release() } })
}

// MARK: Widgets, as Swift

func label(_ text: String, classes: [String] = [], wrap: Bool = true) -> Widget {
    let label = gtk_label_new(text)!
    let typed = cast(label)
    gtk_label_set_wrap(typed, wrap ? 1 : 0)
    gtk_label_set_xalign(typed, 0)
    if wrap { gtk_label_set_wrap_mode(typed, PANGO_WRAP_WORD_CHAR) }
    for name in classes { gtk_widget_add_css_class(label, name) }
    return label
}

func box(vertical: Bool, spacing: Int32 = 6) -> Widget {
    gtk_box_new(vertical ? GTK_ORIENTATION_VERTICAL : GTK_ORIENTATION_HORIZONTAL, spacing)!
}

func append(_ parent: Widget, _ child: Widget) {
    gtk_box_append(cast(parent), child)
}

func button(_ title: String?, icon: String? = nil, _ action: @escaping () -> Void) -> Widget {
    let button: Widget
    if let icon, title == nil {
        button = gtk_button_new_from_icon_name(icon)!
    } else {
        button = gtk_button_new()!
        setContent(of: button, title: title ?? "", icon: icon)
    }
    connect(button, "clicked", action)
    return button
}

/// A button's child: its title, after its icon when it has one (GTK's own
/// icon name call would replace the title).
func setContent(of button: Widget, title: String, icon: String?) {
    guard let icon else { return gtk_button_set_label(cast(button), title) }
    let content = box(vertical: false, spacing: 6)
    append(content, gtk_image_new_from_icon_name(icon)!)
    append(content, gtk_label_new(title)!)
    gtk_button_set_child(cast(button), content)
}

/// Sets what a screen reader says for `widget`.
func setAccessibleLabel(_ widget: Widget, _ text: String) {
    var value = GValue()
    g_value_init(&value, G_TYPE_STRING_TYPE())
    g_value_set_string(&value, text)
    var property = GTK_ACCESSIBLE_PROPERTY_LABEL
    gtk_accessible_update_property_value(cast(widget), 1, &property, &value)
    g_value_unset(&value)
}

/// G_TYPE_STRING, a macro over a fundamental type number.
func G_TYPE_STRING_TYPE() -> GType { GType(16 << 2) }

/// G_TYPE_BOOLEAN, likewise.
func G_TYPE_BOOLEAN_TYPE() -> GType { GType(5 << 2) }

/// Asks GTK for its dark style (`true`) or its light one.
func preferDarkStyle(_ dark: Bool) {
    guard let settings = gtk_settings_get_default() else { return }
    var value = GValue()
    g_value_init(&value, G_TYPE_BOOLEAN_TYPE())
    g_value_set_boolean(&value, dark ? 1 : 0)
    g_object_set_property(UnsafeMutableRawPointer(settings).assumingMemoryBound(to: GObject.self), "gtk-application-prefer-dark-theme", &value)
    g_value_unset(&value)
}

func setMargins(_ widget: Widget, top: Int32, left: Int32, bottom: Int32, right: Int32) {
    gtk_widget_set_margin_top(widget, top)
    gtk_widget_set_margin_start(widget, left)
    gtk_widget_set_margin_bottom(widget, bottom)
    gtk_widget_set_margin_end(widget, right)
}

/// A picture of `bytes` (PNG or JPEG), or nil when GTK cannot read them.
func picture(bytes: Data) -> Widget? {
    let gbytes = bytes.withUnsafeBytes { g_bytes_new($0.baseAddress, gsize($0.count)) }
    defer { g_bytes_unref(gbytes) }
    var error: UnsafeMutablePointer<GError>?
    guard let texture = gdk_texture_new_from_bytes(gbytes, &error) else {
        if let error { g_error_free(error) }
        return nil
    }
    defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
    return gtk_picture_new_for_paintable(texture)
}

func loadCSS(_ css: String) {
    let provider = gtk_css_provider_new()!
    gtk_css_provider_load_from_data(provider, css, -1)
    if let display = gdk_display_get_default() {
        gtk_style_context_add_provider_for_display(display, OpaquePointer(provider), UInt32(GTK_STYLE_PROVIDER_PRIORITY_APPLICATION))
    }
}

/// The text of every visible label and button under `widget`, in tree
/// order: what the window shows, for tests and `--describe`.
func visibleTexts(_ widget: Widget) -> [String] {
    guard gtk_widget_get_visible(widget) != 0 else { return [] }
    var texts: [String] = []
    let type = String(cString: g_type_name(G_TYPE_FROM_INSTANCE_TYPE(widget)))
    if type == "GtkLabel", let text = gtk_label_get_text(cast(widget)) {
        texts.append(String(cString: text))
    }
    var child = gtk_widget_get_first_child(widget)
    while let current = child {
        texts += visibleTexts(current)
        child = gtk_widget_get_next_sibling(current)
    }
    return texts
}

/// Where Tab takes the keyboard focus in `window`, from the start, as GTK
/// moves it: a line per stop naming what has the focus (a card row by its
/// accessible label, a button by its text), until the focus comes round
/// again. For tests and `--describe`.
func focusChain(_ window: Widget) -> [String] {
    var stops: [String] = []
    var seen: [UnsafeMutableRawPointer] = []
    gtk_window_set_focus(cast(window), nil)
    for _ in 0..<200 {
        guard gtk_widget_child_focus(window, GTK_DIR_TAB_FORWARD) != 0, let focused = gtk_window_get_focus(cast(window)) else { break }
        if seen.contains(raw(focused)) { break }
        seen.append(raw(focused))
        let type = String(cString: g_type_name(G_TYPE_FROM_INSTANCE_TYPE(focused)))
        let texts = visibleTexts(focused)
        stops.append("\(type): \(texts.first ?? "")")
    }
    return stops
}

/// G_TYPE_FROM_INSTANCE, a macro: the class's type of an instance.
func G_TYPE_FROM_INSTANCE_TYPE(_ widget: Widget) -> GType {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GTypeInstance.self).pointee.g_class.pointee.g_type
}

/// Renders `widget` once through GTK's own snapshot, into a PNG at `path`.
func savePNG(of widget: Widget, to path: String) -> Bool {
    let width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget)
    guard width > 0, height > 0, let paintable = gtk_widget_paintable_new(widget) else { return false }
    defer { g_object_unref(UnsafeMutableRawPointer(paintable)) }
    let snapshot = gtk_snapshot_new()
    gdk_paintable_snapshot(paintable, snapshot, Double(width), Double(height))
    guard let node = gtk_snapshot_free_to_node(snapshot) else { return false }
    defer { gsk_render_node_unref(node) }
    guard let native = gtk_widget_get_native(widget), let renderer = gtk_native_get_renderer(native) else { return false }
    var bounds = graphene_rect_t()
    graphene_rect_init(&bounds, 0, 0, Float(width), Float(height))
    guard let texture = gsk_renderer_render_texture(renderer, node, &bounds) else { return false }
    defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
    return gdk_texture_save_to_png(texture, path) != 0
}

/// A card's icon, 24 pixels: the image file at `file`, else the theme's
/// icon `named`. Named `card-icon`, for `cardIcons`.
func cardIcon(file: String?, named: String) -> Widget {
    let image = file.map { gtk_image_new_from_file($0)! } ?? gtk_image_new_from_icon_name(named)!
    gtk_image_set_pixel_size(cast(image), 24)
    gtk_widget_set_name(image, "card-icon")
    return image
}

/// Each visible card icon under `widget` as GTK holds it, a line each,
/// for tests and `--describe`: `icon NAME: file W×H` for an image file
/// that loaded (its picture's size), `icon NAME: named ICON (in the
/// theme|not in the theme)`, or `icon NAME: missing` where GTK could not
/// load the file. NAME is the label beside it, the card's name.
func cardIcons(_ widget: Widget) -> [String] {
    guard gtk_widget_get_visible(widget) != 0 else { return [] }
    var lines: [String] = []
    if String(cString: gtk_widget_get_name(widget)) == "card-icon" {
        let name = gtk_widget_get_next_sibling(widget).flatMap { gtk_label_get_text(cast($0)) }.map { String(cString: $0) } ?? ""
        let image: OpaquePointer = cast(widget)
        switch gtk_image_get_storage_type(image) {
        case GTK_IMAGE_PAINTABLE:
            let picture = gtk_image_get_paintable(image)
            lines.append("icon \(name): file \(gdk_paintable_get_intrinsic_width(picture))×\(gdk_paintable_get_intrinsic_height(picture))")
        case GTK_IMAGE_ICON_NAME:
            let icon = gtk_image_get_icon_name(image).map { String(cString: $0) } ?? ""
            let theme = gtk_icon_theme_get_for_display(gtk_widget_get_display(widget))
            let found = icon != "image-missing" && gtk_icon_theme_has_icon(theme, icon) != 0
            lines.append(icon == "image-missing" ? "icon \(name): missing" : "icon \(name): named \(icon) (\(found ? "in the theme" : "not in the theme"))")
        default:
            lines.append("icon \(name): missing")
        }
    }
    var child = gtk_widget_get_first_child(widget)
    while let current = child {
        lines += cardIcons(current)
        child = gtk_widget_get_next_sibling(current)
    }
    return lines
}

/// The height `widget` would like at `width`.
func naturalHeight(_ widget: Widget, width: Int32) -> Int32 {
    var minimum: Int32 = 0
    var natural: Int32 = 0
    gtk_widget_measure(widget, GTK_ORIENTATION_VERTICAL, width, &minimum, &natural, nil, nil)
    return natural
}

/// For each row of `list`, whether all of it lies inside `window`: a line
/// `card N of M: in the picture` or `card N of M: cut off`, for tests and
/// `--describe`.
func rowsInside(_ list: Widget, window: Widget) -> [String] {
    var rows: [Widget] = []
    var child = gtk_widget_get_first_child(list)
    while let current = child {
        rows.append(current)
        child = gtk_widget_get_next_sibling(current)
    }
    let height = Float(gtk_widget_get_height(window))
    return rows.enumerated().map { index, row in
        var bounds = graphene_rect_t()
        let placed = gtk_widget_compute_bounds(row, window, &bounds) != 0
        let inside = placed && bounds.origin.y >= 0 && bounds.origin.y + bounds.size.height <= height + 0.5
        return "card \(index + 1) of \(rows.count): \(inside ? "in the picture" : "cut off")"
    }
}
