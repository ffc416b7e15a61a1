import DBus
import Foundation
import Synchronization
import TodayProtocol

/// NSExtensionContext: what a widget or app asks of the system.
public final class ExtensionContext: Sendable {
    public static let current = ExtensionContext()

    /// openURL: hands `url` to the app that registered its scheme.
    /// Returns false, with the reason on standard error, when nothing could open it.
    @discardableResult
    public func open(_ url: URL) -> Bool {
        do {
            try TodayBus.shared.center(Today.Center.openURL, url.absoluteString, VariantDictionary([]), registered: false)
            return true
        } catch {
            report("open(\(url.absoluteString))", error)
            return false
        }
    }
}

/// An app that receives the URLs of its schemes while it runs
/// (application(_:open:options:)): it registers with todayd as its bundle
/// and serves org.freedesktop.Application, so taps on its widgets reach
/// this process instead of starting a new one. URLs given on the command
/// line (todayd starts an app that is not running with the URL as its one
/// argument) arrive through the same handler.
///
///     let app = TodayApplication()
///     app.onOpen { url in showPost(url) }
///     try await app.run()
public final class TodayApplication: Sendable {
    public let bundleIdentifier: String
    private let handlers = Mutex<(open: [@Sendable (URL) -> Void], activate: [@Sendable () -> Void])>(([], []))
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)

    public init(bundleIdentifier: String? = nil) throws {
        guard let id = bundleIdentifier ?? TodayBundle.main.bundleIdentifier else { throw TodayKitError.unknownBundle }
        self.bundleIdentifier = id
    }

    /// Called with every URL the app is asked to open.
    public func onOpen(_ handler: @escaping @Sendable (URL) -> Void) {
        handlers.withLock { $0.open.append(handler) }
    }

    /// Called when the app is activated without a URL (a tap on a widget
    /// whose snapshot has none).
    public func onActivate(_ handler: @escaping @Sendable () -> Void) {
        handlers.withLock { $0.activate.append(handler) }
    }

    /// The URLs on the command line: those with a scheme.
    public static var launchURLs: [URL] {
        CommandLine.arguments.dropFirst().compactMap { argument in
            guard argument.contains("://") || argument.hasSuffix(":"), let url = URL(string: argument), url.scheme != nil else { return nil }
            return url
        }
    }

    func deliver(_ url: URL) {
        for handler in handlers.withLock({ $0.open }) { handler(url) }
    }

    func activate() {
        for handler in handlers.withLock({ $0.activate }) { handler() }
    }

    /// Hands over the command line's URLs, then serves until `stop()`.
    public func run() async throws {
        for url in Self.launchURLs { deliver(url) }
        let connection = try TodayBus.shared.registeredConnection()
        guard let path = Today.applicationPath(bundleIdentifier) else { throw TodayKitError.unknownBundle }
        connection.objects.export(
            path,
            [
                ExportedInterface(
                    Today.application,
                    bindings: [
                        Today.Application.open.task { [self] _, uris, _ in
                            for text in uris {
                                if let url = URL(string: text) { deliver(url) }
                            }
                            return []
                        },
                        Today.Application.activate.task { [self] _, _ in
                            activate()
                            return []
                        },
                        // The one action: the user's answer to a scheduled
                        // notification, for UNUserNotificationCenter's delegate.
                        Today.Application.activateAction.task { _, name, parameter, _ in
                            if name == NotificationResponse.actionName, let dictionary = parameter.values.first.flatMap(VariantDictionary.init),
                                let response = NotificationResponse(dictionary)
                            {
                                await UNUserNotificationCenter.current().receive(response)
                            }
                            return []
                        },
                    ])
            ])
        await withCheckedContinuation { continuation in stopped.withLock { $0 = continuation } }
        connection.objects.unexport(path)
    }

    public func stop() {
        stopped.withLock { continuation in
            continuation?.resume()
            continuation = nil
        }
    }
}
