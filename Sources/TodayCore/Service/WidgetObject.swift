import DBus
import FoundationEssentials
import TodayProtocol

extension WidgetService {
    /// The object of widget `id` (SPEC section 4's Widget interface), its
    /// methods bound to this service; `properties` are its first values.
    func widgetObject(_ id: WidgetInstanceID, properties: [String: Value]) -> ExportedInterface {
        typealias Members = Today.Widget
        let gone = DBusError.failed("todayd is shutting down")
        return ExportedInterface(
            Today.widget, properties: properties,
            bindings: [
                Members.performUpdate.deferred { [weak self] call, answer in
                    guard let self else { throw gone }
                    try self.answerUpdate(id, call, answer)
                },
                Members.activate.task { [weak self] _, platformData in
                    guard let self else { throw gone }
                    return [.string(try await self.activate(id, platformData: platformData))]
                },
                Members.performAction.deferred { [weak self] call, answer, action, _ in
                    guard let self else { throw gone }
                    try self.answerAction(id, action: action, call, answer)
                },
                Members.getTimeline.task { [weak self] _ in
                    guard let self else { throw gone }
                    return [try self.timelineValue(id)]
                },
                Members.getPreview.task { [weak self] _, configuration, family in
                    guard let self else { throw gone }
                    return [try await self.preview(id, configuration: configuration, family: family)]
                },
                Members.getOptions.task { [weak self] _, key in
                    guard let self else { throw gone }
                    return [try await self.options(id, key: key)]
                },
            ])
    }
}
