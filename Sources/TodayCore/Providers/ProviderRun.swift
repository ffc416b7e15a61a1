import DBus
import FoundationEssentials
import PropertyList
import TodayProtocol

/// Provider runs as todayd makes them, for `todayctl run-provider` too.
public enum ProviderRun {
    public struct Problem: Error, CustomStringConvertible {
        public var description: String
        /// What LastFailure says: `no-provider`, or `no-sandbox`.
        public var failure = FailureReason.noProvider
    }

    /// How providers are confined (SPEC section 11): what the machine
    /// allows, and whether a run without a sandbox is refused.
    public struct Confinement: Sendable, Equatable {
        public var support: SandboxSupport
        public var required: Bool

        public init(support: SandboxSupport, required: Bool = false) {
            self.support = support
            self.required = required
        }

        public static let none = Confinement(support: .unavailable(reason: "not asked for"))

        public var sandboxed: Bool { if case .available = support { true } else { false } }
    }

    /// The exec provider of `manifest`: its executable checked again (the
    /// bundle may have changed since the scan), its container, groups and
    /// limits.
    public static func execProvider(
        _ manifest: WidgetManifest, directories: Directories, environment: [String: String], busAddress: String?,
        confinement: Confinement = .none, instance: ProviderInstance? = nil
    ) -> Result<ExecProvider, Problem> {
        guard let declared = manifest.executable else {
            return .failure(Problem(description: "the manifest names no CFBundleExecutable and no TodayProviderBusName"))
        }
        let executable: String
        switch BundleCatalog.resolve(declared, inside: manifest.path) {
        case .success(let path): executable = path
        case .failure(let problem): return .failure(Problem(description: problem.description))
        }
        // What the instance's settings name, `~/` made the user's home.
        let served = (instance ?? ProviderInstance(defaultOf: manifest)).resolvingFiles(of: manifest, home: directories.home)
        var limits = ProviderLimits()
        limits.timeout = .seconds(Int(manifest.updateTimeout))
        limits.memory = manifest.memoryLimit
        let container = directories.container(of: manifest.bundleIdentifier)
        let groups = manifest.groups.map { ($0.rawValue, directories.groupsFolder + "/" + $0.rawValue) }
        var sandbox: SandboxPlan?
        switch confinement.support {
        case .available(let bwrap):
            sandbox = SandboxPlan(
                bwrap: bwrap, appFolder: manifest.appPath, container: container, groupContainers: groups.map(\.1),
                network: manifest.networkClient, busAddress: busAddress, libraryFolders: SandboxPlan.libraryFolders(of: executable),
                userFiles: manifest.userSelectedFiles ? served.userFiles(of: manifest) : [])
        case .unavailable(let reason):
            if confinement.required {
                return .failure(Problem(description: "todayd --require-sandbox, and \(reason)", failure: .noSandbox))
            }
        }
        return .success(
            ExecProvider(
                widgetID: manifest.bundleIdentifier.rawValue, executable: executable, container: container, groupContainers: groups,
                busAddress: busAddress, environment: environment, limits: limits, sandbox: sandbox,
                instanceVariables: served.variables))
    }

    /// A word as a shell would need it written, for people to read.
    static func quoted(_ word: String) -> String {
        if !word.isEmpty, word.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || "0123456789-_./=:,+@%".unicodeScalars.contains($0)) }) {
            return word
        }
        return "'" + word.replacingScalars("'", with: "'\\''") + "'"
    }

    /// One run outside todayd: the previous snapshot from todayd's cache,
    /// the same environment and limits; nothing is stored.
    public static func once(
        _ manifest: WidgetManifest, directories: Directories, environment: [String: String], confinement: Confinement = .none,
        verbose: Bool = false, log: @escaping @Sendable (String) -> Void
    ) async -> ProviderOutcome {
        let previous = WidgetStore(directories: directories).snapshot(WidgetInstanceID(kind: manifest.bundleIdentifier), problem: log)
        let address = environment["DBUS_SESSION_BUS_ADDRESS"]
        if let name = manifest.providerBusName {
            guard let address, let connection = try? Connection(address: address) else {
                log("no session bus to reach \(name) on")
                return .failed(.noProvider)
            }
            defer { connection.close() }
            return await BusProvider(connection: connection, name: name, timeout: .seconds(Int(manifest.updateTimeout)), timeline: manifest.timeline)
                .run(previous: previous)
        }
        switch execProvider(manifest, directories: directories, environment: environment, busAddress: address, confinement: confinement) {
        case .failure(let problem):
            log(problem.description)
            return .failed(problem.failure)
        case .success(let provider):
            if verbose { log("runs: " + provider.updateCommandLine.map(Self.quoted).joined(separator: " ")) }
            for (_, path) in provider.groupContainers { try? DurableFile.makeFolder(path) }
            return await provider.run(previous: previous, running: RunningProviders(), log: log)
        }
    }
}

/// Which instance a provider run serves (SPEC section 16), as an exec
/// provider learns it: TODAY_INSTANCE (empty for the kind's default
/// instance), TODAY_CONFIGURATION (a JSON object, every parameter with its
/// value or default), TODAY_FAMILY.
public struct ProviderInstance: Sendable, Equatable {
    public var id: WidgetInstanceID
    public var configuration: PlistDictionary
    public var family: WidgetFamily

    public init(id: WidgetInstanceID, configuration: PlistDictionary, family: WidgetFamily) {
        self.id = id
        self.configuration = configuration
        self.family = family
    }

    /// The kind's default instance: its defaults, its first family.
    public init(defaultOf manifest: WidgetManifest) {
        self.init(
            id: WidgetInstanceID(kind: manifest.bundleIdentifier), configuration: WidgetConfiguration.complete([:], with: manifest.parameters),
            family: manifest.families.first ?? .medium)
    }

    /// The instance with its `files` parameters' `~/` made `home`, as the
    /// provider is given them.
    func resolvingFiles(of manifest: WidgetManifest, home: String) -> ProviderInstance {
        var resolved = self
        for parameter in manifest.parameters where parameter.files {
            guard let value = configuration[parameter.key]?.string else { continue }
            resolved.configuration[parameter.key] = .string(WidgetParameter.paths(in: value, home: home).joined(separator: ":"))
        }
        return resolved
    }

    /// Every path the instance's `files` parameters name.
    func userFiles(of manifest: WidgetManifest) -> [String] {
        manifest.parameters.filter(\.files).flatMap { configuration[$0.key]?.string.map { $0.split(separator: ":").map(String.init) } ?? [] }
    }

    var variables: [(String, String)] {
        [
            ("TODAY_INSTANCE", id.environmentValue),
            ("TODAY_CONFIGURATION", Plist.displayJSON(.dictionary(configuration), compact: true)),
            ("TODAY_FAMILY", family.rawValue),
        ]
    }
}
