import CGtk
import DBus
import FoundationEssentials
import PropertyList
import TodayCore
import TodayGtk
import TodayProtocol

/// The Today view's Edit (SPEC section 16): a gallery of every widget kind,
/// each with its preview and an Add button; on each card, buttons to move
/// it up and down (Alt+Up and Alt+Down do the same for the card that has
/// the focus), its size, its settings (a form made from the kind's
/// parameters, a dynamic choice's values asked of the widget), and Remove.
/// Every change is a call to todayd; the view redraws from its signals.
extension TodayView {
    /// "Widgets", and the Edit button that switches Edit on and off.
    func widgetsHeader() -> Widget {
        let header = box(vertical: false, spacing: 6)
        setMargins(header, top: 8, left: 12, bottom: 0, right: 12)
        let title = label("Widgets", classes: ["group-title"], wrap: false)
        gtk_widget_set_hexpand(title, 1)
        append(header, title)
        let edit = button(editing ? "Done" : "Edit") { [self] in setEditing(!editing) }
        editButton = edit
        setAccessibleLabel(edit, "Edit the widgets")
        append(header, edit)
        return header
    }

    func setEditing(_ on: Bool) {
        editing = on
        if let editButton { gtk_button_set_label(cast(editButton), on ? "Done" : "Edit") }
        // Every card is made again, with or without its controls.
        rows = [:]
        cards = []
        if on { showGallery() } else if let gallery { gtk_widget_set_visible(gallery, 0) }
        refresh()
    }

    // MARK: The gallery

    /// Fills the gallery: every installed kind, its preview (GetPreview),
    /// an Add button.
    func showGallery() {
        guard let gallery else { return }
        for child in children(gallery) { gtk_widget_destroy(child) }
        gtk_widget_set_visible(gallery, 1)
        setMargins(gallery, top: 6, left: 12, bottom: 6, right: 12)
        append(gallery, label("Add a widget", classes: ["dim"], wrap: false))
        let tiles = shown(gtk_flow_box_new()!)
        gtk_flow_box_set_min_children_per_line(cast(tiles), 2)
        gtk_flow_box_set_max_children_per_line(cast(tiles), 2)
        gtk_flow_box_set_selection_mode(cast(tiles), GTK_SELECTION_NONE)
        gtk_flow_box_set_homogeneous(cast(tiles), 1)
        append(gallery, tiles)
        let connection = connection
        let target = MainLoopWidget(widget: tiles)
        Task.detached { [self] in
            let kinds = await Self.galleryKinds(connection)
            onMainLoop { [self] in
                MainActor.assumeIsolated {
                    for kind in kinds { gtk_container_add(cast(target.widget), galleryTile(kind)) }
                    if kinds.isEmpty { gtk_container_add(cast(target.widget), label("No widget is installed.", classes: ["dim"])) }
                }
            }
        }
    }

    struct GalleryKind: Sendable {
        var kind: String
        var path: ObjectPath
        var name: String
        var preview: Snapshot?
    }

    /// Every kind todayd lists, with its name and preview (none where its
    /// provider gave none in time).
    nonisolated static func galleryKinds(_ connection: Connection) async -> [GalleryKind] {
        guard
            let paths = try? await connection.call(
                Today.busName, path: Today.managerPath, interface: Today.center.name, Today.Center.listWidgets
            ).value(ObjectPathList.self, answering: "ListWidgets").paths
        else { return [] }
        var kinds: [GalleryKind] = []
        for path in paths {
            let values =
                (try? await connection.call(Today.busName, path: path, interface: .properties, member: .getAll, [.string(Today.widget.name.rawValue)])
                    .value(VariantDictionary.self, answering: "GetAll").dictionary) ?? [:]
            let preview = try? await connection.call(
                Today.busName, path: path, interface: Today.widget.name, Today.Widget.getPreview, VariantDictionary([]), "", timeout: .seconds(5)
            ).value(VariantDictionary.self, answering: "GetPreview")
            let snapshot = preview.flatMap { try? ValueMapping.plist($0.value).dictionary }.map(Snapshot.init)
            let kind = values[Today.Widget.bundleIdentifier.name]?.string ?? path.rawValue
            kinds.append(GalleryKind(kind: kind, path: path, name: values[Today.Widget.displayName.name]?.string ?? kind, preview: snapshot))
        }
        return kinds
    }

    private func galleryTile(_ kind: GalleryKind) -> Widget {
        let tile = box(vertical: true, spacing: 4)
        addClass(tile, "card")
        append(tile, label(kind.name, classes: ["card-name"], wrap: false))
        if let preview = kind.preview {
            if let title = preview.title { append(tile, label(title, classes: ["card-title"])) }
            if let subtitle = preview.subtitle { append(tile, label(subtitle, classes: ["dim"])) }
        } else {
            append(tile, label("No preview", classes: ["dim"]))
        }
        let add = button("Add") { [self] in
            guard let id = BundleID(rawValue: kind.kind) else { return }
            call(Today.managerPath, Today.center.name, Today.Center.addWidget, id, VariantDictionary([]), "", Int32(-1))
        }
        setAccessibleLabel(add, "Add \(kind.name)")
        append(tile, add)
        return tile
    }

    // MARK: A card's controls

    /// The card's controls in Edit: on one line, or on two for a small
    /// card (half a row), its buttons as icons.
    func editBar(for card: TodayCard) -> Widget {
        let compact = card.family == .small
        let bar = box(vertical: false, spacing: 4)
        let up = button(nil, icon: "go-up-symbolic") { [self] in move(card.id, by: -1) }
        setAccessibleLabel(up, "Move \(card.name) up")
        gtk_widget_set_tooltip_text(up, "Move up (Alt+Up)")
        append(bar, up)
        let down = button(nil, icon: "go-down-symbolic") { [self] in move(card.id, by: 1) }
        setAccessibleLabel(down, "Move \(card.name) down")
        gtk_widget_set_tooltip_text(down, "Move down (Alt+Down)")
        append(bar, down)
        if card.families.count > 1 {
            let sizes = shown(gtk_combo_box_text_new()!)
            for family in card.families { gtk_combo_box_text_append(cast(sizes), family.rawValue, Self.title(of: family)) }
            gtk_combo_box_set_active_id(cast(sizes), card.family.rawValue)
            setAccessibleLabel(sizes, "Size of \(card.name)")
            connect(sizes, "changed") { [self] in
                guard let chosen = gtk_combo_box_get_active_id(cast(sizes)).map({ String(cString: $0) }),
                    let family = WidgetFamily(rawValue: chosen), family != card.family
                else { return }
                apply(card, configuration: card.configuration, family: family)
            }
            append(bar, sizes)
        }
        let second = compact ? box(vertical: false, spacing: 4) : bar
        if !card.parameters.isEmpty {
            let settings = button(compact ? nil : "Settings…", icon: compact ? "emblem-system-symbolic" : nil) { [self] in openSettings(for: card) }
            setAccessibleLabel(settings, "Settings of \(card.name)")
            gtk_widget_set_tooltip_text(settings, "Settings")
            append(second, settings)
        }
        let spacer = box(vertical: false)
        gtk_widget_set_hexpand(spacer, 1)
        append(second, spacer)
        let remove = button(compact ? nil : "Remove", icon: "list-remove-symbolic") { [self] in
            call(Today.managerPath, Today.center.name, Today.Center.removeWidget, card.path)
        }
        setAccessibleLabel(remove, "Remove \(card.name)")
        gtk_widget_set_tooltip_text(remove, "Remove")
        append(second, remove)
        guard compact else { return bar }
        let lines = box(vertical: true, spacing: 4)
        append(lines, bar)
        append(lines, second)
        return lines
    }

    static func title(of family: WidgetFamily) -> String {
        switch family {
        case .small: "Small"
        case .medium: "Medium"
        case .large: "Large"
        }
    }

    /// Moves the card `id` by `offset` places in the layout (SetLayout).
    func move(_ id: String, by offset: Int) {
        var order = cards.map(\.path)
        guard let index = cards.firstIndex(where: { $0.id == id }) else { return }
        let target = index + offset
        guard order.indices.contains(target) else { return }
        order.swapAt(index, target)
        call(Today.managerPath, Today.center.name, Today.Center.setLayout, ObjectPathList(order))
    }

    /// Alt+Up, Alt+Down: the card whose row has the focus.
    func moveFocusedCard(by offset: Int) -> Bool {
        guard let window, let focus = gtk_window_get_focus(cast(window)),
            let row = gtk_widget_get_ancestor(focus, gtk_list_box_row_get_type())
        else { return false }
        let index = Int(gtk_list_box_row_get_index(UnsafeMutableRawPointer(row).assumingMemoryBound(to: GtkListBoxRow.self)))
        guard cardLines.indices.contains(index), let id = cardLines[index].first else { return false }
        // In a row of two small cards: the one the focus is in.
        let focused = cardLines[index].first { id in rows[id].map { gtk_widget_is_ancestor(focus, $0.row) != 0 } ?? false } ?? id
        move(focused, by: offset)
        return true
    }

    /// New settings for `card`: Configure on an added instance; a kind's
    /// own instance, which keeps the defaults, is replaced in its place by
    /// an added one with these settings.
    func apply(_ card: TodayCard, configuration: PlistDictionary, family: WidgetFamily) {
        let settings = VariantDictionary(configuration.map { ($0.0, ValueMapping.dbus($0.1)) })
        if let instance = WidgetInstanceID(card.id), !instance.isDefault {
            call(card.path, Today.instance.name, Today.Instance.configure, settings, family.rawValue)
            return
        }
        guard let kind = BundleID(rawValue: card.id) else { return }
        let position = Int32(clamping: cards.firstIndex(where: { $0.id == card.id }) ?? -1)
        call(Today.managerPath, Today.center.name, Today.Center.addWidget, kind, settings, family.rawValue, position) { [self] in
            MainActor.assumeIsolated { call(Today.managerPath, Today.center.name, Today.Center.removeWidget, card.path) }
        }
    }

    // MARK: The settings form

    /// A dialog with a field per parameter: a text field, a number, a
    /// switch, or a list of choices (a dynamic one asked of the widget).
    func openSettings(for card: TodayCard) {
        guard let dialog = gtk_dialog_new() else { return }
        settingsDialog = dialog
        gtk_window_set_title(cast(dialog), "\(card.name): settings")
        if let window { gtk_window_set_transient_for(cast(dialog), cast(window)) }
        gtk_window_set_modal(cast(dialog), 1)
        _ = gtk_dialog_add_button(cast(dialog), "Cancel", GTK_RESPONSE_CANCEL.rawValue)
        _ = gtk_dialog_add_button(cast(dialog), "Save", GTK_RESPONSE_ACCEPT.rawValue)
        gtk_dialog_set_default_response(cast(dialog), GTK_RESPONSE_ACCEPT.rawValue)
        guard let area = gtk_dialog_get_content_area(cast(dialog)) else { return }
        let grid = shown(gtk_grid_new()!)
        gtk_grid_set_row_spacing(cast(grid), 8)
        gtk_grid_set_column_spacing(cast(grid), 12)
        setMargins(grid, top: 12, left: 12, bottom: 12, right: 12)
        append(area, grid)
        var readers: [(String, () -> PlistValue?)] = []
        for (row, parameter) in card.parameters.enumerated() {
            let name = label(parameter.title, wrap: false)
            gtk_grid_attach(cast(grid), name, 0, Int32(row), 1, 1)
            let (field, read) = settingsField(parameter, value: card.configuration[parameter.key], card: card)
            gtk_widget_set_hexpand(field, 1)
            setAccessibleLabel(field, parameter.title)
            gtk_grid_attach(cast(grid), field, 1, Int32(row), 1, 1)
            readers.append((parameter.key, read))
        }
        onResponse(dialog) { [self] response in
            defer {
                gtk_widget_destroy(dialog)
                settingsDialog = nil
            }
            guard response == GTK_RESPONSE_ACCEPT.rawValue else { return }
            var configuration = PlistDictionary()
            for (key, value) in readers { if let chosen = value() { configuration[key] = chosen } }
            apply(card, configuration: configuration, family: card.family)
        }
        gtk_widget_show(dialog)
    }

    /// The field for `parameter`, and how to read what it holds.
    private func settingsField(_ parameter: WidgetParameter, value: PlistValue?, card: TodayCard) -> (Widget, () -> PlistValue?) {
        switch parameter.type {
        case .string:
            let entry = shown(gtk_entry_new()!)
            gtk_entry_set_text(cast(entry), value?.string ?? "")
            return (entry, { .string(gtk_entry_get_text(cast(entry)).map { String(cString: $0) } ?? "") })
        case .integer:
            let spin = shown(gtk_spin_button_new_with_range(-1_000_000_000, 1_000_000_000, 1)!)
            gtk_spin_button_set_value(cast(spin), Double(value?.int64 ?? 0))
            return (spin, { .integer(Int64(gtk_spin_button_get_value_as_int(cast(spin)))) })
        case .boolean:
            let flag = shown(gtk_switch_new()!)
            gtk_widget_set_halign(flag, GTK_ALIGN_START)
            gtk_switch_set_active(cast(flag), value?.bool == true ? 1 : 0)
            return (flag, { .boolean(gtk_switch_get_active(cast(flag)) != 0) })
        case .choice:
            let choices = shown(gtk_combo_box_text_new()!)
            let current = value?.string ?? ""
            Self.fill(choices, with: parameter.choices, current: current)
            if parameter.dynamic {
                let connection = connection
                let path = card.path
                let key = parameter.key
                let target = MainLoopWidget(widget: choices)
                Task.detached {
                    let reply = try? await connection.call(
                        Today.busName, path: path, interface: Today.widget.name, Today.Widget.getOptions, key, timeout: .seconds(10))
                    let list = (reply?.body.first?.elements ?? []).compactMap { item -> WidgetParameter.Choice? in
                        guard let fields = item.stringDictionary, let value = fields["value"]?.string else { return nil }
                        return WidgetParameter.Choice(value: value, title: fields["title"]?.string ?? value)
                    }
                    onMainLoop {
                        MainActor.assumeIsolated { Self.fill(target.widget, with: list, current: current) }
                    }
                }
            }
            return (choices, { gtk_combo_box_get_active_id(cast(choices)).map { .string(String(cString: $0)) } })
        }
    }

    /// A list of choices holding `list`, `current` chosen (kept among
    /// them even when the list no longer has it).
    static func fill(_ choices: Widget, with list: [WidgetParameter.Choice], current: String) {
        gtk_combo_box_text_remove_all(cast(choices))
        for choice in list { gtk_combo_box_text_append(cast(choices), choice.value, choice.title) }
        if !list.contains(where: { $0.value == current }), !current.isEmpty { gtk_combo_box_text_append(cast(choices), current, current) }
        gtk_combo_box_set_active_id(cast(choices), current)
    }
}

/// Connects a dialog's `response` to `body`, which gets the response id.
func onResponse(_ dialog: Widget, _ body: @escaping (Int32) -> Void) {
    final class Box {
        let body: (Int32) -> Void
        init(_ body: @escaping (Int32) -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeMutableRawPointer?) -> Void = { _, response, data in
        guard let data else { return }
        Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body(response)
    }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(raw(dialog), "response", unsafeBitCast(handler, to: GCallback.self), data, release, GConnectFlags(rawValue: 0))
}

// MARK: Dragging

/// What a card being dragged carries: its id, within this program.
private let cardTarget = "application/x-today-card"

extension TodayView {
    /// Makes a card (in Edit) draggable, and a place to drop another card
    /// on: the dropped card takes this one's place in the layout.
    func enableDragging(_ widget: Widget, id: String) {
        cardTarget.withCString { name in
            var entry = GtkTargetEntry(target: UnsafeMutablePointer(mutating: name), flags: GTK_TARGET_SAME_APP.rawValue, info: 0)
            // Both copy the entry.
            gtk_drag_source_set(widget, GDK_BUTTON1_MASK, &entry, 1, GDK_ACTION_MOVE)
            gtk_drag_dest_set(widget, GTK_DEST_DEFAULT_ALL, &entry, 1, GDK_ACTION_MOVE)
        }
        onDragDataGet(widget) { selection in
            let bytes = Array(id.utf8)
            gtk_selection_data_set(selection, gtk_selection_data_get_target(selection), 8, bytes, Int32(clamping: bytes.count))
        }
        onDragDataReceived(widget) { [self] selection in
            guard let data = gtk_selection_data_get_data(selection) else { return }
            let length = Int(gtk_selection_data_get_length(selection))
            guard length > 0 else { return }
            let dragged = String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self)
            drop(dragged, onto: id)
        }
    }

    /// The card `dragged` put in `target`'s place (SetLayout).
    func drop(_ dragged: String, onto target: String) {
        guard dragged != target, let from = cards.firstIndex(where: { $0.id == dragged }),
            let to = cards.firstIndex(where: { $0.id == target })
        else { return }
        var order = cards.map(\.path)
        let moved = order.remove(at: from)
        order.insert(moved, at: to)
        if describe { FileSystem.writeAll(1, "dropped \(dragged) onto \(target)\n") }
        call(Today.managerPath, Today.center.name, Today.Center.setLayout, ObjectPathList(order))
    }
}

/// Connects `drag-data-get` (widget, context, selection, info, time) to
/// `body`, which fills the selection.
func onDragDataGet(_ widget: Widget, _ body: @escaping (OpaquePointer) -> Void) {
    final class Box {
        let body: (OpaquePointer) -> Void
        init(_ body: @escaping (OpaquePointer) -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, OpaquePointer?, UInt32, UInt32, UnsafeMutableRawPointer?) -> Void = {
        _, _, selection, _, _, data in
        guard let data, let selection else { return }
        Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body(selection)
    }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(raw(widget), "drag-data-get", unsafeBitCast(handler, to: GCallback.self), data, release, GConnectFlags(rawValue: 0))
}

/// Connects `drag-data-received` (widget, context, x, y, selection, info,
/// time) to `body`, which reads the selection.
func onDragDataReceived(_ widget: Widget, _ body: @escaping (OpaquePointer) -> Void) {
    final class Box {
        let body: (OpaquePointer) -> Void
        init(_ body: @escaping (OpaquePointer) -> Void) { self.body = body }
    }
    let data = Unmanaged.passRetained(Box(body)).toOpaque()
    let handler:
        @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, Int32, Int32, OpaquePointer?, UInt32, UInt32, UnsafeMutableRawPointer?) -> Void = {
            _, _, _, _, selection, _, _, data in
            guard let data, let selection else { return }
            Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().body(selection)
        }
    let release: GClosureNotify = { data, _ in
        if let data { Unmanaged<Box>.fromOpaque(data).release() }
    }
    g_signal_connect_data(raw(widget), "drag-data-received", unsafeBitCast(handler, to: GCallback.self), data, release, GConnectFlags(rawValue: 0))
}
