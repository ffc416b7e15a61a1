import FoundationEssentials

/// The icon a widget's card shows (SPEC section 13): the container app's
/// `CFBundleIconFile` (`IconPath`); else the icon of the app's desktop entry
/// (`<app id>.desktop`, as Flatpak and most packaged apps install one);
/// else the theme's icon for any program.
public enum AppIcon: Equatable, Sendable {
    /// An image file.
    case file(String)
    /// A freedesktop icon name, from the icon theme.
    case named(String)

    /// The theme icon for an app that names none.
    public static let fallbackName = "application-x-executable"

    /// The icon for an app whose `IconPath` is `iconPath` (nil or empty:
    /// none) and whose desktop entry names `entryIcon`.
    public init(iconPath: String?, entryIcon: String?) {
        if let iconPath, !iconPath.isEmpty {
            self = .file(iconPath)
        } else if let entryIcon, !entryIcon.isEmpty {
            self = entryIcon.hasPrefix("/") ? .file(entryIcon) : .named(entryIcon)
        } else {
            self = .named(Self.fallbackName)
        }
    }

    /// The `Icon` of `<appID>.desktop` in the first of `directories`'
    /// application folders that has one (data home first), or nil.
    public static func desktopEntryIcon(of appID: String, in directories: Directories) -> String? {
        guard !appID.isEmpty, !appID.contains("/") else { return nil }
        for folder in [directories.dataHome] + directories.dataDirs {
            let path = (folder.hasSuffix("/") ? String(folder.dropLast()) : folder) + "/applications/" + appID + ".desktop"
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            // The first entry found is the app's, whether it names an icon or not.
            return (try? DesktopEntry(parsing: text))?.string("Icon")
        }
        return nil
    }
}
