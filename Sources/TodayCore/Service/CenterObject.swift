import DBus
import FoundationEssentials
import TodayProtocol

extension TodayService {
    /// The manager object's Center interface (SPEC section 2), each method
    /// bound to the part that answers it.
    static func centerObject(
        bundleFolders: [String], widgets: WidgetService, groups: GroupService, urls: URLService, catalog: CatalogService,
        identities: Identities, log: Logger, notificationServer: String, reload: @escaping @Sendable () -> Void
    ) -> ExportedInterface {
        typealias Center = Today.Center
        return ExportedInterface(
            Today.center,
            properties: [
                Center.version.name: .string(Today.version), Center.bundleDirectories.name: .strings(bundleFolders),
                Center.notificationServer.name: .string(notificationServer),
                Center.layout.name: .objectPaths(widgets.layout.map(\.path)),
            ],
            bindings: [
                Center.listWidgets.immediate { _ in
                    [.objectPaths(widgets.ids.map(Today.widgetPath))]
                },
                Center.setHasContent.task { call, hasContent, widget in
                    try await widgets.setHasContent(call, hasContent, widget: widget)
                    return []
                },
                Center.performUpdate.deferred { call, answer, widget in
                    try widgets.answerUpdate(WidgetInstanceID(kind: widget), call, answer)
                },
                Center.updateAll.task { call in
                    let results = try await widgets.limitingCalls(of: call.sender) { await widgets.updateAll() }
                    return [.dictionary(key: .string, value: .string, results.map { DictionaryEntry(.string($0.0.description), .string($0.1.rawValue)) })]
                },
                Center.openURL.task { call, url, options in
                    [.string(try await urls.open(url, platformData: options, from: call))]
                },
                Center.resolveURL.task { _, url in
                    [.string(try await urls.resolve(url).id)]
                },
                Center.containerPathForGroup.task { call, group in
                    let store = try await groups.authorize(call, group)
                    do {
                        return [.string(try store.makeContainer())]
                    } catch {
                        throw TodayError.storage("cannot create the group's container: \(error)")
                    }
                },
                Center.groupObject.task { call, group in
                    let store = try await groups.authorize(call, group)
                    return [.objectPath(Today.groupPath(store.identifier))]
                },
                Center.registerApp.task { call, id in
                    try await identities.register(call, as: id.rawValue) { catalog.isInstalled($0) }
                    log.debug("\(call.sender) registered as \(id)")
                    return []
                },
                Center.reload.task { _ in
                    reload()
                    return []
                },
                Center.reloadTimelines.deferred { call, answer, widget in
                    try widgets.reloadTimelines(call, widget: widget, answer: answer)
                },
                Center.reloadAllTimelines.task { call in
                    try await widgets.reloadAllTimelines(call)
                    return []
                },
                Center.addWidget.task { call, kind, configuration, family, position in
                    try await widgets.checkLayoutCaller(call, for: "AddWidget")
                    return [.objectPath(try widgets.addWidget(kind, configuration: configuration, family: family, position: position))]
                },
                Center.removeWidget.task { call, instance in
                    try await widgets.checkLayoutCaller(call, for: "RemoveWidget")
                    try widgets.removeWidget(instance)
                    return []
                },
                Center.setLayout.task { call, layout in
                    try await widgets.checkLayoutCaller(call, for: "SetLayout")
                    try widgets.setLayout(layout.paths)
                    return []
                },
                Center.getCurrentConfigurations.task { call, kind in
                    [try await widgets.currentConfigurations(call, kind: kind)]
                },
            ])
    }
}
