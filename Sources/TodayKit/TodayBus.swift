import DBus
import Foundation
import Synchronization
import PropertyList
import TodayProtocol

/// The one connection TodayKit uses, to the bus in
/// DBUS_SESSION_BUS_ADDRESS, registered (RegisterApp) as this process's
/// bundle the first time a call needs an identity.
final class TodayBus: Sendable {
    static let shared = TodayBus()

    private let state = Mutex<(connection: Connection?, registered: Bool)>((nil, false))

    func connection() throws -> Connection {
        try state.withLock { state in
            if let connection = state.connection, connection.isOpen { return connection }
            guard let address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
                throw TodayKitError.noBus
            }
            let connection = try Connection(address: address)
            state = (connection, false)
            return connection
        }
    }

    /// Whether the connection is open and registered already, so that a
    /// call needs no RegisterApp first.
    var isRegistered: Bool { state.withLock { $0.registered && $0.connection?.isOpen == true } }

    /// A todayd that started after the registration does not know it (a
    /// process that outlives todayd, such as a provider on the bus):
    /// where a call was answered NotRegistered, the next registers again.
    /// True when `error` was that answer.
    func forgetRegistration(after error: any Error) -> Bool {
        guard let error = error as? DBusError, error.name.rawValue.hasSuffix(".NotRegistered") else { return false }
        state.withLock { $0.registered = false }
        return true
    }

    /// The connection, registered as this process's bundle (a provider
    /// todayd started is known by its process, and its RegisterApp is
    /// answered AlreadyRegistered).
    func registeredConnection() throws -> Connection {
        let connection = try connection()
        let needsRegistration = state.withLock { !$0.registered }
        if needsRegistration {
            guard let id = TodayBundle.main.bundleIdentifier else { throw TodayKitError.unknownBundle }
            do {
                try connection.callBlocking(
                    Today.busName, path: Today.managerPath, interface: Today.center.name, Today.Center.registerApp, try Self.bundleID(id))
            } catch let error as DBusError where error.name.rawValue.hasSuffix(".AlreadyRegistered") {
                // A provider todayd started is known by its process already.
            }
            state.withLock { $0.registered = true }
        }
        return connection
    }

    /// `text` as a bundle id, or the error that says why it is not one.
    static func bundleID(_ text: String) throws -> BundleID {
        guard let id = BundleID(rawValue: text) else { throw TodayKitError.service(BundleID.problem(text)) }
        return id
    }

    /// Calls a method of the manager object's Center interface, as this
    /// bundle (`registered`) or as any caller.
    @discardableResult
    func center<each Input: DBusArgument>(
        _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input, registered: Bool = true
    ) throws -> Message {
        let call = {
            let connection = registered ? try self.registeredConnection() : try self.connection()
            return try connection.callBlocking(Today.busName, path: Today.managerPath, interface: Today.center.name, method, repeat each inputs)
        }
        do {
            return try call()
        } catch where registered && forgetRegistration(after: error) {
            // todayd restarted since this process registered: once more, registering first.
            return try call()
        }
    }
}

/// Why a TodayKit call could not be made.
public enum TodayKitError: Error, CustomStringConvertible {
    case noBus
    case unknownBundle
    case service(String)

    public var description: String {
        switch self {
        case .noBus: "no session bus: DBUS_SESSION_BUS_ADDRESS is not set"
        case .unknownBundle:
            "cannot tell which bundle this process is: run it from inside its .app bundle, or set TODAY_BUNDLE_ID"
        case .service(let message): message
        }
    }
}

/// The bundle this process runs from, like `Bundle.main`: the
/// `Info.plist` next to the executable (an app) or, for a provider, the id
/// todayd gave it. `TODAY_BUNDLE_ID` overrides both.
public struct TodayBundle: Sendable {
    public static let main = TodayBundle()

    public let bundleIdentifier: String?
    /// The bundle's folder (`…/AgostiniTech.app`), when the process runs from one.
    public let bundlePath: String?

    init() {
        let environment = ProcessInfo.processInfo.environment
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        var folder = executable.deletingLastPathComponent()
        var found: (String, String)?
        for _ in 0..<3 {
            let info = folder.appendingPathComponent("Info.plist").path
            if let value = try? Plist.read(contentsOf: info), let id = value["CFBundleIdentifier"]?.string {
                found = (id, folder.path)
                break
            }
            folder = folder.deletingLastPathComponent()
        }
        bundleIdentifier = environment["TODAY_BUNDLE_ID"] ?? environment["TODAY_WIDGET_ID"] ?? found?.0
        bundlePath = found?.1
    }

    /// A file inside the bundle, like `Bundle.main.path(forResource:ofType:)`.
    public func path(forResource name: String, ofType type: String) -> String? {
        guard let bundlePath else { return nil }
        let path = bundlePath + "/" + name + (type.isEmpty ? "" : "." + type)
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }
}
