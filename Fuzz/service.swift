// libFuzzer target: bytes -> dbus_message_demarshal -> todayd's handlers.
//
// Once, before the first input: a private dbus-daemon; todayd's service in
// this process, owning io.github.todayd.Today1, with its XDG folders in a
// temporary folder and one app there (a URL scheme, an app group, a widget
// whose provider is a shell script); and a client connection. Every input
// libdbus accepts as a method call goes from the client to the service, and
// must be answered, with a reply or a named error, within the time limit:
// a call left unanswered stops the run as a finding.
//
//   TODAY_FUZZ_SEEDS=DIR service     writes the seed corpus (a call of every
//                                    method todayd serves) to DIR and exits
//   TODAY_FUZZ_VERBOSE=1 service FILE...
//                                    prints the answer to each input
import CDBus
import Foundation
import Glibc
import Synchronization

private let appID = "org.example.fuzz"
private let widgetID = appID + ".Clock"
private let groupID = "group.org.example.fuzz"

/// What every input is sent through, set up once.
private final class Fixture: Sendable {
    let root: String
    let bus: BusDaemon
    let service: TodayService
    let client: Connection

    init() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("todayd-fuzz-\(getpid())").path
        for folder in ["data/todayd/bundles", "config", "cache", "state", "home"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        try Fixture.writeApp(in: root + "/data/todayd/bundles")
        let environment = [
            "HOME": root + "/home", "XDG_DATA_HOME": root + "/data", "XDG_DATA_DIRS": root + "/none",
            "XDG_CONFIG_HOME": root + "/config", "XDG_CONFIG_DIRS": root + "/none",
            "XDG_CACHE_HOME": root + "/cache", "XDG_STATE_HOME": root + "/state", "PATH": "/usr/bin:/bin",
        ]
        self.root = root
        bus = try BusDaemon()
        let connection = try Connection(address: bus.address)
        service = TodayService(
            connection: connection, directories: Directories(environment: environment), log: Logger(verbose: false),
            environment: environment, busAddress: bus.address)
        service.reload()
        client = try Connection(address: bus.address)
        let ready = DispatchSemaphore(value: 0)
        let failure = Mutex<(any Error)?>(nil)
        Task { [service] in
            do {
                try await service.start()
                _ = try await connection.requestName(Today.busName, flags: [.doNotQueue])
            } catch {
                failure.withLock { $0 = error }
            }
            ready.signal()
        }
        ready.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private static func writeApp(in folder: String) throws {
        func write(_ value: PlistDictionary, _ path: String) throws {
            try Plist.write(.dictionary(value), format: .xml).write(to: URL(fileURLWithPath: path))
        }
        func script(_ text: String, _ path: String) throws {
            try Data(("#!/bin/sh\n" + text + "\n").utf8).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o755)
        }
        let app = folder + "/Fuzz.app"
        let appex = app + "/PlugIns/Clock.appex"
        try FileManager.default.createDirectory(atPath: appex, withIntermediateDirectories: true)
        try write(
            [
                "CFBundleIdentifier": .string(appID), "CFBundleVersion": .string("1"),
                "CFBundleExecutable": .string("fuzz-app"),
                "CFBundleURLTypes": .array([.dictionary(["CFBundleURLSchemes": .array([.string("fuzz")])])]),
            ], app + "/Info.plist")
        try script("exit 0", app + "/fuzz-app")
        try write(["com.apple.security.application-groups": .array([.string(groupID)])], app + "/Entitlements.plist")
        try write(
            [
                "CFBundleIdentifier": .string(widgetID), "CFBundleDisplayName": .string("Clock"),
                "CFBundleVersion": .string("1"), "CFBundleExecutable": .string("provider"),
                "NSExtension": .dictionary([
                    "NSExtensionPointIdentifier": .string("com.apple.widget-extension"),
                    "NSExtensionPrincipalClass": .string("TodayViewController"),
                    "NSExtensionAttributes": .dictionary(["TodayUpdateTimeout": .integer(2)]),
                ]),
            ], appex + "/Info.plist")
        try script(#"echo '{"result": "new-data", "snapshot": {"title": "Clock"}}'"#, appex + "/provider")
        try write(["com.apple.security.application-groups": .array([.string(groupID)])], appex + "/Entitlements.plist")
    }

    /// Stops the bus and removes the temporary folder, when the run ends.
    func tearDown() {
        client.close()
        bus.stop()
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Sends `message` to the service and waits for its answer.
    func answer(_ message: MessageHandle) -> Result<Message, any Error> {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Message, any Error>?>(nil)
        client.send(message, timeout: .seconds(8)) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 } ?? .failure(DBusError.failed("no outcome"))
    }
}

private nonisolated(unsafe) var fixture: Fixture?
private let verbose = ProcessInfo.processInfo.environment["TODAY_FUZZ_VERBOSE"] != nil

@_cdecl("LLVMFuzzerInitialize")
public func initializeServiceFuzzing(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    signal(SIGPIPE, SIG_IGN)
    if let folder = ProcessInfo.processInfo.environment["TODAY_FUZZ_SEEDS"] {
        do {
            try writeSeeds(to: folder)
            _exit(0)  // no leak report for the process's lasting globals
        } catch {
            fputs("cannot write seeds: \(error)\n", stderr)
            exit(1)
        }
    }
    do {
        fixture = try Fixture()
        atexit { fixture?.tearDown() }
    } catch {
        fputs("cannot start the service: \(error)\n", stderr)
        exit(1)
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzService(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard let fixture else { return 0 }
    var invalid = CDBus.DBusError()
    dbus_error_init(&invalid)
    defer { dbus_error_free(&invalid) }
    let raw = bytes.withMemoryRebound(to: CChar.self, capacity: count) { dbus_message_demarshal($0, Int32(count), &invalid) }
    guard let raw else { return 0 }
    defer { dbus_message_unref(raw) }
    // A call as the fuzzer wrote it, to todayd, expecting a reply; the copy
    // takes a fresh serial when it is sent.
    guard dbus_message_get_type(raw) == DBUS_MESSAGE_TYPE_METHOD_CALL, let copy = dbus_message_copy(raw) else { return 0 }
    let message = MessageHandle(owning: copy)
    guard dbus_message_set_destination(copy, Today.busName.rawValue) != 0 else { return 0 }
    dbus_message_set_no_reply(copy, 0)
    dbus_message_set_auto_start(copy, 0)
    let answer = fixture.answer(message)
    if verbose {
        let interface = dbus_message_get_interface(copy).map { String(cString: $0) } ?? "-"
        let call = interface + "." + (dbus_message_get_member(copy).map { String(cString: $0) } ?? "-")
        switch answer {
        case .success(let reply): print("\(call) -> \(reply.error.map { "\($0)" } ?? "\(reply.body)")")
        case .failure(let error): print("\(call) -> \(error)")
        }
    }
    let error: DBusError?
    switch answer {
    case .success(let reply): error = reply.error
    case .failure(let failure): error = failure as? DBusError
    }
    if let error, error.name == .noReply || error.name == .disconnected {
        fputs("todayd left a call unanswered: \(error)\n", stderr)
        fixture.tearDown()  // abort() skips atexit: stop the bus first
        abort()
    }
    return 0
}

/// One call of every method todayd serves, with arguments that name the
/// fixture's app, widget and group, as marshalled messages.
private func writeSeeds(to folder: String) throws {
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    func argument(_ name: String, _ signature: String) -> Value {
        switch (name, signature) {
        case ("widget_id", _): .string(widgetID)
        case ("bundle_id", _): .string(appID)
        case ("group_id", _): .string(groupID)
        case ("url", _): .string("fuzz://open?post=3")
        case ("key", _): .string("count")
        case (_, "s"): .string("x")
        case (_, "b"): .boolean(true)
        case (_, "v"): .variant(.int64(3))
        case (_, "as"): .strings(["gone"])
        case (_, "a{sv}"): .vardict([("count", .int64(4)), ("title", .string("Hi"))])
        default: .string("")
        }
    }
    var calls: [(ObjectPath, InterfaceName?, MemberName, [Value])] = []
    let objects: [(ObjectPath, Interface)] = [
        (Today.managerPath, Today.center), (Today.widgetPath(widgetID), Today.widget), (Today.groupPath(groupID), Today.group),
    ]
    for (path, interface) in objects {
        for method in interface.methods {
            calls.append((path, interface.name, method.name, method.inputs.map { argument($0.name, $0.type.signature) }))
        }
        calls.append((path, .properties, MemberName("GetAll"), [.string(interface.name.rawValue)]))
        calls.append((path, .introspectable, MemberName("Introspect"), []))
    }
    calls.append((Today.widgetPath(widgetID), .properties, MemberName("Get"), [.string(Today.widget.name.rawValue), .string("HasContent")]))
    calls.append((Today.managerPath, .objectManager, MemberName("GetManagedObjects"), []))
    calls.append((Today.managerPath, .peer, MemberName("Ping"), []))
    for (number, (path, interface, member, arguments)) in calls.enumerated() {
        let message = try MessageHandle.methodCall(
            destination: Today.busName.rawValue, path: path, interface: interface, member: member)
        try message.append(arguments)
        dbus_message_set_serial(message.pointer, UInt32(number + 1))
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message.pointer, &buffer, &length) != 0, let buffer else {
            throw DBusError.failed("cannot marshal \(member)")
        }
        defer { dbus_free(buffer) }
        let data = Data(bytes: buffer, count: Int(length))
        let name = (number < 10 ? "call-0" : "call-") + "\(number)-\(member.rawValue)"
        try data.write(to: URL(fileURLWithPath: folder + "/" + name))
    }
}
