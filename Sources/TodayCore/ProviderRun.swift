import DBus
import FoundationEssentials
import PropertyList

/// Provider runs as todayd makes them, for `todayctl run-provider` too.
public enum ProviderRun {
    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    /// The exec provider of `manifest`: its executable checked again (the
    /// bundle may have changed since the scan), its container, groups and
    /// limits.
    public static func execProvider(
        _ manifest: WidgetManifest, directories: Directories, environment: [String: String], busAddress: String?
    ) -> Result<ExecProvider, Problem> {
        guard let declared = manifest.executable else {
            return .failure(Problem(description: "the manifest names no CFBundleExecutable and no TodayProviderBusName"))
        }
        let executable: String
        switch BundleCatalog.resolve(declared, inside: manifest.path) {
        case .success(let path): executable = path
        case .failure(let problem): return .failure(Problem(description: problem.description))
        }
        var limits = ProviderLimits()
        limits.timeout = .seconds(Int(manifest.updateTimeout))
        limits.memory = manifest.memoryLimit
        return .success(
            ExecProvider(
                widgetID: manifest.bundleIdentifier, executable: executable,
                container: directories.container(of: manifest.bundleIdentifier),
                groupContainers: manifest.groups.map { ($0, directories.groupsFolder + "/" + $0) },
                busAddress: busAddress, environment: environment, limits: limits))
    }

    /// One run outside todayd: the previous snapshot from todayd's cache,
    /// the same environment and limits; nothing is stored.
    public static func once(
        _ manifest: WidgetManifest, directories: Directories, environment: [String: String],
        log: @escaping @Sendable (String) -> Void
    ) async -> ProviderOutcome {
        let previous = WidgetStore(directories: directories).snapshot(manifest.bundleIdentifier, problem: log)
        let address = environment["DBUS_SESSION_BUS_ADDRESS"]
        if let name = manifest.providerBusName {
            guard let address, let connection = try? Connection(address: address) else {
                log("no session bus to reach \(name) on")
                return .failed("no-provider")
            }
            defer { connection.close() }
            return await BusProvider(connection: connection, name: name, timeout: .seconds(Int(manifest.updateTimeout)), timeline: manifest.timeline)
                .run(previous: previous)
        }
        switch execProvider(manifest, directories: directories, environment: environment, busAddress: address) {
        case .failure(let problem):
            log(problem.description)
            return .failed("no-provider")
        case .success(let provider):
            for (_, path) in provider.groupContainers { try? DurableFile.makeFolder(path) }
            return await provider.run(previous: previous, running: RunningProviders(), log: log)
        }
    }
}
