import FoundationEssentials
import Posix
import Glibc

/// Desktop entries todayd writes under `$XDG_DATA_HOME/applications` for
/// each bundle that declares URL schemes, so `xdg-open` and `gio open`
/// reach the bundle's app too (SPEC section 6). Each is named
/// `todayd-<bundle id>.desktop`, carries `X-Todayd-Bundle`, and goes away
/// with its bundle.
enum BundleDesktopEntries {
    static let prefix = "todayd-"
    static let marker = "X-Todayd-Bundle"

    static func isOurs(_ app: MimeApps.Application) -> Bool {
        app.entry.raw(marker) != nil
    }

    /// The entry for `app`, or nil when it has no schemes or no executable.
    static func content(for app: AppManifest) -> String? {
        guard !app.urlSchemes.isEmpty, let executable = app.executable else { return nil }
        func escapedString(_ text: String) -> String {
            text.replacingScalars("\\", with: "\\\\").replacingScalars("\n", with: "\\n")
                .replacingScalars("\t", with: "\\t").replacingScalars("\r", with: "\\r")
        }
        // Quoted only when it must be (simple Exec parsers, like
        // xdg-open's own, take the first word as it stands).
        let reserved = " \t\n\"'\\><~|&;$*?#()`%"
        var quoted = executable
        if executable.contains(where: { reserved.contains($0) }) {
            quoted = "\""
            for character in executable {
                if ["\"", "`", "$", "\\"].contains(character) { quoted.append("\\") }
                quoted.append(character)
            }
            quoted.append("\"")
        }
        let types = app.urlSchemes.map { "x-scheme-handler/\($0.lowercased());" }.joined()
        return """
            [Desktop Entry]
            Type=Application
            Name=\(escapedString(app.displayName))
            Exec=\(escapedString(quoted)) %u
            MimeType=\(types)
            NoDisplay=true
            \(marker)=\(app.bundleIdentifier)

            """
    }

    /// Writes the entries of `apps` into `folder` and removes ours that no
    /// bundle needs any more. Returns true when something changed.
    @discardableResult
    static func sync(_ apps: [AppManifest], folder: String, log: Logger) -> Bool {
        var wanted: [String: String] = [:]
        for app in apps {
            if let content = content(for: app) { wanted[prefix + app.bundleIdentifier.rawValue + ".desktop"] = content }
        }
        var changed = false
        for name in FileSystem.entries(folder) where name.hasPrefix(prefix) && name.hasSuffix(".desktop") && wanted[name] == nil {
            let path = folder + "/" + name
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains("\n\(marker)=") else { continue }
            do {
                try DurableFile.remove(path)
                changed = true
            } catch {
                log.warning("cannot remove \(path): \(error)")
            }
        }
        for (name, content) in wanted.sorted(by: { $0.key < $1.key }) {
            let path = folder + "/" + name
            if (try? String(contentsOfFile: path, encoding: .utf8)) == content { continue }
            do {
                try DurableFile.write(Data(content.utf8), to: path)
                // Readable by the desktop's launchers, whatever the umask.
                try? Files.changeMode(path, 0o644)
                changed = true
            } catch {
                log.warning("cannot write \(path): \(error)")
            }
        }
        return changed
    }
}
