import FoundationEssentials
import Glibc
import PropertyList
import Synchronization

/// What a provider run came to.
public enum ProviderOutcome: Sendable, Equatable {
    /// New entries: a snapshot alone is one entry, dated when it arrives.
    case newData(TimelineAnswer)
    case noData
    /// The reason is what `LastFailure` shows: `timeout`, `memory-limit`,
    /// `exit 3`, `signal 11`, `bad-output: …`, `too-large`, `no-provider`,
    /// `reported`.
    case failed(String)

    public var result: String {
        switch self {
        case .newData: "new-data"
        case .noData: "no-data"
        case .failed: "failed"
        }
    }

    public var failure: String {
        if case .failed(let reason) = self { reason } else { "" }
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
        for pid in table.withLock({ Array($0.widgets.keys) }) { kill(-pid, SIGKILL) }
    }
}

/// Runs an exec provider once (SPEC section 5): the executable with the
/// argument `perform-update`, no shell, its container as working folder,
/// the previous snapshot as an XML plist on standard input, the TODAY_*
/// variables in its environment; standard output parsed as an XML plist
/// or a JSON object, under a time, memory and output limit.
public struct ExecProvider: Sendable {
    public let widgetID: String
    public let executable: String
    public let container: String
    public let groupContainers: [(String, String)]
    public let busAddress: String?
    public let environment: [String: String]
    public let limits: ProviderLimits
    /// The argument list and environment as execve takes them, made
    /// once: a widget's provider is kept from run to run.
    let launch: (arguments: CStrings, environment: CStrings)
    /// The environment it runs with, for the launch of an action.
    let variables: [String: String]
    /// The sandbox it runs in; nil: unconfined.
    public let sandbox: SandboxPlan?

    public init(
        widgetID: String, executable: String, container: String, groupContainers: [(String, String)],
        busAddress: String?, environment: [String: String], limits: ProviderLimits, sandbox: SandboxPlan? = nil
    ) {
        self.widgetID = widgetID
        self.executable = executable
        self.container = container
        self.groupContainers = groupContainers
        self.busAddress = busAddress
        self.environment = environment
        self.limits = limits
        self.sandbox = sandbox
        // What the provider sees: the session's environment, ours on top.
        var variables = environment
        variables["TODAY_WIDGET_ID"] = widgetID
        variables["TODAY_CONTAINER"] = container
        variables["TODAY_GROUP_CONTAINERS"] = groupContainers.map { "\($0.0)=\($0.1)" }.joined(separator: ":")
        if let busAddress { variables["DBUS_SESSION_BUS_ADDRESS"] = busAddress }
        if sandbox != nil { variables["HOME"] = container }
        self.variables = variables
        launch = (CStrings(Self.commandLine(executable, ["perform-update"], sandbox)), CStrings(variables.map { "\($0.key)=\($0.value)" }))
    }

    /// The program started: bwrap, when the provider runs sandboxed.
    var program: String { sandbox?.bwrap ?? executable }

    /// The provider's command line, inside its sandbox when it has one.
    static func commandLine(_ executable: String, _ arguments: [String], _ sandbox: SandboxPlan?) -> [String] {
        guard let sandbox else { return [executable] + arguments }
        return [sandbox.bwrap] + sandbox.arguments(command: [executable] + arguments)
    }

    /// What `perform-update` runs, for people to read (`run-provider --verbose`).
    public var updateCommandLine: [String] { Self.commandLine(executable, ["perform-update"], sandbox) }

    /// What a provider pressed for an action runs with (SPEC section 10):
    /// `perform-action <id>`, TODAY_ACTION_ID and, for a toggle,
    /// TODAY_ACTION_STATE, the state asked for.
    func actionLaunch(_ action: ProviderAction) -> (arguments: CStrings, environment: CStrings) {
        var variables = variables
        variables["TODAY_ACTION_ID"] = action.id
        if let state = action.state { variables["TODAY_ACTION_STATE"] = state ? "true" : "false" }
        return (CStrings(Self.commandLine(executable, ["perform-action", action.id], sandbox)), CStrings(variables.map { "\($0.key)=\($0.value)" }))
    }

    /// Runs the provider on a thread of its own and returns what it gave.
    /// `log` receives standard error, line by line, bounded.
    public func run(
        previous: PlistDictionary, action: ProviderAction? = nil, running: RunningProviders, log: @escaping @Sendable (String) -> Void
    ) async -> ProviderOutcome {
        await withCheckedContinuation { continuation in
            Self.runners.run {
                continuation.resume(returning: runBlocking(previous: previous, action: action, running: running, log: log))
            }
        }
    }

    /// The threads that wait for providers: each run blocks one, and the
    /// queue's threads are reused from run to run.
    static let runners = BlockingThreads()

    /// One run: an update, or with `action` that action.
    public func runBlocking(
        previous: PlistDictionary, action: ProviderAction? = nil, running: RunningProviders, log: @escaping @Sendable (String) -> Void
    ) -> ProviderOutcome {
        let input: Data
        do {
            try DurableFile.makeFolder(container)
            input = try Plist.write(.dictionary(previous), format: .xml)
        } catch {
            log("cannot prepare the provider: \(error)")
            return .failed("no-provider")
        }
        var child: SpawnedProcess
        running.starting()
        do {
            let launch = action.map(actionLaunch) ?? launch
            child = try SpawnedProcess(program, arguments: launch.arguments, directory: container, environment: launch.environment)
            child.confined = sandbox != nil
        } catch {
            running.started(nil, widgetID)
            log("cannot start \(executable): \(error)")
            return .failed("no-provider")
        }
        let pid = child.pid
        running.started(pid, widgetID)
        let collected = child.communicate(input: input, limits: limits, log: log) {
            running.remove(pid)
        }
        switch collected.ending {
        case .killed(let reason): return .failed(reason)
        case .exited(0): return Self.parse(collected.output)
        // bwrap exits with 128 + N when what it ran was ended by signal N.
        case .exited(let code) where sandbox != nil && (129...192).contains(code): return .failed("signal \(code - 128)")
        case .exited(let code): return .failed("exit \(code)")
        case .signaled(let number): return .failed("signal \(number)")
        }
    }

    /// Reads a provider's answer: `{result, snapshot}` as an XML plist or
    /// a JSON object.
    public static func parse(_ output: Data) -> ProviderOutcome {
        let value: PlistValue
        do {
            guard output.contains(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else {
                return .failed("bad-output: nothing on standard output")
            }
            value = try Plist.read(output, limits: PlistLimits(maximumSize: 4 << 20, maximumDepth: 64), allowJSON: true)
        } catch {
            return .failed("bad-output: \(error)")
        }
        return outcome(of: value)
    }

    /// Checks the shape of an answer, however it arrived.
    public static func outcome(of value: PlistValue) -> ProviderOutcome {
        guard let answer = value.dictionary else {
            return .failed("bad-output: the answer must be a dictionary with 'result' and 'snapshot'")
        }
        let snapshot = answer["snapshot"]
        if let snapshot, snapshot.dictionary == nil {
            return .failed("bad-output: 'snapshot' must be a dictionary, not \(snapshot.typeName)")
        }
        switch answer["result"]?.string {
        case "new-data":
            if let timeline = answer["timeline"] {
                guard snapshot == nil else { return .failed("bad-output: an answer has 'snapshot' or 'timeline', not both") }
                do {
                    return .newData(try TimelineAnswer.parse(timeline: timeline, policy: answer["policy"]))
                } catch {
                    return .failed("bad-output: \(error)")
                }
            }
            guard let snapshot = snapshot?.dictionary else {
                return .failed("bad-output: 'new-data' needs a 'snapshot' dictionary or a 'timeline'")
            }
            if let problem = Snapshot.problem(snapshot) { return .failed("bad-output: \(problem)") }
            do {
                var timeline = TimelineAnswer(snapshot: try Snapshot.stored(snapshot))
                if let policy = answer["policy"] { timeline.policy = try TimelineAnswer.policy(policy) }
                return .newData(timeline)
            } catch {
                return .failed("bad-output: \(error)")
            }
        case "no-data": return .noData
        case "failed": return .failed("reported")
        case let other:
            return .failed("bad-output: 'result' must be new-data, no-data or failed, not \(other.map { "'\($0)'" } ?? "missing")")
        }
    }
}

/// The rules a snapshot follows (SPEC section 2).
public enum Snapshot {
    public struct Unstorable: Error, CustomStringConvertible {
        public var description: String
    }

    /// The snapshot as todayd keeps it: every date to its whole second
    /// (rounded down), since the cache is an XML property list, which keeps
    /// no fraction, so the snapshot published now and the one read back
    /// after a restart are equal. A date before 1970 cannot be published
    /// (D-Bus `t` counts from 1970) and is refused, naming its key.
    public static func stored(_ snapshot: PlistDictionary) throws -> PlistDictionary {
        guard case .dictionary(let result) = try stored(.dictionary(snapshot), at: "") else { return snapshot }
        return result
    }

    /// The cache is XML, which cannot hold control characters other than
    /// tab, line feed and carriage return, nor U+FFFE and U+FFFF.
    private static func storable(_ text: String, at path: String) throws {
        guard let bad = text.unicodeScalars.first(where: { ($0.value < 0x20 && !["\t", "\n", "\r"].contains($0)) || $0.value == 0xFFFE || $0.value == 0xFFFF })
        else { return }
        throw Unstorable(
            description: "snapshot key '\(path.prefix(100))' holds the control character U+\(String(bad.value, radix: 16, uppercase: true)), which todayd cannot store")
    }

    private static func stored(_ value: PlistValue, at path: String) throws -> PlistValue {
        switch value {
        case .date(let date):
            let seconds = date.timeIntervalSince1970.rounded(.down)
            guard seconds >= 0 else {
                throw Unstorable(
                    description: "snapshot key '\(path)' holds a date before 1970 (\(seconds) s), which D-Bus cannot carry")
            }
            return .date(Date(timeIntervalSince1970: seconds))
        case .string(let text):
            try storable(text, at: path)
            return value
        case .array(let elements):
            return .array(try elements.enumerated().map { try stored($0.element, at: "\(path)[\($0.offset)]") })
        case .dictionary(let dictionary):
            var result = PlistDictionary()
            for (key, element) in dictionary {
                let at = path.isEmpty ? key : "\(path).\(key)"
                try storable(key, at: at)
                result[key] = try stored(element, at: at)
            }
            return .dictionary(result)
        default:
            return value
        }
    }

    public static let maximumSize = 4 << 20
    public static let maximumImage = 1 << 20
    public static let maximumActions = 8

    /// A button or toggle a snapshot offers (SPEC section 10).
    public struct Action: Sendable, Equatable {
        public var id: String
        public var isToggle: Bool
        /// A toggle's current state.
        public var state: Bool
    }

    /// The actions the snapshot offers, in order.
    public static func actions(of snapshot: PlistDictionary) -> [Action] {
        (snapshot["actions"]?.array ?? []).compactMap { value in
            guard let id = value["id"]?.string else { return nil }
            return Action(id: id, isToggle: value["kind"]?.string == "toggle", state: value["state"]?.bool ?? false)
        }
    }

    /// The snapshot with toggle `id` set to `state`.
    public static func setting(_ id: String, to state: Bool, in snapshot: PlistDictionary) -> PlistDictionary {
        guard let list = snapshot["actions"]?.array else { return snapshot }
        var result = snapshot
        result["actions"] = .array(
            list.map { value in
                guard var action = value.dictionary, action["id"]?.string == id else { return value }
                action["state"] = .boolean(state)
                return .dictionary(action)
            })
        return result
    }

    static func isValidActionID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "." || $0 == "_" || $0 == "-" }
    }

    /// Why the snapshot's `actions`, or the `action` of one of its items,
    /// break SPEC section 10's rules, or nil.
    static func actionProblem(_ snapshot: PlistDictionary) -> String? {
        var ids = Set<String>()
        if let value = snapshot["actions"] {
            guard let list = value.array, list.allSatisfy({ $0.dictionary != nil }) else {
                return "snapshot key 'actions' must be an array of dictionaries, not \(value.typeName)"
            }
            guard list.count <= maximumActions else { return "snapshot offers \(list.count) actions; at most \(maximumActions)" }
            for (index, action) in list.enumerated() {
                let at = "actions[\(index)]"
                guard let id = action["id"]?.string, isValidActionID(id) else {
                    return "\(at).id must be 1 to 64 characters of A-Z a-z 0-9 . _ -"
                }
                guard ids.insert(id).inserted else { return "\(at).id '\(id)' is used twice" }
                guard action["title"]?.string != nil else { return "\(at) ('\(id)') needs a 'title' string" }
                switch action["kind"]?.string {
                case "button": break
                case "toggle":
                    guard action["state"]?.bool != nil else { return "\(at) ('\(id)') is a toggle and needs a boolean 'state'" }
                default: return "\(at).kind must be 'button' or 'toggle'"
                }
                for key in ["icon-name", "accessibility-label"] {
                    if let extra = action[key], extra.string == nil { return "\(at).\(key) must be a string, not \(extra.typeName)" }
                }
            }
        }
        for (index, item) in (snapshot["items"]?.array ?? []).enumerated() {
            guard let named = item["action"] else { continue }
            guard let id = named.string, ids.contains(id) else {
                return "items[\(index)].action must name one of the snapshot's actions"
            }
        }
        return nil
    }

    /// Why a snapshot cannot be published, or nil.
    public static func problem(_ snapshot: PlistDictionary) -> String? {
        let typed: [(String, String, (PlistValue) -> Bool)] = [
            ("title", "a string", { $0.string != nil }), ("subtitle", "a string", { $0.string != nil }),
            ("body", "a string", { $0.string != nil }), ("image-path", "a string", { $0.string != nil }),
            ("url", "a string", { $0.string != nil }), ("accessibility-label", "a string", { $0.string != nil }),
            ("image", "data", { $0.data != nil }),
            ("items", "an array of dictionaries", { $0.array?.allSatisfy { $0.dictionary != nil } ?? false }),
        ]
        for (key, kind, check) in typed {
            if let value = snapshot[key], !check(value) { return "snapshot key '\(key)' must be \(kind), not \(value.typeName)" }
        }
        if let problem = actionProblem(snapshot) { return problem }
        if let image = snapshot["image"]?.data, image.count > maximumImage {
            return "snapshot image is \(image.count) bytes, over the limit of \(maximumImage)"
        }
        if let encoded = try? Plist.write(.dictionary(snapshot), format: .binary), encoded.count > maximumSize {
            return "snapshot is \(encoded.count) bytes encoded, over the limit of \(maximumSize)"
        }
        return nil
    }
}
