import CGtk
import FoundationEssentials
import Posix

/// The user's own style sheet over todayd's, for the view and the banners
/// alike: `$XDG_CONFIG_HOME/todayd/style.css` (`~/.config/todayd/style.css`),
/// what SwayNotificationCenter's style.css and mako's and dunst's colours
/// were to their users. It is added at GTK's user priority, so that its
/// rules win over todayd's own and the theme's.
///
/// Read at start and again a moment after the file is written, made,
/// replaced or removed (a GFileMonitor, which also watches for the folder
/// to appear). A mistake is named on standard error with the file's line
/// and column, and the rest of the sheet applies, as GTK does; a file that
/// cannot be read leaves todayd's own style.
@MainActor
package final class UserStyle {
    /// Where the sheet is, from `environment`'s XDG_CONFIG_HOME (absolute)
    /// or HOME.
    package nonisolated static func path(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/todayd/style.css" }
        return (environment["HOME"] ?? "") + "/.config/todayd/style.css"
    }

    let path: String
    private let provider: UnsafeMutablePointer<GtkCssProvider>
    /// Kept for as long as the sheet is followed.
    private var monitor: UnsafeMutablePointer<GFileMonitor>?
    /// A reload is due: changes within its moment are read once.
    private var reloadDue = false

    /// Starts following the sheet at `path`; nil where GTK has no screen.
    package static func follow(path: String = UserStyle.path(environment: ProcessInfo.processInfo.environment)) -> UserStyle? {
        guard let screen = gdk_screen_get_default(), let provider = gtk_css_provider_new() else { return nil }
        let style = UserStyle(path: path, provider: provider)
        gtk_style_context_add_provider_for_screen(screen, OpaquePointer(provider), UInt32(GTK_STYLE_PROVIDER_PRIORITY_USER))
        style.onParsingError()
        style.load()
        style.watch()
        return style
    }

    private init(path: String, provider: UnsafeMutablePointer<GtkCssProvider>) {
        self.path = path
        self.provider = provider
    }

    /// Reads the sheet, or empties it where there is no file. Read here
    /// and handed to GTK as text: GTK's own reading of a path answers a
    /// mistake in the sheet as an error, as though the file could not be
    /// read; the mistakes come through `parsing-error` instead.
    private func load() {
        guard FileManager.default.fileExists(atPath: path) else {
            gtk_css_provider_load_from_data(provider, "", -1, nil)
            return
        }
        guard let bytes = FileManager.default.contents(atPath: path) else {
            FileDescriptor.standardError.writeAll("\(programName): cannot read \(path); todayd's own style applies\n")
            gtk_css_provider_load_from_data(provider, "", -1, nil)
            return
        }
        gtk_css_provider_load_from_data(provider, String(decoding: bytes, as: UTF8.self), -1, nil)
    }

    /// Names each mistake with its line and column (GTK counts from 0).
    private func onParsingError() {
        typealias Handler = @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<GError>?, UnsafeMutableRawPointer?) -> Void
        let handler: Handler = { _, section, error, data in
            guard let data else { return }
            let path = Unmanaged<Box>.fromOpaque(data).takeUnretainedValue().path
            let message = error.map { String(cString: $0.pointee.message) } ?? "a mistake"
            let place = section.map { ":\(gtk_css_section_get_start_line($0) + 1):\(gtk_css_section_get_start_position($0) + 1)" } ?? ""
            FileDescriptor.standardError.writeAll("\(programName): \(path)\(place): \(message); the rest of it applies\n")
        }
        let release: GClosureNotify = { data, _ in
            if let data { Unmanaged<Box>.fromOpaque(data).release() }
        }
        g_signal_connect_data(
            UnsafeMutableRawPointer(provider), "parsing-error", unsafeBitCast(handler, to: GCallback.self), Unmanaged.passRetained(Box(path: path)).toOpaque(), release,
            GConnectFlags(rawValue: 0))
    }

    /// Follows the file: any change reads it again a moment later.
    private func watch() {
        guard let file = g_file_new_for_path(path) else { return }
        defer { g_object_unref(UnsafeMutableRawPointer(file)) }
        var error: UnsafeMutablePointer<GError>?
        guard let monitor = g_file_monitor_file(file, G_FILE_MONITOR_WATCH_MOVES, nil, &error) else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "no monitor"
            if let error { g_error_free(error) }
            FileDescriptor.standardError.writeAll("\(programName): cannot follow \(path) (\(message)); a change to it shows at the next start\n")
            return
        }
        self.monitor = monitor
        typealias Handler = @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, OpaquePointer?, UInt32, UnsafeMutableRawPointer?) -> Void
        let handler: Handler = { _, _, _, _, data in
            guard let data else { return }
            let style = Unmanaged<UserStyle>.fromOpaque(data).takeUnretainedValue()
            MainActor.assumeIsolated { style.changed() }
        }
        g_signal_connect_data(
            UnsafeMutableRawPointer(monitor), "changed", unsafeBitCast(handler, to: GCallback.self), Unmanaged.passUnretained(self).toOpaque(), nil,
            GConnectFlags(rawValue: 0))
    }

    private func changed() {
        guard !reloadDue else { return }
        reloadDue = true
        every(milliseconds: 100) { [self] in
            reloadDue = false
            load()
            return false
        }
    }

    /// What the parsing-error handler needs, owned by the signal.
    private final class Box {
        let path: String
        init(path: String) { self.path = path }
    }
}
