import DBus
import Dispatch
import FoundationEssentials
import PropertyList
import Synchronization
import TodayProtocol

/// Widget instances and the layout (SPEC section 16): AddWidget,
/// RemoveWidget, SetLayout and the Layout property, Instance.Configure,
/// GetCurrentConfigurations. Every change is written to layout.plist
/// before the caller hears of it; one that cannot be written changes
/// nothing.
extension WidgetService {
    /// What the view shows, in order.
    var layout: [WidgetInstanceID] { state.withLock { Self.shown($0) } }

    private static func shown(_ state: State) -> [WidgetInstanceID] {
        state.layout.shown(kinds: state.order) { id in state.widgets[id]?.data.withLock { $0.record.hasContent } ?? false }
    }

    /// Sends Layout where it changed since it was last sent; `known`:
    /// Layout as the caller already knows it to be now.
    func announceLayout(known: [WidgetInstanceID]? = nil) {
        let changed = state.withLock { state -> [WidgetInstanceID]? in
            let now = known ?? Self.shown(state)
            guard now != state.announcedLayout else { return nil }
            state.announcedLayout = now
            return now
        }
        guard let changed, let observer = layoutObserver.withLock({ $0 }) else { return }
        let paths = state.withLock { state in changed.map { state.widgets[$0]?.path ?? $0.path } }
        observer(paths)
    }

    /// The layout is the user's: a provider or a Flatpak app (a bundle
    /// confined to its own data) may not change it; the view, todayctl and
    /// other programs of the user may.
    func checkLayoutCaller(_ call: MethodCall, for member: String) async throws {
        switch try await identities.caller(of: call) {
        case .provider(let bundle), .flatpak(let bundle):
            throw TodayError.notEntitled("'\(bundle)' may not call \(member): the layout is the user's, changed from the Today view or todayctl")
        case .registered, .anonymous:
            return
        }
    }

    /// Reads layout.plist again whenever it changes (edited by hand, a
    /// dotfile manager): the objects follow it as they follow a rescan.
    /// A file that does not read leaves the layout as it was.
    func follow(_ watcher: BundleWatcher) {
        watcher.watchAlso([PathText.parent(of: layoutStore.path)], for: "widget-layout") { [weak self, weak watcher] in
            guard let self, let watcher else { return }
            self.readLayoutAgain()
            self.follow(watcher)
        }
    }

    /// Reads layout.plist again, unless it is the one todayd wrote last:
    /// when the watcher sees it change, and before a change of the layout
    /// is written.
    func readLayoutAgain() {
        // Read under the lock its writes hold: what is read is never
        // older than the layout kept.
        let catalog = state.withLock { state in takeInEdit(&state) ? state.catalog : nil }
        guard let catalog else { return }
        update(from: catalog)
    }

    /// How long layout.plist may be away before it counts as removed: a
    /// dotfile manager, `git checkout` or an editor's save removes the file
    /// and writes it again, and the added instances would otherwise leave
    /// (their objects unexported, Layout announced without them) and come
    /// back a moment later.
    static let removalGrace = Duration.seconds(1)

    /// Takes layout.plist into `state.layout` where it is not the file the
    /// layout was last written to or read from: an edit the watcher has not
    /// told of yet, or cannot (behind a symbolic link), so that todayd
    /// never writes its layout over an edit it has not read. Whether the
    /// layout changed. A file that does not read leaves it as it was, and
    /// so does one that went away, until it has been away for
    /// `removalGrace` (`layoutRemoval`, which looks again then).
    func takeInEdit(_ state: inout State) -> Bool {
        // Looked at before it is read: a change while it is read is
        // read again at its own event.
        let seen = FileIdentity(of: layoutStore.path)
        let away = seen == nil && state.writtenLayout != nil
        guard layoutRemoval.settled(away: away, lookAgain: { [weak self] in self?.readLayoutAgain() }) else { return false }
        if let written = state.writtenLayout, seen == written { return false }
        let read: WidgetLayout
        do {
            read = try layoutStore.load { log.warning($0) }
        } catch {
            log.warning("\(layoutStore.path): \(error); the layout stays as it was until the file reads")
            return false
        }
        // What is kept is now the file's (or no file's): the file todayd
        // wrote, moved away and brought back behind a link, is read again
        // rather than taken for its own write.
        state.writtenLayout = seen
        guard state.layout != read else { return false }
        state.layout = read
        log.info("the layout read again from \(layoutStore.path)")
        return true
    }

    /// Why layout.plist is not todayd's to write: a file there that is not
    /// the one the layout was last written to or read from, and that does
    /// not read (an edit half done, a typo). todayd never writes over it,
    /// so that nothing of the user's edit is lost; nil where it may write.
    func unwritableLayout(_ state: State) -> String? {
        guard let seen = FileIdentity(of: layoutStore.path), seen != state.writtenLayout else { return nil }
        do {
            _ = try layoutStore.load { _ in }
            return nil
        } catch {
            return "\(layoutStore.path) does not read (\(error)); todayd does not write over a file it cannot read"
        }
    }

    /// Writes `layout`, saying so in the log where it cannot, or where
    /// layout.plist does not read (it is left for the user to fix).
    func saveLayout(_ layout: WidgetLayout) {
        do {
            try state.withLock { state in
                if let why = unwritableLayout(state) {
                    log.warning("\(why): the layout is kept in memory until it is fixed or removed")
                    return
                }
                try layoutStore.save(layout)
                state.writtenLayout = FileIdentity(of: layoutStore.path)
            }
        } catch {
            log.warning("\(layoutStore.path): cannot keep the layout: \(error)")
        }
    }

    /// Changes the layout with `body` (given the installed kinds and what
    /// is shown), writes it, and only then keeps it.
    private func changeLayout<T>(_ body: (inout WidgetLayout, [BundleID], [WidgetInstanceID]) throws -> T) throws -> T {
        // An edit not read yet is taken in first, and the change made on it.
        readLayoutAgain()
        return try state.withLock { state in
            var layout = state.layout
            let result = try body(&layout, state.order, Self.shown(state))
            guard layout != state.layout else { return result }
            if let why = unwritableLayout(state) {
                throw TodayError.storage("\(why): fix it, or remove it to start from the installed widgets, and try again; the layout is unchanged")
            }
            do {
                try layoutStore.save(layout)
            } catch {
                throw TodayError.storage("cannot write \(layoutStore.path): \(error); the layout is unchanged")
            }
            state.layout = layout
            state.writtenLayout = FileIdentity(of: layoutStore.path)
            return result
        }
    }

    /// The settings asked for, checked against the kind's manifest.
    static func settings(
        _ given: VariantDictionary, family: String, for manifest: WidgetManifest
    ) throws -> WidgetLayout.Placed {
        var configuration = PlistDictionary()
        for (key, value) in given.entries {
            do {
                configuration[key] = try ValueMapping.plist(value)
            } catch {
                throw TodayError.invalidArgs("parameter '\(key)': \(error)")
            }
        }
        do {
            return WidgetLayout.Placed(
                configuration: try WidgetConfiguration.checked(configuration, against: manifest.parameters),
                family: try WidgetConfiguration.family(family, supported: manifest.families))
        } catch {
            throw TodayError.invalidArgs("\(manifest.bundleIdentifier): \(error)")
        }
    }

    /// Center.AddWidget: a new instance of `kind` placed at `position`, its
    /// first update started.
    func addWidget(_ kind: BundleID, configuration: VariantDictionary, family: String, position: Int32) throws -> ObjectPath {
        let manifest = try widget(kind).data.withLock { $0.manifest }
        let placed = try Self.settings(configuration, family: family, for: manifest)
        let id = try changeLayout { layout, kinds, shown in layout.add(kind, placed, at: Int(position), kinds: kinds, shown: shown) }
        let instance = makeInstance(id, manifest: manifest, placed: placed, at: now())
        state.withLock { state in
            state.widgets[id] = instance
            state.paths[instance.path] = id
        }
        connection.objects.export(id.path, [instance.object] + (instance.instanceObject.map { [$0] } ?? []))
        log.debug("widget added: \(id)")
        announceLayout()
        performUpdate(id) { _ in }
        return id.path
    }

    /// Center.RemoveWidget: an added instance is gone (its object and
    /// files); a kind's default one leaves the layout and stays.
    func removeWidget(_ path: ObjectPath) throws {
        guard let id = WidgetInstanceID(path: path) else {
            throw TodayError.invalidArgs("'\(path.rawValue)' is not a widget instance's object; take one from Layout")
        }
        let removed = try changeLayout { layout, kinds, _ in layout.remove(id, kinds: kinds) }
        guard removed else { throw TodayError.invalidArgs("'\(id)' is not in the layout") }
        guard !id.isDefault else {
            announceLayout()
            return
        }
        let gone = state.withLock { state in
            state.paths[id.path] = nil
            return state.widgets.removeValue(forKey: id)
        }
        if gone != nil { connection.objects.unexport(id.path) }
        records.forget(id)
        store.remove(id)
        log.debug("widget removed from the layout: \(id)")
        announceLayout()
    }

    /// Center.SetLayout: the shown instances in the user's order.
    func setLayout(_ paths: [ObjectPath]) throws {
        let known = state.withLock { $0.paths }
        let ids = try paths.map { path in
            guard let id = known[path] ?? WidgetInstanceID(path: path) else {
                throw TodayError.invalidArgs("'\(path.rawValue)' is not a widget instance's object; take them from Layout")
            }
            return id
        }
        try changeLayout { layout, kinds, shown in
            do {
                try layout.reorder(ids, shown: shown, kinds: kinds)
            } catch {
                throw TodayError.invalidArgs("\(error)")
            }
        }
        // What is shown is what was asked for, in its order.
        announceLayout(known: ids)
    }

    /// Instance.Configure: new settings, written, shown at once, and an
    /// update with them started.
    func configure(_ id: WidgetInstanceID, configuration: VariantDictionary, family: String) throws {
        let instance = try widget(id)
        let manifest = instance.data.withLock { $0.manifest }
        let placed = try Self.settings(configuration, family: family, for: manifest)
        try changeLayout { layout, _, _ in layout.instances[id] = placed }
        let properties = instance.data.withLock { data -> [(String, Value)] in
            data.configuration = placed.configuration
            data.family = placed.family
            data.provider = nil
            return Self.instanceProperties(of: data).map { ($0.key, $0.value) }
        }
        instance.instanceObject?.set(properties)
        log.debug("\(id): configured")
        performUpdate(id) { _ in }
    }

    /// Center.GetCurrentConfigurations: the kind's placed instances, for
    /// the widget itself or its container app.
    func currentConfigurations(_ call: MethodCall, kind: BundleID) async throws -> Value {
        let container = try widget(kind).data.withLock { $0.manifest.containerBundleIdentifier }
        let caller = try await callerBundle(call, for: "GetCurrentConfigurations")
        guard caller == kind.rawValue || caller == container.rawValue else {
            throw TodayError.notEntitled("'\(caller)' may not read the configurations of '\(kind)': only the widget or its container app '\(container)' may")
        }
        let placed = state.withLock { state in
            (state.layout.order ?? state.order.map { WidgetInstanceID(kind: $0) }).filter { $0.kind == kind }.compactMap { state.widgets[$0] }
        }
        return .array(
            .structure([.objectPath, .string, .dictionary(key: .string, value: .variant)]),
            placed.map { instance in
                instance.data.withLock { data in
                    .structure([.objectPath(instance.id.path), .string(data.family.rawValue), ValueMapping.dbus(data.effectiveConfiguration)])
                }
            })
    }

    // MARK: The Instance interface

    static func instanceProperties(of data: Widget.Data) -> [String: Value] {
        [
            Today.Instance.kind.name: .objectPath(Today.widgetPath(data.manifest.bundleIdentifier)),
            Today.Instance.configuration.name: ValueMapping.dbus(data.configuration),
            Today.Instance.family.name: .string(data.family.rawValue),
        ]
    }

    /// The Instance interface of added instance `id`.
    func instanceObject(_ id: WidgetInstanceID, properties: [String: Value]) -> ExportedInterface {
        let gone = DBusError.failed("todayd is shutting down")
        return ExportedInterface(
            Today.instance, properties: properties,
            bindings: [
                Today.Instance.configure.task { [weak self] call, configuration, family in
                    guard let self else { throw gone }
                    try await self.checkLayoutCaller(call, for: "Configure")
                    try self.configure(id, configuration: configuration, family: family)
                    return []
                }
            ])
    }
}
