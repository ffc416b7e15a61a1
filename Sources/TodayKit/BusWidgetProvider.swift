import DBus
import Foundation
import PropertyList
import TodayProtocol

/// The instance a D-Bus provider's call serves (SPEC section 16's
/// context): which one, its settings, its size, and whether the gallery
/// asks.
public struct ProviderContext: Sendable {
    /// Empty for the kind's own instance.
    public var instance: String = ""
    public var configuration: PlistDictionary = [:]
    public var family: WidgetFamily = .medium
    public var isPreview = false

    public init() {}

    /// The context dictionary of a `…In` call; the default instance's for
    /// the plain calls.
    init(_ dictionary: VariantDictionary?) {
        for (key, value) in dictionary?.entries ?? [] {
            switch key {
            case "instance": instance = value.string ?? ""
            case "configuration": configuration = (try? ValueMapping.plist(value))?.dictionary ?? [:]
            case "family": family = value.string.flatMap(WidgetFamily.init(rawValue:)) ?? .medium
            case "preview": isPreview = value.bool ?? false
            default: break
            }
        }
    }

    /// The instance's settings as the intent the widget declares.
    public func configuration<Intent: WidgetConfigurationIntent>(_ type: Intent.Type = Intent.self) -> Intent {
        Intent.loaded(from: configuration)
    }
}

/// A widget provider that lives on the bus (`TodayProviderBusName`), for
/// widgets that follow something which tells of its changes (a media
/// player, a battery): the bus starts it at todayd's first call, it keeps
/// following what it shows while todayd runs, and when that changes it
/// calls `WidgetCenter.shared.reloadTimelines(ofKind:)`, so todayd asks it
/// again. Between changes it sleeps on its connections.
///
/// It runs outside Swift concurrency: the concurrency runtime's thread
/// pool on Linux wakes its process every second, even idle, and a provider
/// that lasts as long as the session should cost nothing while nothing
/// changes. `update` answers at once from what the provider follows (it
/// runs on the connection's thread and must not block); `perform` runs on
/// a thread of its own and may block (bus calls with `callBlocking`).
///
///     struct Battery: BusWidgetProvider {
///         func update(in context: ProviderContext, previous: Snapshot) -> (UpdateResult, Snapshot) { … }
///     }
///     try BusProviderHost.serve(Battery(), as: "org.example.Battery")
public protocol BusWidgetProvider: Sendable {
    /// The content of `context`'s instance, now, from what the provider
    /// keeps: it must not block.
    func update(in context: ProviderContext, previous: Snapshot) -> (UpdateResult, Snapshot)
    /// A button or toggle of the snapshot (arguments has `state` for a
    /// toggle); the update that follows is the answer. Throws when the
    /// action cannot be done, saying why.
    func perform(action id: String, arguments: PlistDictionary, in context: ProviderContext) throws
}

extension BusWidgetProvider {
    public func perform(action id: String, arguments: PlistDictionary, in context: ProviderContext) throws {
        throw TodayKitError.service("this widget has no action '\(id)'")
    }
}

/// Serves a `BusWidgetProvider` at `/io/github/todayd/Today1/Provider`.
public enum BusProviderHost {
    /// The connection the provider is served on, to the session bus. A
    /// provider that follows something on the same bus (a player's
    /// signals) subscribes through it: its `reloadTimelines` then leaves
    /// from the thread that heard the change, with no hand-over to another
    /// connection's thread.
    public static func connection() throws -> Connection {
        try TodayBus.shared.connection()
    }

    /// Exports the Provider interface on the session bus, takes `name`,
    /// and answers todayd's calls until the bus goes away (then returns).
    /// Throws when the name cannot be had (another copy serves it).
    public static func serve(_ provider: some BusWidgetProvider, as name: String) throws {
        guard let busName = BusName(rawValue: name) else { throw TodayKitError.service("'\(name)' is not a D-Bus name") }
        let connection = try TodayBus.shared.connection()
        let update: @Sendable (VariantDictionary?, VariantDictionary) -> [Value] = { context, previous in
            let (result, snapshot) = provider.update(in: ProviderContext(context), previous: Self.snapshot(previous))
            return [.string(result.rawValue), ValueMapping.dbus(snapshot.dictionary)]
        }
        let action: @Sendable (VariantDictionary?, String, VariantDictionary, VariantDictionary) throws -> [Value] = {
            context, id, arguments, previous in
            let given = (try? ValueMapping.plist(arguments.value))?.dictionary ?? [:]
            try provider.perform(action: id, arguments: given, in: ProviderContext(context))
            // The state after the action, even when it looks the same: a
            // toggle's state comes back from the widget itself.
            let (_, snapshot) = provider.update(in: ProviderContext(context), previous: Self.snapshot(previous))
            return [.string(UpdateResult.newData.rawValue), ValueMapping.dbus(snapshot.dictionary)]
        }
        let timeline: @Sendable (VariantDictionary?, VariantDictionary) -> [Value] = { context, previous in
            // One entry, now; the provider reloads when what it follows changes.
            let (result, snapshot) = provider.update(in: ProviderContext(context), previous: Self.snapshot(previous))
            let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
            let entry = Value.vardict([("date", .uint64(now)), ("snapshot", ValueMapping.dbus(snapshot.dictionary))])
            return [
                .string(result.rawValue), .array(.dictionary(key: .string, value: .variant), result == .newData ? [entry] : []),
                .vardict([("kind", .string("never"))]),
            ]
        }
        connection.objects.export(
            Today.providerPath,
            [
                ExportedInterface(
                    Today.provider,
                    bindings: [
                        Today.Provider.performUpdate.immediate { _, previous in update(nil, previous) },
                        Today.Provider.performUpdateIn.immediate { _, context, previous in update(context, previous) },
                        Today.Provider.getTimeline.immediate { _, previous in timeline(nil, previous) },
                        Today.Provider.getTimelineIn.immediate { _, context, previous in timeline(context, previous) },
                        Today.Provider.performAction.deferred { _, answer, id, arguments, previous in
                            Self.answer(answer) { try action(nil, id, arguments, previous) }
                        },
                        Today.Provider.performActionIn.deferred { _, answer, context, id, arguments, previous in
                            Self.answer(answer) { try action(context, id, arguments, previous) }
                        },
                    ])
            ])
        let reply = try connection.callBusBlocking(MemberName("RequestName"), [.string(busName.rawValue), .uint32(Connection.RequestNameFlags.doNotQueue.rawValue)])
        let standing = reply.body.first?.int64.flatMap { UInt32(exactly: $0) }.flatMap(Connection.RequestNameReply.init(rawValue:))
        guard standing == .primaryOwner || standing == .alreadyOwner else {
            throw TodayKitError.service("another process serves \(name) already")
        }
        let ended = DispatchSemaphore(value: 0)
        connection.onDisconnect { ended.signal() }
        ended.wait()
    }

    /// Runs an action on a thread of its own (it may block on the bus) and
    /// answers the call with what it gives.
    static func answer(_ answer: PendingAnswer, _ work: @escaping @Sendable () throws -> [Value]) {
        Thread.detachNewThread { answer.complete(Result { try work() }) }
    }

    static func snapshot(_ dictionary: VariantDictionary) -> Snapshot {
        Snapshot((try? ValueMapping.plist(dictionary.value))?.dictionary ?? [:])
    }
}
