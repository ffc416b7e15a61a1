import DBus
import Foundation
import TodayProtocol

/// NCWidgetController: tells todayd whether a widget has something to show.
///
///     WidgetController.widgetController().setHasContent(true, forWidgetWithBundleIdentifier: "com.e-legion.Traffic.Widget")
public final class WidgetController: Sendable {
    private static let shared = WidgetController()

    public static func widgetController() -> WidgetController { shared }

    /// A widget without content stays installed, but panels hide it and no
    /// scheduled update runs for it. Only the widget itself or its
    /// container app may say so. Returns false, with the reason on
    /// standard error, when todayd refused.
    @discardableResult
    public func setHasContent(_ hasContent: Bool, forWidgetWithBundleIdentifier bundleIdentifier: String) -> Bool {
        do {
            try TodayBus.shared.center(Today.Center.setHasContent, hasContent, try TodayBus.bundleID(bundleIdentifier))
            return true
        } catch {
            report("setHasContent(\(hasContent), forWidgetWithBundleIdentifier: \(bundleIdentifier))", error)
            return false
        }
    }
}

func report(_ what: String, _ error: any Error) {
    let reason = (error as? DBusError)?.message ?? "\(error)"
    FileHandle.standardError.write(Data("TodayKit: \(what): \(reason)\n".utf8))
}
