import FoundationEssentials
import Posix
import Glibc
import PropertyList
import Synchronization
import TodayProtocol

/// What a provider run came to.
public enum ProviderOutcome: Sendable, Equatable {
    /// New entries: a snapshot alone is one entry, dated when it arrives.
    case newData(TimelineAnswer)
    case noData
    case failed(FailureReason)

    public var result: UpdateResult {
        switch self {
        case .newData: .newData
        case .noData: .noData
        case .failed: .failed
        }
    }

    /// What `LastFailure` says: the reason, or empty.
    public var failure: String { failureReason?.description ?? "" }

    public var failureReason: FailureReason? {
        if case .failed(let reason) = self { reason } else { nil }
    }
}

/// An action a provider is asked to perform (SPEC section 10): its id and,
/// for a toggle, the state asked for.
public struct ProviderAction: Sendable, Equatable, Hashable {
    public var id: String
    public var state: Bool?

    public init(id: String, state: Bool? = nil) {
        self.id = id
        self.state = state
    }
}

/// The limits a provider runs under (SPEC section 3 attributes).
public struct ProviderLimits: Sendable, Equatable {
    public var timeout: Duration = .seconds(10)
    /// Resident size, in bytes, checked while the provider runs.
    public var memory: UInt64 = 64 << 20
    /// Largest standard output, in bytes.
    public var output: Int = 4 << 20
    /// How much standard error reaches the log.
    public var errorLog: Int = 16 << 10
    /// Time between SIGTERM and SIGKILL.
    public var grace: Duration = .seconds(2)
    public init() {}
}

/// Process ids of the providers todayd started and has not reaped yet,
/// with the widget each one runs for (SPEC section 7).
public final class RunningProviders: Sendable {
    private let table = Mutex<(widgets: [pid_t: String], starting: Int)>(([:], 0))
    public init() {}
    public func widget(forProcess pid: pid_t) -> String? { table.withLock { $0.widgets[pid] } }
    /// A provider is being started: its process may run, and call todayd,
    /// before `started` records its pid.
    func starting() { table.withLock { $0.starting += 1 } }
    /// The provider started as `pid` (or, with nil, failed to start).
    func started(_ pid: pid_t?, _ widget: String) {
        table.withLock { table in
            table.starting -= 1
            if let pid { table.widgets[pid] = widget }
        }
    }
    func remove(_ pid: pid_t) { table.withLock { $0.widgets[pid] = nil } }
    public var isEmpty: Bool { table.withLock { $0.widgets.isEmpty && $0.starting == 0 } }
    /// Whether some provider's pid is not recorded yet.
    var isStarting: Bool { table.withLock { $0.starting > 0 } }

    /// Kills every running provider and what it started.
    public func killAll() {
        for pid in table.withLock({ Array($0.widgets.keys) }) { try? Processes.signal(group: pid, SIGKILL) }
    }
}

/// A provider's last standard input: the previous snapshot as an XML
/// plist, kept while it is small, so that the runs of a widget whose
/// snapshot did not change do not encode it again. A large one (a
/// picture) is encoded each time rather than held twice.
final class LastInput: Sendable {
    static let keptSize = 16 << 10
    private let kept = Mutex<(snapshot: PlistDictionary, input: Data)?>(nil)

    func encoding(_ snapshot: PlistDictionary) throws -> Data {
        if let kept = kept.withLock({ $0 }), kept.snapshot == snapshot { return kept.input }
        let input = try Plist.write(.dictionary(snapshot), format: .xml)
        kept.withLock { $0 = input.count <= Self.keptSize ? (snapshot, input) : nil }
        return input
    }
}

/// Runs an exec provider once (SPEC section 5): the executable with the
/// argument `perform-update`, no shell, its container as working folder,
/// the previous snapshot as an XML plist on standard input, the TODAY_*
/// variables in its environment; standard output parsed as an XML plist
/// or a JSON object, under a time, memory and output limit.
///
/// A class: a widget keeps its provider from run to run, and each run
/// takes it from the widget's state, which for a struct of this size is a
/// copy of every field.
public final class ExecProvider: Sendable {
    public let widgetID: String
    public let executable: String
    public let container: String
    public let groupContainers: [(String, String)]
    public let busAddress: String?
    public let environment: [String: String]
    public let limits: ProviderLimits
    /// The argument list and environment as execve takes them, made once
    /// (a widget's provider is kept from run to run) and joined at each
    /// start: what providers share, made once for all of them, then this
    /// provider's own part.
    let launch: (arguments: [CStrings], environment: [CStrings])
    /// The variables this provider is given on top of the session's.
    let ownVariables: [(name: String, value: String)]
    /// The sandbox it runs in; nil: unconfined.
    public let sandbox: SandboxPlan?
    /// The executable's file when this provider was made.
    let executableFile: FileIdentity?
    /// The last standard input written, for the next run's previous
    /// snapshot, which is usually the same.
    let lastInput = LastInput()

    public init(
        widgetID: String, executable: String, container: String, groupContainers: [(String, String)],
        busAddress: String?, environment: [String: String], limits: ProviderLimits, sandbox: SandboxPlan? = nil,
        instanceVariables: [(String, String)] = []
    ) {
        self.widgetID = widgetID
        self.executable = executable
        self.container = container
        self.groupContainers = groupContainers
        self.busAddress = busAddress
        self.environment = environment
        self.limits = limits
        self.sandbox = sandbox
        executableFile = FileIdentity(of: executable)
        // What the provider sees: the session's environment, ours on top.
        var own = [
            ("TODAY_WIDGET_ID", widgetID), ("TODAY_CONTAINER", container),
            ("TODAY_GROUP_CONTAINERS", groupContainers.map { "\($0.0)=\($0.1)" }.joined(separator: ":")),
        ] + instanceVariables
        if let busAddress { own.append(("DBUS_SESSION_BUS_ADDRESS", busAddress)) }
        if sandbox != nil { own.append(("HOME", container)) }
        let ownVariables = own.map { (name: $0.0, value: $0.1) }
        self.ownVariables = ownVariables
        launch = (Self.launchArguments(executable, ["perform-update"], sandbox), Self.launchEnvironment(environment, ownVariables))
    }

    /// Whether the executable was replaced or changed since this provider
    /// was made (a new build copied over the old one): its sandbox, made
    /// from the old file's library folders, may no longer fit.
    var executableChanged: Bool { FileIdentity(of: executable) != executableFile }

    /// The program started: bwrap, when the provider runs sandboxed.
    var program: String { sandbox?.bwrap ?? executable }

    /// The provider's command line, inside its sandbox when it has one.
    static func commandLine(_ executable: String, _ arguments: [String], _ sandbox: SandboxPlan?) -> [String] {
        guard let sandbox else { return [executable] + arguments }
        return [sandbox.bwrap] + sandbox.arguments(command: [executable] + arguments)
    }

    /// The command line as launches hold it: a sandbox's system folders
    /// shared, the rest the provider's own.
    static func launchArguments(_ executable: String, _ arguments: [String], _ sandbox: SandboxPlan?) -> [CStrings] {
        guard let sandbox else { return [CStrings([executable] + arguments)] }
        return [
            SharedCStrings.shared.strings([sandbox.bwrap] + sandbox.systemArguments()),
            CStrings(sandbox.ownArguments(command: [executable] + arguments)),
        ]
    }

    /// The session's environment less the names the provider gets its own
    /// value of, shared; then those.
    static func launchEnvironment(_ session: [String: String], _ own: [(name: String, value: String)]) -> [CStrings] {
        let replaced = Set(own.map(\.name))
        let shared = session.filter { !replaced.contains($0.key) }.map { "\($0.key)=\($0.value)" }.sorted()
        return [SharedCStrings.shared.strings(shared), CStrings(own.map { "\($0.name)=\($0.value)" })]
    }

    /// What `perform-update` runs, for people to read (`run-provider --verbose`).
    public var updateCommandLine: [String] { Self.commandLine(executable, ["perform-update"], sandbox) }

    /// What a provider pressed for an action runs with (SPEC section 10):
    /// `perform-action <id>`, TODAY_ACTION_ID and, for a toggle,
    /// TODAY_ACTION_STATE, the state asked for.
    func actionLaunch(_ action: ProviderAction) -> (arguments: [CStrings], environment: [CStrings]) {
        var own = ownVariables
        own.append((name: "TODAY_ACTION_ID", value: action.id))
        if let state = action.state { own.append((name: "TODAY_ACTION_STATE", value: state ? "true" : "false")) }
        return (Self.launchArguments(executable, ["perform-action", action.id], sandbox), Self.launchEnvironment(environment, own))
    }

    /// Runs the provider on a thread of its own and returns what it gave.
    /// `log` receives standard error, line by line, bounded.
    public func run(
        previous: PlistDictionary, action: ProviderAction? = nil, running: RunningProviders, log: @escaping @Sendable (String) -> Void
    ) async -> ProviderOutcome {
        await withCheckedContinuation { continuation in
            Self.runners.run { [self] in
                continuation.resume(returning: runBlocking(previous: previous, action: action, running: running, log: log).outcome)
            }
        }
    }

    /// The threads that wait for providers: each run blocks one, and the
    /// queue's threads are reused from run to run.
    static let runners = BlockingThreads()

    /// One run: an update, or with `action` that action. Returns what it
    /// came to and how many bytes the provider wrote.
    public func runBlocking(
        previous: PlistDictionary, action: ProviderAction? = nil, running: RunningProviders, log: @escaping @Sendable (String) -> Void
    ) -> (outcome: ProviderOutcome, outputBytes: Int) {
        let request: ProviderRequest = action.map { .action($0) } ?? .update
        switch collect(request, previous: previous, running: running, log: log) {
        case .failed(let reason): return (.failed(reason), 0)
        case .output(let output): return (Self.parse(output), output.count)
        }
    }

    /// What a run beside updates and actions asks for (SPEC section 16).
    public enum ProviderRequest: Sendable, Equatable {
        case update
        case action(ProviderAction)
        /// An update for the gallery: TODAY_PREVIEW=1, sample data, fast.
        case preview
        /// `perform-options KEY`: a dynamic choice's values.
        case options(String)
    }

    /// What a run wrote on standard output, or why it came to nothing.
    public enum Collected: Sendable {
        case output(Data)
        case failed(FailureReason)
    }

    /// A preview answers within this, or is not shown.
    public static let previewTimeout = Duration.seconds(2)

    /// Runs the provider for `request` and returns what it wrote on
    /// standard output, or why it came to nothing.
    public func collect(
        _ request: ProviderRequest, previous: PlistDictionary, running: RunningProviders, log: @escaping @Sendable (String) -> Void
    ) -> Collected {
        let input: Data
        do {
            try DurableFile.makeFolder(container)
            input = try lastInput.encoding(previous)
        } catch {
            log("cannot prepare the provider: \(error)")
            return .failed(.noProvider)
        }
        var limits = self.limits
        let launch: (arguments: [CStrings], environment: [CStrings])
        switch request {
        case .update: launch = self.launch
        case .action(let action): launch = actionLaunch(action)
        case .preview:
            launch = (self.launch.arguments, Self.launchEnvironment(environment, ownVariables + [(name: "TODAY_PREVIEW", value: "1")]))
            limits.timeout = min(limits.timeout, Self.previewTimeout)
        case .options(let key):
            launch = (
                Self.launchArguments(executable, ["perform-options", key], sandbox),
                Self.launchEnvironment(environment, ownVariables + [(name: "TODAY_OPTIONS_KEY", value: key)])
            )
        }
        var child: SpawnedProcess
        running.starting()
        do {
            child = try SpawnedProcess(
                program, arguments: CStrings(joining: launch.arguments), directory: container,
                environment: CStrings(joining: launch.environment))
            child.confined = sandbox != nil
        } catch {
            running.started(nil, widgetID)
            log("cannot start \(executable): \(error)")
            return .failed(.noProvider)
        }
        let pid = child.pid
        running.started(pid, widgetID)
        let collected = child.communicate(input: input, limits: limits, log: log) {
            running.remove(pid)
        }
        switch collected.ending {
        case .killed(let reason): return .failed(reason)
        case .exited(0): return .output(collected.output)
        // bwrap exits with 128 + N when what it ran was ended by signal N.
        case .exited(let code) where sandbox != nil && (129...192).contains(code): return .failed(.signal(code - 128))
        case .exited(let code): return .failed(.exit(code))
        case .signaled(let number): return .failed(.signal(number))
        }
    }

    /// Reads a provider's answer: `{result, snapshot}` as an XML plist or
    /// a JSON object.
    public static func parse(_ output: Data) -> ProviderOutcome {
        let value: PlistValue
        do {
            guard !Plist.isBlank(output) else {
                return .failed(.badOutput("nothing on standard output"))
            }
            value = try Plist.read(output, limits: PlistLimits(maximumSize: 4 << 20, maximumDepth: 64), allowJSON: true)
        } catch {
            return .failed(.badOutput("\(error)"))
        }
        return outcome(of: value)
    }

    /// Checks the shape of an answer, however it arrived.
    public static func outcome(of value: PlistValue) -> ProviderOutcome {
        guard let answer = value.dictionary else {
            return .failed(.badOutput("the answer must be a dictionary with 'result' and 'snapshot'"))
        }
        let snapshot = answer["snapshot"]
        if let snapshot, snapshot.dictionary == nil {
            return .failed(.badOutput("'snapshot' must be a dictionary, not \(snapshot.typeName)"))
        }
        let result = answer["result"]?.string
        switch result.flatMap(UpdateResult.init(rawValue:)) {
        case .newData:
            if let timeline = answer["timeline"] {
                guard snapshot == nil else { return .failed(.badOutput("an answer has 'snapshot' or 'timeline', not both")) }
                do {
                    return .newData(try TimelineAnswer.parse(timeline: timeline, policy: answer["policy"]))
                } catch {
                    return .failed(.badOutput("\(error)"))
                }
            }
            guard let snapshot = snapshot?.dictionary else {
                return .failed(.badOutput("'new-data' needs a 'snapshot' dictionary or a 'timeline'"))
            }
            if let problem = Snapshot.problem(in: snapshot) { return .failed(.badOutput("\(problem)")) }
            do {
                var timeline = TimelineAnswer(snapshot: try SnapshotRules.stored(snapshot))
                if let policy = answer["policy"] { timeline.policy = try TimelineAnswer.policy(policy) }
                return .newData(timeline)
            } catch {
                return .failed(.badOutput("\(error)"))
            }
        case .noData: return .noData
        case .failed: return .failed(.reported)
        case nil:
            return .failed(.badOutput("'result' must be new-data, no-data or failed, not \(result.map { "'\($0)'" } ?? "missing")"))
        }
    }
}
