import DBus
import FoundationEssentials
import TodayProtocol

extension TodayService {
    /// The manager object's Center interface (SPEC section 2), each method
    /// bound to the service `service` gives (which throws once it is gone).
    static func centerObject(bundleFolders: [String], _ service: @escaping @Sendable () throws -> TodayService) -> ExportedInterface {
        typealias Center = Today.Center
        return ExportedInterface(
            Today.center,
            properties: [Center.version.name: .string(Today.version), Center.bundleDirectories.name: .strings(bundleFolders)],
            bindings: [
                Center.listWidgets.immediate { _ in
                    [.objectPaths(try service().widgetIDs.map(Today.widgetPath))]
                },
                Center.setHasContent.task { call, hasContent, widget in
                    try await service().setHasContent(call, hasContent, widget: widget)
                    return []
                },
                Center.performUpdate.deferred { call, answer, widget in
                    try service().answerUpdate(widget, call, answer)
                },
                Center.updateAll.task { call in
                    let service = try service()
                    let results = try await service.limitingCalls(of: call.sender) { await service.updateAll() }
                    return [.dictionary(key: .string, value: .string, results.map { DictionaryEntry(.string($0.0.rawValue), .string($0.1.rawValue)) })]
                },
                Center.openURL.task { call, url, options in
                    [.string(try await service().open(url, platformData: options, from: call))]
                },
                Center.resolveURL.task { _, url in
                    [.string(try await service().resolve(url).id)]
                },
                Center.containerPathForGroup.task { call, group in
                    let store = try await service().groups.authorize(call, group)
                    do {
                        return [.string(try store.makeContainer())]
                    } catch {
                        throw TodayError.storage("cannot create the group's container: \(error)")
                    }
                },
                Center.groupObject.task { call, group in
                    let store = try await service().groups.authorize(call, group)
                    return [.objectPath(Today.groupPath(store.identifier))]
                },
                Center.registerApp.task { call, id in
                    let service = try service()
                    try await service.identities.register(call, as: id.rawValue) { id in
                        BundleID(rawValue: id).map { id in service.state.withLock { $0.bundleIDs.contains(id) } } ?? false
                    }
                    service.log.debug("\(call.sender) registered as \(id)")
                    return []
                },
                Center.reload.task { _ in
                    try service().reload()
                    return []
                },
                Center.reloadTimelines.task { call, widget in
                    try await service().reloadTimelines(call, widget: widget)
                    return []
                },
                Center.reloadAllTimelines.task { call in
                    try await service().reloadAllTimelines(call)
                    return []
                },
            ])
    }
}
