import DBus
import FoundationEssentials

extension TodayService {
    /// The object of widget `id` (SPEC section 4's Widget interface), its
    /// methods bound to this service; `properties` are its first values.
    func widgetObject(_ id: String, properties: [String: Value]) -> ExportedInterface {
        ExportedInterface(
            Today.widget, properties: properties,
            methods: [
                "Activate": { [weak self] call in
                    guard let self else { throw DBusError.failed("todayd is shutting down") }
                    return [.string(try await self.activate(id, platformData: call.arguments[0]))]
                },
                "GetTimeline": { [weak self] _ in
                    guard let self else { throw DBusError.failed("todayd is shutting down") }
                    return [try self.timelineValue(id)]
                },
            ],
            deferred: [
                "PerformUpdate": { [weak self] call, answer in
                    guard let self else { throw DBusError.failed("todayd is shutting down") }
                    try self.answerUpdate(id, call, answer)
                },
                "PerformAction": { [weak self] call, answer in
                    guard let self else { throw DBusError.failed("todayd is shutting down") }
                    try self.answerAction(id, call, answer)
                },
            ])
    }
}
