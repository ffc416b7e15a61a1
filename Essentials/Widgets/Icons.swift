import Foundation

/// Pictures for the cards from the Adwaita icon theme (Debian's
/// adwaita-icon-theme, which every GTK desktop has), as paths the view
/// reads; nil where the theme is not installed.
enum Icons {
    static let folders = [
        "/usr/share/icons/Adwaita/64x64/status", "/usr/share/icons/Adwaita/48x48/legacy", "/usr/share/icons/Adwaita/48x48/status",
        "/usr/share/icons/Adwaita/48x48/devices", "/usr/share/icons/Adwaita/48x48/mimetypes",
    ]

    static func path(_ name: String) -> String? {
        for folder in folders {
            for file in [name + ".png", name + "-symbolic.symbolic.png"] {
                let path = folder + "/" + file
                if FileManager.default.fileExists(atPath: path) { return path }
            }
        }
        return nil
    }
}
