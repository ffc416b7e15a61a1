import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// The Desktop Entry parser, Exec expansion and the mime-apps resolver,
/// with fixtures in a temporary XDG tree.
@Suite struct DesktopEntryTests {
    @Test func groupsEscapesListsAndLocales() throws {
        let entry = try DesktopEntry(parsing: """
            # a comment
            [Desktop Entry]
            Type=Application
            Name=Viewer
            Name[de]=Betrachter
            Name[sr@latin]=Pregledač
            Comment=one\\stwo\\nthree\\\\four
            MimeType=x-scheme-handler/a;x-scheme-handler/b\\;c;
            Hidden=false

            [Desktop Action New]
            Name=New
            """)
        #expect(entry.groupOrder == ["Desktop Entry", "Desktop Action New"])
        #expect(entry.string("Comment") == "one two\nthree\\four")
        #expect(entry.list("MimeType") == ["x-scheme-handler/a", "x-scheme-handler/b;c"])
        #expect(entry.localized("Name", locale: "de_DE.UTF-8") == "Betrachter")
        #expect(entry.localized("Name", locale: "sr_RS@latin") == "Pregledač")
        #expect(entry.localized("Name", locale: "fr_FR") == "Viewer")
        #expect(entry.string("Name", group: "Desktop Action New") == "New")
        #expect(!entry.bool("Hidden"))
        #expect(throws: DesktopEntry.ParseError.self) { try DesktopEntry(parsing: "Key=before any group") }
        // As GLib reads them: the last of two keys counts, a group given
        // again continues the first, and CRLF ends a line as LF does.
        #expect(try DesktopEntry(parsing: "[Desktop Entry]\nName=a\nName=b").string("Name") == "b")
        let merged = try DesktopEntry(parsing: "[A]\r\nx=1\r\n[B]\r\ny=2\r\n[A]\r\nz=3\r\n")
        #expect(merged.groups == ["A": ["x": "1", "z": "3"], "B": ["y": "2"]] && merged.groupOrder == ["A", "B"])
        #expect(throws: DesktopEntry.ParseError.self) { try DesktopEntry(parsing: "[Desktop Entry]\nno equals sign") }
    }

    func argv(_ exec: String, icon: String? = nil) throws -> [String] {
        var text = "[Desktop Entry]\nType=Application\nName=Viewer\nExec=\(exec)\n"
        if let icon { text += "Icon=\(icon)\n" }
        return try DesktopEntry(parsing: text).argv(opening: "app://x?a=1&b=2;c", file: "/apps/viewer.desktop", locale: nil)
    }

    @Test func execExpansion() throws {
        let url = "app://x?a=1&b=2;c"
        #expect(try argv("viewer %u") == ["viewer", url])
        #expect(try argv("viewer --open=%u") == ["viewer", "--open=\(url)"])
        #expect(try argv("viewer %U") == ["viewer", url])
        #expect(try argv(#""/opt/my apps/viewer" --name %c %k %u"#) == ["/opt/my apps/viewer", "--name", "Viewer", "/apps/viewer.desktop", url])
        #expect(try argv("viewer %i %u", icon: "viewer-icon") == ["viewer", "--icon", "viewer-icon", url])
        #expect(try argv("viewer %i %u") == ["viewer", url])
        #expect(try argv("viewer %d %D %n %N %v %m %u") == ["viewer", url])
        #expect(try argv("viewer 100%% %u") == ["viewer", "100%", url])
        // The string escape comes first, then the quoting: \\\\ in the file is one backslash inside quotes.
        #expect(try argv(#""a\\\\b" "say \\"hi\\"" "\\$HOME" %u"#) == [#"a\b"#, #"say "hi""#, "$HOME", url])
        for bad in ["viewer %x %u", "viewer \"unfinished %u", "viewer $HOME %u", "viewer a|b %u", "viewer \"%u\"", "viewer --x=%U", "viewer %f", "viewer", "viewer %u %U", "viewer \"a\\qb\" %u"] {
            #expect(throws: DesktopEntry.ExecError.self, "\(bad)") { try argv(bad) }
        }
    }

    /// A temporary XDG tree with desktop entries and mimeapps.list files.
    struct Tree {
        let root: URL
        var environment: [String: String] {
            [
                "HOME": root.path, "XDG_CONFIG_HOME": root.path + "/config", "XDG_CONFIG_DIRS": root.path + "/etc",
                "XDG_DATA_HOME": root.path + "/data", "XDG_DATA_DIRS": root.path + "/usr", "PATH": "/usr/bin:/bin",
                "XDG_CURRENT_DESKTOP": "Test:GNOME",
            ]
        }

        init() throws { root = try temporaryDirectory("xdg") }

        func app(_ id: String, in folder: String = "usr", types: [String] = ["x-scheme-handler/demo"], extra: String = "") throws {
            let path = root.appendingPathComponent(folder + "/applications/" + id)
            try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("[Desktop Entry]\nType=Application\nName=\(id)\nExec=/bin/true %u\nMimeType=\(types.joined(separator: ";"));\n\(extra)".utf8).write(to: path)
        }

        func list(_ path: String, _ text: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }

        func resolve(_ type: String = "x-scheme-handler/demo") -> String? {
            MimeApps(environment: environment).defaultApplication(type)?.id
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    @Test func mimeAppsResolution() throws {
        let tree = try Tree()
        defer { tree.remove() }
        #expect(tree.resolve() == nil)
        // Entries listing the type, by desktop id.
        try tree.app("b.desktop")
        try tree.app("a.desktop")
        #expect(tree.resolve() == "a.desktop")
        // A user's entry of the same id shadows the system's; Hidden deletes it.
        try tree.app("a.desktop", in: "data", extra: "Hidden=true\n")
        #expect(tree.resolve() == "b.desktop")
        // TryExec naming a missing program: not installed.
        try tree.app("c.desktop", in: "data", extra: "TryExec=/nonexistent/program\n")
        try tree.list("usr/applications/mimeapps.list", "[Default Applications]\nx-scheme-handler/demo=c.desktop;b.desktop;\n")
        #expect(tree.resolve() == "b.desktop")
        // Added Associations make an entry associated; defaults prefer it.
        try tree.app("d.desktop", types: [])
        try tree.list("etc/mimeapps.list", "[Added Associations]\nx-scheme-handler/demo=d.desktop;\n[Default Applications]\nx-scheme-handler/demo=d.desktop;\n")
        #expect(tree.resolve() == "d.desktop")
        // A default that is not associated is passed over.
        try tree.app("e.desktop", types: [])
        try tree.list("config/mimeapps.list", "[Default Applications]\nx-scheme-handler/demo=e.desktop;\n")
        #expect(tree.resolve() == "d.desktop")
        // Desktop-specific lists come first at their level, in XDG_CURRENT_DESKTOP order.
        try tree.list("config/gnome-mimeapps.list", "[Default Applications]\nx-scheme-handler/demo=b.desktop;\n")
        #expect(tree.resolve() == "b.desktop")
        try tree.list("config/test-mimeapps.list", "[Default Applications]\nx-scheme-handler/demo=d.desktop;\n")
        #expect(tree.resolve() == "d.desktop")
        // Removed Associations in a more important file drop an association below it.
        try tree.list("config/mimeapps.list", "[Removed Associations]\nx-scheme-handler/demo=d.desktop;\n")
        #expect(MimeApps(environment: tree.environment).associated("x-scheme-handler/demo").map(\.id) == ["b.desktop"])
        #expect(tree.resolve() == "b.desktop")
        // Subfolders make ids with dashes; types compare without case.
        try tree.app("vendor/f.desktop", in: "data", types: ["X-Scheme-Handler/Other"])
        #expect(tree.resolve("x-scheme-handler/other") == "vendor-f.desktop")
        // The same inputs give the same answer every time.
        #expect(Set((0..<5).map { _ in tree.resolve() }) == ["b.desktop"])
    }

    /// What OpenURL could not start, ResolveURL passes over, so the two
    /// agree; a DBusActivatable entry in a subfolder is called by its file
    /// name; a change to the folders is seen by the cached index.
    @Test func resolutionSkipsWhatCannotBeLaunched() async throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.list("data/applications/a-files.desktop", "[Desktop Entry]\nType=Application\nName=F\nExec=/bin/true %f\nMimeType=x-scheme-handler/demo;\n")
        try tree.list("data/applications/b-missing.desktop", "[Desktop Entry]\nType=Application\nName=M\nExec=/nonexistent/program %u\nMimeType=x-scheme-handler/demo;\n")
        try tree.list("data/applications/vendor/org.example.Sub.desktop", "[Desktop Entry]\nType=Application\nName=S\nDBusActivatable=true\nExec=/bin/true %u\nMimeType=x-scheme-handler/demo;\n")
        let cache = MimeIndexCache(configuration: MimeApps(environment: tree.environment))
        let watcher = try BundleWatcher(folders: [tree.root.path + "/no-bundles"]) {}
        defer { watcher.stop() }
        cache.follow(watcher)
        let mime = cache.configuration
        func usable(_ app: MimeApps.Application) -> Bool { URLDispatch.launchProblem(app, mime: mime) == nil }
        #expect(cache.current().associated("x-scheme-handler/demo").map(\.id) == ["a-files.desktop", "b-missing.desktop", "vendor-org.example.Sub.desktop"])
        let chosen = cache.current().defaultApplication("x-scheme-handler/demo", usable: usable)
        #expect(chosen?.id == "vendor-org.example.Sub.desktop")
        #expect(chosen.map(URLDispatch.busName) == "org.example.Sub")
        #expect(URLDispatch.launchProblem(try #require(cache.current().application("a-files.desktop")), mime: mime)?.contains("%u") == true)
        #expect(URLDispatch.launchProblem(try #require(cache.current().application("b-missing.desktop")), mime: mime)?.contains("not installed") == true)
        // A new entry and a new default, written after the index was read:
        // the watcher reports them, and the index is read again.
        func soon(_ expected: String) async throws -> String? {
            _ = try await eventually(1) { cache.current().defaultApplication("x-scheme-handler/demo", usable: usable)?.id == expected }
            return cache.current().defaultApplication("x-scheme-handler/demo", usable: usable)?.id
        }
        try tree.app("c.desktop", in: "data")
        try tree.list("config/mimeapps.list", "[Default Applications]\r\nx-scheme-handler/demo=c.desktop;\r\n")
        #expect(try await soon("c.desktop") == "c.desktop")
        try FileManager.default.removeItem(atPath: tree.root.path + "/data/applications/c.desktop")
        #expect(try await soon("vendor-org.example.Sub.desktop") == "vendor-org.example.Sub.desktop")
    }
}
