import DBus
import FoundationEssentials
import PropertyList
import Synchronization
import TodayProtocol

/// The app groups of the installed bundles: one Group object each, with
/// the defaults and container of GroupStore, open to the bundles whose
/// entitlements name the group (SPEC sections 2, 4 and 7).
final class GroupService: Sendable {
    let connection: Connection
    let identities: Identities
    let base: String
    let log: Logger
    private let state = Mutex(State())

    private struct State {
        var groups: [GroupID: (store: GroupStore, object: ExportedInterface)] = [:]
        /// Group id → the bundles entitled to it.
        /// The bundles entitled to each group, as callers are known.
        var entitled: [GroupID: Set<String>] = [:]
    }

    init(connection: Connection, identities: Identities, directories: Directories, log: Logger) {
        self.connection = connection
        self.identities = identities
        self.base = directories.groupsFolder
        self.log = log
    }

    /// Creates the containers of `groups` that do not exist yet, so a
    /// provider finds the folders TODAY_GROUP_CONTAINERS names.
    func prepareContainers(_ groups: [GroupID]) {
        let stores = state.withLock { state in groups.compactMap { state.groups[$0]?.store } }
        for store in stores {
            do {
                try store.makeContainer()
            } catch {
                log.warning("cannot create the container of \(store.identifier): \(error)")
            }
        }
    }

    /// Brings the Group objects in step with the installed bundles.
    func update(from catalog: BundleCatalog) {
        var entitled: [GroupID: Set<String>] = [:]
        for app in catalog.apps {
            for group in app.groups { entitled[group, default: []].insert(app.bundleIdentifier.rawValue) }
        }
        for widget in catalog.widgets {
            for group in widget.groups { entitled[group, default: []].insert(widget.bundleIdentifier.rawValue) }
        }
        var added: [(GroupID, ExportedInterface)] = []
        let removed = state.withLock { state -> [GroupID] in
            state.entitled = entitled
            let removed = state.groups.keys.filter { entitled[$0] == nil }
            for id in removed { state.groups[id] = nil }
            for id in entitled.keys where state.groups[id] == nil {
                let store = GroupStore(identifier: id, base: base)
                let object = makeObject(store)
                state.groups[id] = (store, object)
                added.append((id, object))
            }
            return removed
        }
        for id in removed { connection.objects.unexport(Today.groupPath(id)) }
        for (id, object) in added { connection.objects.export(Today.groupPath(id), [object]) }
    }

    /// Checks that the caller may use `group` and returns its store.
    func authorize(_ call: MethodCall, _ group: GroupID) async throws -> GroupStore {
        guard let bundle = try await identities.caller(of: call).bundleID else {
            throw TodayError.notRegistered("using an app group")
        }
        let (entry, entitled) = state.withLock { ($0.groups[group], $0.entitled[group] ?? []) }
        guard let entry else { throw TodayError.noSuchGroup(group.rawValue) }
        guard entitled.contains(bundle) else {
            throw TodayError.notEntitled("'\(bundle)' is not entitled to the app group '\(group)': add it to com.apple.security.application-groups in the bundle's entitlements")
        }
        return entry.store
    }

    private func makeObject(_ store: GroupStore) -> ExportedInterface {
        typealias Members = Today.Group
        let id = store.identifier
        return ExportedInterface(
            Today.group,
            properties: [Members.identifier.name: .string(id.rawValue), Members.containerPath.name: .string(store.containerPath)],
            bindings: [
                Members.get.task { [self] call, key in
                    let store = try await authorize(call, id)
                    return [.variant(ValueMapping.dbus(try run { try store.value(forKey: key) }, typedArrays: false))]
                },
                Members.getAll.task { [self] call in
                    let store = try await authorize(call, id)
                    return [ValueMapping.dbus(try run { try store.all() }, typedArrays: false)]
                },
                Members.set.task { [self] call, key, value in
                    let store = try await authorize(call, id)
                    let value = try Self.plist(value.value, key: key)
                    try changed(store, try run { try store.update(set: [(key, value)], remove: []) })
                    return []
                },
                Members.remove.task { [self] call, key in
                    let store = try await authorize(call, id)
                    try changed(store, try run { try store.update(set: [], remove: [key]) })
                    return []
                },
                Members.update.task { [self] call, set, remove in
                    let store = try await authorize(call, id)
                    let changes = try set.entries.map { entry in (entry.key, try Self.plist(entry.value, key: entry.key)) }
                    try changed(store, try run { try store.update(set: changes, remove: remove) })
                    return []
                },
            ],
            guarded: [Members.containerPath.name],
            readGuard: { [self] call in _ = try await authorize(call, id) })
    }

    static func plist(_ value: Value, key: String) throws -> PlistValue {
        do {
            return try ValueMapping.plist(value)
        } catch {
            throw TodayError.invalidArgs("the value of '\(key.prefix(100))': \(error)")
        }
    }

    /// Runs a store operation and turns its failures into the service's errors.
    private func run<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as GroupStore.Failure {
            switch failure {
            case .invalidKey(let m): throw TodayError.invalidArgs(m)
            case .tooLarge(let m): throw TodayError.tooLarge(m)
            case .noSuchKey(let key): throw TodayError.noSuchKey(key)
            case .storage(let m):
                log.warning("group storage: \(m)")
                throw TodayError.storage(m)
            }
        }
    }

    /// Tells each registered connection of an entitled bundle which keys changed.
    private func changed(_ store: GroupStore, _ keys: [String]) throws {
        guard !keys.isEmpty else { return }
        let (object, entitled) = state.withLock { ($0.groups[store.identifier]?.object, $0.entitled[store.identifier] ?? []) }
        guard let object else { return }
        for name in identities.connections(registeredAs: entitled) {
            guard let destination = BusName(rawValue: name) else { continue }
            try? object.emit(Today.Group.changed, [.strings(keys)], to: destination)
        }
    }
}
