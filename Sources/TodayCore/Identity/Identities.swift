import DBus
import FoundationEssentials
import Glibc
import Synchronization
import TodayProtocol

/// Who is calling (SPEC section 7). Credentials come from the bus and are
/// kept per connection until it goes away; a connection's bundle is, in
/// order: the widget of a provider todayd started (the caller's process or
/// an ancestor of it is a provider not yet reaped), the app id of a Flatpak
/// sandbox, or the bundle it named with RegisterApp.
public final class Identities: Sendable {
    public let userID: UInt32
    /// Where `/proc` is; tests point it at a fixture tree.
    public let procRoot: String
    public let providers: RunningProviders
    private let table = Mutex(Table())

    private struct Table {
        var credentials: [String: Connection.Credentials] = [:]
        /// What a connection's process is, once known for good: a
        /// connection keeps its process for its whole life.
        var processes: [String: Caller] = [:]
        var registered: [String: String] = [:]
        /// Unique names in the order they registered.
        var order: [String] = []
    }

    public init(userID: UInt32 = getuid(), procRoot: String = "/proc", providers: RunningProviders) {
        self.userID = userID
        self.procRoot = procRoot
        self.providers = providers
    }

    /// The gate for every call: callers of another user are refused.
    /// `fireAndForget`: objects whose callers may leave before they can be
    /// asked who they are (a GApplication sends its notification and
    /// exits): a call from a connection that has already left the bus is
    /// taken there, as the bus admitted it; one whose user is known to be
    /// another is refused as everywhere.
    public func gate(on connection: Connection, fireAndForget: Set<ObjectPath> = []) -> ObjectServer.Gate {
        { [self] message in
            guard let sender = message.sender else { return .allow }
            if let known = table.withLock({ $0.credentials[sender] }) {
                return known.userID == userID ? .allow : .deny(Self.foreignUser)
            }
            let lenient = message.path.map(fireAndForget.contains) ?? false
            return .ask { [self] in
                do {
                    let credentials = try await self.credentials(of: sender, on: connection)
                    return credentials.userID == userID ? nil : Self.foreignUser
                } catch let error as DBusError where lenient && error.name == .nameHasNoOwner {
                    return nil
                } catch {
                    return DBusError(.accessDenied, "cannot tell who is calling: \(error)")
                }
            }
        }
    }

    static let foreignUser = DBusError(.accessDenied, "todayd serves only the user it runs as")

    func credentials(of sender: String, on connection: Connection) async throws -> Connection.Credentials {
        if let known = table.withLock({ $0.credentials[sender] }) { return known }
        let fetched = try await connection.credentials(of: sender)
        table.withLock { $0.credentials[sender] = fetched }
        return fetched
    }

    /// Forgets a connection that left the bus.
    public func forget(_ uniqueName: String) {
        table.withLock { table in
            table.credentials[uniqueName] = nil
            table.processes[uniqueName] = nil
            table.registered[uniqueName] = nil
            table.order.removeAll { $0 == uniqueName }
        }
    }

    /// How a caller is known.
    public enum Caller: Equatable, Sendable {
        case provider(String)
        case flatpak(String)
        case registered(String)
        case anonymous

        public var bundleID: String? {
            switch self {
            case .provider(let id), .flatpak(let id), .registered(let id): id
            case .anonymous: nil
            }
        }
    }

    /// Who the caller of `call` is, where that is known without asking the
    /// bus or waiting for a provider being started (its credentials are
    /// kept, and its process is known for good); nil where `caller(of:)`
    /// has to find out. It answers as `caller(of:)` would.
    func knownCaller(of call: MethodCall) -> Caller? {
        let sender = call.sender
        return table.withLock { table -> Caller? in
            guard let credentials = table.credentials[sender], credentials.userID == userID, let process = table.processes[sender] else {
                return nil
            }
            if process != .anonymous { return process }
            return table.registered[sender].map(Caller.registered) ?? .anonymous
        }
    }

    /// Who the caller of `call` is: without a suspension where it is
    /// known already (`knownCaller`).
    public func caller(of call: MethodCall) async throws -> Caller {
        if let known = knownCaller(of: call) { return known }
        let sender = call.sender
        let credentials = try await self.credentials(of: sender, on: call.connection)
        guard credentials.userID == userID else { throw Self.foreignUser }
        if let known = table.withLock({ $0.processes[sender] }) {
            if known != .anonymous { return known }
        } else if let pid = credentials.processID {
            // A provider not yet recorded can be starting: only an answer
            // given while none is starting is kept for the connection.
            let settled = !providers.isStarting
            var found = Caller.anonymous
            if let widget = await provider(startedAs: pid_t(pid)) {
                found = .provider(widget)
            } else if let app = flatpakAppID(of: pid_t(pid)) {
                found = .flatpak(app)
            }
            if found != .anonymous || settled { table.withLock { $0.processes[sender] = found } }
            if found != .anonymous { return found }
        }
        if let bundle = table.withLock({ $0.registered[sender] }) { return .registered(bundle) }
        return .anonymous
    }

    /// The widget whose running provider is `pid` or an ancestor of it. A
    /// provider can call todayd between being started and todayd recording
    /// its pid; while one is being started, look again for up to 5 s.
    func provider(startedAs pid: pid_t) async -> String? {
        // The record follows the spawn at once; on a loaded machine that
        // can take a while, so the wait is bounded by time, not by turns.
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if let widget = provider(for: pid) { return widget }
            guard providers.isStarting else { return nil }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return provider(for: pid)
    }

    /// The widget whose running provider is `pid` or an ancestor of it.
    func provider(for pid: pid_t) -> String? {
        var current = pid
        for _ in 0..<64 where current > 1 {
            if let widget = providers.widget(forProcess: current) { return widget }
            guard let parent = parentProcess(of: current) else { return nil }
            current = parent
        }
        return nil
    }

    func parentProcess(of pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "\(procRoot)/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state, then the parent's pid.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    /// The app id of a Flatpak sandbox, from `/proc/<pid>/root/.flatpak-info`.
    public func flatpakAppID(of pid: pid_t) -> String? {
        guard let text = try? String(contentsOfFile: "\(procRoot)/\(pid)/root/.flatpak-info", encoding: .utf8) else {
            return nil
        }
        var inApplication = false
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingSpaces()
            if trimmed.hasPrefix("[") {
                inApplication = trimmed == "[Application]"
            } else if inApplication, trimmed.hasPrefix("name=") {
                let name = String(trimmed.dropFirst(5))
                return name.isEmpty ? nil : name
            }
        }
        return nil
    }

    /// Binds the caller's connection to `bundleID`, once.
    public func register(_ call: MethodCall, as bundleID: String, installed: (String) -> Bool) async throws {
        switch try await caller(of: call) {
        case .flatpak(let app):
            throw TodayError.notAllowed("a Flatpak app is known by its app id ('\(app)'); it need not and may not call RegisterApp")
        case .provider(let widget):
            throw TodayError.alreadyRegistered("this process runs as the provider of '\(widget)'")
        case .registered(let existing):
            throw TodayError.alreadyRegistered("this connection is already registered as '\(existing)'; open a new connection to be another bundle")
        case .anonymous:
            guard installed(bundleID) else { throw TodayError.noSuchBundle(bundleID) }
            let bound = table.withLock { table -> String? in
                if let existing = table.registered[call.sender] { return existing }
                table.registered[call.sender] = bundleID
                table.order.append(call.sender)
                return nil
            }
            if let bound {
                throw TodayError.alreadyRegistered("this connection is already registered as '\(bound)'")
            }
        }
    }

    /// Registered connections and their bundles, oldest registration first.
    public var registrations: [(connection: String, bundle: String)] {
        table.withLock { table in table.order.compactMap { name in table.registered[name].map { (name, $0) } } }
    }

    /// Connections registered as one of `bundles`, for signals sent only
    /// to them.
    public func connections(registeredAs bundles: Set<String>) -> [String] {
        table.withLock { table in table.registered.filter { bundles.contains($0.value) }.map(\.key) }
    }
}
