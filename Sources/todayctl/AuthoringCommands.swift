import DBus
import FoundationEssentials
import Posix
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

// MARK: New projects

/// The value after `flag`, taken out of the arguments.
func take(_ flag: String, from arguments: inout [String]) throws -> String? {
    guard let index = arguments.firstIndex(of: flag) else { return nil }
    guard index + 1 < arguments.count else { throw Failure.usage("\(flag) needs a value") }
    let value = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
    return value
}

/// The checkout this todayctl was built in (`<checkout>/.build/<config>/todayctl`), if any.
func checkoutOfThisTodayctl() -> String? {
    guard let exe = try? Files.linkTarget("/proc/self/exe") else { return nil }
    var folder = exe
    for _ in 0..<4 {
        folder = URL(fileURLWithPath: folder).deletingLastPathComponent().path
        if FileManager.default.fileExists(atPath: folder + "/Sources/TodayKit") && FileManager.default.fileExists(atPath: folder + "/Package.swift") {
            return folder
        }
    }
    return nil
}

func newProject(_ arguments: [String], json: Bool) throws {
    var arguments = arguments
    let usage = "new app NAME --id ID [--group GROUP] [--scheme SCHEME] [--widget NAME] [--todaykit PATH|URL] [DIR] | new widget NAME --app DIR"
    guard let kind = arguments.first, ["app", "widget"].contains(kind), arguments.count >= 2 else { throw Failure.usage(usage) }
    arguments.removeFirst()
    let name = arguments.removeFirst()
    do {
        if kind == "app" {
            guard let id = try take("--id", from: &arguments) else { throw Failure.usage("new app needs --id, the app's bundle id (org.example.\(name))") }
            let group = try take("--group", from: &arguments)
            let scheme = try take("--scheme", from: &arguments)
            let widget = try take("--widget", from: &arguments) ?? "Today"
            guard let todayKit = try take("--todaykit", from: &arguments) ?? checkoutOfThisTodayctl() else {
                throw Failure.usage("where is TodayKit? pass --todaykit with the path of a todayd checkout, or its git URL")
            }
            guard arguments.count <= 1, !(arguments.first?.hasPrefix("-") ?? false) else { throw Failure.usage(usage) }
            let folder = URL(fileURLWithPath: arguments.first ?? name).standardizedFileURL.path
            guard !FileManager.default.fileExists(atPath: folder) || (FileSystem.entries(folder).isEmpty) else {
                throw Failure.refused("\(folder) exists and is not empty; give a new folder")
            }
            let template = try ProjectTemplate(name: name, id: id, group: group, scheme: scheme, todayKit: todayKit)
            try write(try template.appFiles(widget: widget), into: folder)
            if json {
                Out.json(.dictionary(["created": .string(folder), "app": .string(id), "widget": .string(id + "." + widget)]))
            } else {
                Out.line("created \(folder): the app \(id) and its widget \(id).\(widget)")
                Out.line("next: cd \(folder) && ./build-bundle && todayctl lint \(name).app && todayctl install \(name).app")
            }
        } else {
            guard let folder = try take("--app", from: &arguments).map({ URL(fileURLWithPath: $0).standardizedFileURL.path }), arguments.isEmpty else {
                throw Failure.usage(usage)
            }
            // What the app is, from its package and manifests.
            let bundles = FileSystem.entries(folder + "/Bundle").filter { $0.hasSuffix(".app") }
            guard bundles.count == 1 else { throw Failure.refused("\(folder)/Bundle holds no one .app: is \(folder) a project `todayctl new app` made?") }
            let app = folder + "/Bundle/" + bundles[0]
            let info = try Plist.read(contentsOf: app + "/Info.plist")
            let package = try String(contentsOfFile: folder + "/Package.swift", encoding: .utf8)
            guard let id = info["CFBundleIdentifier"]?.string, let appName = info["CFBundleName"]?.string,
                let dependency = package.split(separator: "\n").first(where: { $0.contains(".package(") })
            else { throw Failure.refused("\(folder) is not a project `todayctl new app` made (no CFBundleName or TodayKit dependency)") }
            let todayKit = dependency.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
            let groups = try Plist.read(contentsOf: app + "/Entitlements.plist")["com.apple.security.application-groups"]?.array?.compactMap(\.string) ?? []
            let scheme = info["CFBundleURLTypes"]?.array?.first?["CFBundleURLSchemes"]?.array?.first?.string
            let template = try ProjectTemplate(name: appName, id: id, group: groups.first, scheme: scheme, todayKit: todayKit)
            guard !FileManager.default.fileExists(atPath: app + "/PlugIns/\(name).appex") else { throw Failure.refused("the app already has a widget \(name)") }
            let updated = try template.addingTarget(name, to: package)
            try write(try template.widgetFiles(name), into: folder)
            try Data(updated.utf8).write(to: URL(fileURLWithPath: folder + "/Package.swift"))
            if json { Out.json(.dictionary(["widget": .string(id + "." + name)])) } else { Out.line("added the widget \(id).\(name) to \(folder)") }
        }
    } catch let failure as ProjectTemplate.Failure {
        throw Failure.usage(failure.description)
    }
}

func write(_ files: [(path: String, content: String, executable: Bool)], into folder: String) throws {
    for file in files {
        let path = folder + "/" + file.path
        try FileManager.default.createDirectory(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try Data(file.content.utf8).write(to: URL(fileURLWithPath: path))
        if file.executable { try Files.changeMode(path, 0o755) }
    }
}

// MARK: Installing

func installOrUninstall(_ name: String, _ arguments: [String], json: Bool) throws {
    var arguments = arguments
    var folder: String?
    if let index = arguments.firstIndex(of: "--dir") {
        guard index + 1 < arguments.count else { throw Failure.usage("--dir needs a bundle folder") }
        folder = URL(fileURLWithPath: arguments[index + 1]).standardizedFileURL.path
        arguments.removeSubrange(index...index + 1)
    }
    guard arguments.count == 1, !arguments[0].hasPrefix("-") else {
        throw Failure.usage(name == "install" ? "install PATH.app [--dir DIR]" : "uninstall BUNDLE_ID [--dir DIR]")
    }
    let directories = Directories(environment: ProcessInfo.processInfo.environment, extraBundleFolders: folder.map { [$0] } ?? [])
    let installer = BundleInstaller(directories: directories, folder: folder)
    do {
        if name == "install" {
            let path = try installer.install(URL(fileURLWithPath: arguments[0]).standardizedFileURL.path)
            if json { Out.json(.dictionary(["installed": .string(path)])) } else { Out.line("installed \(path)") }
        } else {
            let path = try installer.uninstall(arguments[0])
            if json { Out.json(.dictionary(["removed": .string(path)])) } else { Out.line("removed \(path)") }
        }
    } catch let failure as BundleInstaller.Failure {
        throw Failure.refused(failure.description)
    }
}

// MARK: Providers

func runProvider(_ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    var folders: [String] = []
    let verbose = arguments.contains("--verbose")
    arguments.removeAll { $0 == "--verbose" }
    while let index = arguments.firstIndex(of: "--bundles") {
        guard index + 1 < arguments.count else { throw Failure.usage("--bundles needs a folder") }
        folders.append(URL(fileURLWithPath: arguments[index + 1]).standardizedFileURL.path)
        arguments.removeSubrange(index...index + 1)
    }
    guard arguments.count == 1 else { throw Failure.usage("run-provider needs one widget id") }
    let id = arguments[0]
    let environment = ProcessInfo.processInfo.environment
    let directories = Directories(environment: environment, extraBundleFolders: folders)
    let catalog = BundleCatalog.scan(directories.bundleFolders)
    guard let manifest = catalog.widgets.first(where: { $0.bundleIdentifier.rawValue == id }) else {
        let problems = catalog.problems.filter { $0.file.contains(id) || $0.message.contains(id) }
        let hint = problems.isEmpty ? "" : "; \(problems.map(\.description).joined(separator: "; "))"
        throw Failure.refused("no widget '\(id)' in \(directories.bundleFolders.joined(separator: ", "))\(hint)")
    }
    let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
    let confinement = ProviderRun.Confinement(support: SandboxSupport.probe(path: path))
    if verbose, case .unavailable(let reason) = confinement.support { Out.error("\(id): runs unconfined: \(reason)\n") }
    let outcome = await ProviderRun.once(manifest, directories: directories, environment: environment, confinement: confinement, verbose: verbose) { line in
        Out.error("\(id): \(line)\n")
    }
    var answer: PlistDictionary = ["result": .string(outcome.result.rawValue)]
    if case .failed(let reason) = outcome { answer["failure"] = .string(reason.description) }
    if case .newData(let timeline) = outcome {
        for (key, value) in timeline.plist { answer[key] = value }
    }
    if json {
        Out.json(.dictionary(answer))
    } else {
        Out.line("result: \(outcome.result.rawValue)\(outcome.failure.isEmpty ? "" : " (\(outcome.failure))")")
        if case .newData(let timeline) = outcome {
            // A snapshot alone prints as itself; a timeline with its policy.
            let plist = timeline.plist
            Out.line(JSONOutput.text(plist["timeline"] == nil ? plist["snapshot"] ?? .dictionary([:]) : .dictionary(plist)))
        }
    }
    if outcome.result == .failed { throw Failure(message: "the provider failed: \(outcome.failure)", status: 1) }
}
