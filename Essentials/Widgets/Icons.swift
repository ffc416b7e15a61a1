import Foundation
import Synchronization

/// Pictures for the cards from the Adwaita icon theme (Debian's
/// adwaita-icon-theme, which every GTK desktop has), as paths the view
/// reads; nil where the theme is not installed.
enum Icons {
    static let folders = [
        "/usr/share/icons/Adwaita/64x64/status", "/usr/share/icons/Adwaita/48x48/legacy", "/usr/share/icons/Adwaita/48x48/status",
        "/usr/share/icons/Adwaita/48x48/devices", "/usr/share/icons/Adwaita/48x48/mimetypes",
    ]

    /// What each name was found as. A provider that stays running (Now
    /// Playing, Battery) answers every change with a card: the theme is
    /// searched once a name, not at each answer (up to ten file lookups).
    private static let found = Mutex<[String: String?]>([:])

    static func path(_ name: String) -> String? {
        if let known = found.withLock({ $0[name] }) { return known }
        let path = search(name)
        found.withLock { $0[name] = .some(path) }
        return path
    }

    private static func search(_ name: String) -> String? {
        for folder in folders {
            for file in [name + ".png", name + "-symbolic.symbolic.png"] {
                let path = folder + "/" + file
                if FileManager.default.fileExists(atPath: path) { return path }
            }
        }
        return nil
    }
}
