import FoundationEssentials
import PropertyList
import TodayProtocol

/// `todayctl new` (SPEC section 12): a Swift package for a container app
/// and its widgets, written with TodayKit, as Xcode's Today Extension
/// template lays one out: sources that build, both Info.plists with the
/// same versions, both entitlements with the app group, a URL scheme the
/// widget's snapshot opens, and `./build-bundle`, which builds `NAME.app`.
public struct ProjectTemplate: Sendable {
    /// The app's name (`Weather`), id (`org.example.Weather`), group and scheme.
    public var name: String
    public var id: String
    public var group: String
    public var scheme: String
    /// Where TodayKit comes from: a checkout's path, or a git URL.
    public var todayKit: String

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(name: String, id: String, group: String? = nil, scheme: String? = nil, todayKit: String) throws {
        guard Self.isName(name) else { throw Failure(description: "'\(name)' is not a name: letters and digits, starting with a letter (Weather, MyApp2)") }
        guard BundleCatalog.isValidBundleID(id), id.contains(".") else {
            throw Failure(description: "'\(id)' is not a bundle id: reverse-DNS such as org.example.\(name)")
        }
        let group = group ?? "group." + id
        guard BundleCatalog.isValidGroupID(group) else { throw Failure(description: "'\(group)' is not a group id: group. and reverse-DNS characters") }
        let scheme = scheme ?? name.lowercased()
        guard BundleCatalog.isValidScheme(scheme) else { throw Failure(description: "'\(scheme)' is not a URL scheme: a letter, then letters, digits, + - .") }
        self.name = name
        self.id = id
        self.group = group
        self.scheme = scheme
        self.todayKit = todayKit
    }

    static func isName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
        return name.count <= 64 && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
    }

    /// The Swift package's identity of the TodayKit dependency.
    var packageIdentity: String {
        let last = PathText.lastComponent(of: todayKit.hasSuffix("/") ? String(todayKit.dropLast()) : todayKit)
        return (last.hasSuffix(".git") ? String(last.dropLast(4)) : last).lowercased()
    }

    var isURL: Bool { todayKit.contains("://") || todayKit.hasPrefix("git@") }

    /// The files of a new project, by path inside it.
    public func appFiles(widget: String) throws -> [(path: String, content: String, executable: Bool)] {
        var template = self
        template.firstWidget = widget
        return try template.files(widget: widget)
    }

    /// The widget the app's source names.
    var firstWidget = "Today"

    func files(widget: String) throws -> [(path: String, content: String, executable: Bool)] {
        [
            ("Package.swift", packageSwift(widgets: [widget]), false),
            ("Sources/\(name)/main.swift", appSource, false),
            ("Bundle/\(name).app/Info.plist", try plist(appInfo), false),
            ("Bundle/\(name).app/Entitlements.plist", try plist(entitlements), false),
            ("build-bundle", buildScript, true),
            (".gitignore", ".build/\n\(name).app/\n", false),
            ("README.md", readme, false),
        ] + (try widgetFiles(widget))
    }

    /// The files another widget adds (its source and manifests).
    public func widgetFiles(_ widget: String) throws -> [(path: String, content: String, executable: Bool)] {
        guard Self.isName(widget) else { throw Failure(description: "'\(widget)' is not a widget name: letters and digits, starting with a letter") }
        return [
            ("Sources/\(name)\(widget)/main.swift", widgetSource(widget), false),
            ("Bundle/\(name).app/PlugIns/\(widget).appex/Info.plist", try plist(widgetInfo(widget)), false),
            ("Bundle/\(name).app/PlugIns/\(widget).appex/Entitlements.plist", try plist(entitlements), false),
        ]
    }

    func plist(_ dictionary: PlistDictionary) throws -> String {
        String(decoding: try Plist.write(.dictionary(dictionary), format: .xml), as: UTF8.self)
    }

    var appInfo: PlistDictionary {
        [
            "CFBundleIdentifier": .string(id), "CFBundleName": .string(name), "CFBundleExecutable": .string(executable(name)),
            "CFBundleVersion": .string("1"), "CFBundleShortVersionString": .string("1.0"),
            "CFBundleURLTypes": .array([.dictionary(["CFBundleURLSchemes": .array([.string(scheme)])])]),
        ]
    }

    func widgetInfo(_ widget: String) -> PlistDictionary {
        [
            "CFBundleIdentifier": .string(id + "." + widget), "CFBundleDisplayName": .string(widget),
            "CFBundleExecutable": .string(executable(name + widget)), "CFBundleVersion": .string("1"), "CFBundleShortVersionString": .string("1.0"),
            "NSExtension": .dictionary([
                "NSExtensionPointIdentifier": .string("com.apple.widget-extension"),
                "NSExtensionPrincipalClass": .string(widget + "ViewController"),
                "NSExtensionAttributes": .dictionary(["TodayUpdateInterval": .integer(900)]),
            ]),
        ]
    }

    var entitlements: PlistDictionary { ["com.apple.security.application-groups": .array([.string(group)])] }

    /// An executable's file name: its target's name, as SwiftPM names it.
    func executable(_ target: String) -> String { target }

    func packageSwift(widgets: [String]) -> String {
        let dependency = isURL ? ".package(url: \"\(todayKit)\", branch: \"main\")" : ".package(path: \"\(todayKit)\")"
        let targets = ([name] + widgets.map { name + $0 }).map { target in
            "        .executableTarget(name: \"\(target)\", dependencies: [.product(name: \"TodayKit\", package: \"\(packageIdentity)\")]),"
        }
        return """
            // swift-tools-version:6.0
            // \(name) and its widgets, for todayd. `./build-bundle` builds \(name).app.
            import PackageDescription

            let package = Package(
                name: "\(name)",
                dependencies: [\(dependency)],
                targets: [
            \(targets.joined(separator: "\n"))
                ]
            )

            """
    }

    /// Package.swift with one more widget target, after the last one.
    public func addingTarget(_ widget: String, to package: String) throws -> String {
        let line = "        .executableTarget(name: \"\(name)\(widget)\", dependencies: [.product(name: \"TodayKit\", package: \"\(packageIdentity)\")]),"
        guard !package.contains("name: \"\(name)\(widget)\"") else { throw Failure(description: "the package already has a target \(name)\(widget)") }
        var lines = package.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let last = lines.lastIndex(where: { $0.contains(".executableTarget(") }) else {
            throw Failure(description: "Package.swift has no .executableTarget to add the widget after; add \(line.trimmingSpaces()) yourself")
        }
        lines.insert(line, at: last + 1)
        return lines.joined(separator: "\n")
    }

    var appSource: String {
        """
        // The \(name) app. It keeps what its widgets show in the app group
        // \(group), and opens \(scheme): URLs, which a tap on a widget sends.
        //
        //   \(executable(name))          save the latest content for the widgets, then exit
        //   \(executable(name)) URL      show what the URL names (todayd starts the app this way)
        import Foundation
        import TodayKit

        func say(_ line: String) {
            FileHandle.standardOutput.write(Data((line + "\\n").utf8))
        }

        /// application(_:open:options:)
        func open(_ url: URL) {
            say("\(name): opening \\(url.absoluteString)")
        }

        let arguments = Array(CommandLine.arguments.dropFirst())
        if let first = arguments.first, let url = URL(string: first), url.scheme == "\(scheme)" {
            open(url)
        } else {
            let defaults = GroupDefaults(suiteName: "\(group)")
            defaults?.set("Hello from \(name)", forKey: "message")
            defaults?.synchronize()
            WidgetController.widgetController().setHasContent(true, forWidgetWithBundleIdentifier: "\(id).\(firstWidget)")
            say("\(name): saved the message for the widgets")
        }

        """
    }

    func widgetSource(_ widget: String) -> String {
        """
        // The \(widget) widget of \(name): what the app saved into the group
        // \(group); a tap opens \(scheme)://\(widget.lowercased()).
        import Foundation
        import TodayKit

        @main
        struct \(widget): WidgetProviding {
            func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
                guard let defaults = GroupDefaults(suiteName: "\(group)") else { return (.failed, previous) }
                guard let message = defaults.string(forKey: "message") else { return (.noData, previous) }
                let snapshot = Snapshot(
                    title: message, subtitle: "\(name)", url: URL(string: "\(scheme)://\(widget.lowercased())"),
                    accessibilityLabel: "\(widget): \\(message)")
                return (snapshot == previous ? .noData : .newData, snapshot)
            }
        }

        """
    }

    var buildScript: String {
        """
        #!/bin/sh
        # Builds \(name).app from the manifests in Bundle/ and the executables
        # the package builds. Then: todayctl lint \(name).app; todayctl install \(name).app
        set -eu
        cd "$(dirname "$0")"
        swift build -c "${CONFIG:-release}"
        bin=$(swift build -c "${CONFIG:-release}" --show-bin-path)
        rm -rf \(name).app
        cp -R Bundle/\(name).app \(name).app
        install -m 755 "$bin/\(executable(name))" \(name).app/\(executable(name))
        for appex in \(name).app/PlugIns/*.appex; do
            widget=$(basename "$appex" .appex)
            install -m 755 "$bin/\(name)$widget" "$appex/"
        done
        echo "built \(name).app"

        """
    }

    var readme: String {
        """
        # \(name)

        A container app and its Today widgets for todayd, written with TodayKit.

            ./build-bundle               # swift build, then \(name).app
            todayctl lint \(name).app
            todayctl install \(name).app
            ./\(name).app/\(executable(name))       # save content for the widgets
            todayctl update \(id).\(firstWidget)

        Add a widget with `todayctl new widget NAME --app .`.

        """
    }
}
