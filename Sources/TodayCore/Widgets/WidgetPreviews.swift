import DBus
import FoundationEssentials
import PropertyList
import Synchronization
import TodayProtocol

/// What the Edit mode's gallery and its forms ask of a kind (SPEC section
/// 16): a preview (the manifest's TodayPlaceholder, else a fast provider
/// run with sample data) and a dynamic choice's values.
extension WidgetService {
    /// Widget.GetPreview: the snapshot to show in the gallery.
    func preview(_ id: WidgetInstanceID, configuration: VariantDictionary, family: String) async throws -> Value {
        let manifest = try widget(id).data.withLock { $0.manifest }
        if let placeholder = manifest.placeholder { return ValueMapping.dbus(placeholder) }
        let placed = try Self.settings(configuration, family: family, for: manifest)
        let instance = ProviderInstance(
            id: WidgetInstanceID(kind: manifest.bundleIdentifier),
            configuration: WidgetConfiguration.complete(placed.configuration, with: manifest.parameters), family: placed.family)
        let key = "\(manifest.bundleIdentifier)|\(placed.family.rawValue)|\(Plist.displayJSON(.dictionary(instance.configuration), compact: true))"
        if let kept = state.withLock({ $0.previews[key] }) { return ValueMapping.dbus(kept) }
        let outcome: ProviderOutcome
        if let name = manifest.providerBusName {
            let provider = BusProvider(
                connection: connection, name: name, timeout: ExecProvider.previewTimeout, timeline: manifest.timeline,
                context: manifest.configurable ? BusProvider.context(instance, preview: true) : nil)
            outcome = await provider.run(previous: [:])
        } else {
            let collected = try await collect(.preview, manifest: manifest, instance: instance)
            outcome = ExecProvider.parse(collected)
        }
        guard case .newData(let answer) = outcome, let snapshot = answer.dated.first?.snapshot else {
            let why = if case .failed(let reason) = outcome { "\(reason)" } else { "it had no data" }
            throw TodayError.providerFailed("the preview of '\(manifest.bundleIdentifier)' did not come within 2 s: \(why)")
        }
        state.withLock { $0.previews[key] = snapshot }
        return ValueMapping.dbus(snapshot)
    }

    /// Widget.GetOptions: the values of the dynamic choice `key`, from the
    /// provider's `perform-options KEY` (`{choices: [{value, title}]}`).
    func options(_ id: WidgetInstanceID, key: String) async throws -> Value {
        let (manifest, instance) = try widget(id).data.withLock { data in
            (data.manifest, ProviderInstance(id: id, configuration: data.effectiveConfiguration, family: data.family))
        }
        guard let parameter = manifest.parameters.first(where: { $0.key == key }) else {
            throw TodayError.invalidArgs("'\(manifest.bundleIdentifier)' has no parameter '\(key)'")
        }
        var choices = parameter.choices
        if parameter.dynamic {
            // A provider on the bus answers its choices through its
            // executable, where the extension names one (design.md).
            guard manifest.executable != nil else {
                throw TodayError.invalidArgs(
                    "'\(manifest.bundleIdentifier)' answers on the bus and names no CFBundleExecutable: its choices for '\(key)' cannot be asked")
            }
            let output = try await collect(.options(key), manifest: manifest, instance: instance)
            choices = try Self.choices(in: output, for: key, of: manifest.bundleIdentifier)
        }
        return .array(
            .dictionary(key: .string, value: .variant), choices.map { .vardict([("value", .string($0.value)), ("title", .string($0.title))]) })
    }

    /// A perform-options answer's choices.
    static func choices(in output: Data, for key: String, of kind: BundleID) throws -> [WidgetParameter.Choice] {
        let answer = try? Plist.read(output, limits: PlistLimits(maximumSize: 1 << 20, maximumDepth: 8), allowJSON: true)
        guard let list = answer?["choices"]?.array else {
            throw TodayError.providerFailed("'\(kind)' perform-options \(key): the answer must be {\"choices\": [{\"value\": …, \"title\": …}]}")
        }
        return list.compactMap { item in
            guard let value = item["value"]?.string else { return nil }
            return WidgetParameter.Choice(value: value, title: item["title"]?.string ?? value)
        }
    }

    /// Runs the kind's exec provider once for `request`, off the caller's
    /// thread, and returns its standard output.
    private func collect(_ request: ExecProvider.ProviderRequest, manifest: WidgetManifest, instance: ProviderInstance) async throws -> Data {
        let prepared = ProviderRun.execProvider(
            manifest, directories: directories, environment: environment, busAddress: busAddress, confinement: confinement, instance: instance)
        guard case .success(let provider) = prepared else {
            if case .failure(let problem) = prepared { throw TodayError.providerFailed("'\(manifest.bundleIdentifier)': \(problem)") }
            throw TodayError.providerFailed("'\(manifest.bundleIdentifier)' has no provider")
        }
        let (providers, log) = (self.providers, self.log)
        let id = manifest.bundleIdentifier
        let collected = await withCheckedContinuation { continuation in
            ExecProvider.runners.run {
                continuation.resume(returning: provider.collect(request, previous: [:], running: providers) { log.warning("\(id): \($0)") })
            }
        }
        switch collected {
        case .output(let data): return data
        case .failed(let reason): throw TodayError.providerFailed("'\(id)' did not answer: \(reason)")
        }
    }
}
