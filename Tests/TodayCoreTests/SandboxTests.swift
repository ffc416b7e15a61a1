import DBus
import Foundation
import PropertyList
import TestSupport
import Testing
@testable import TodayCore
import TodayProtocol

/// The provider sandbox (SPEC section 11): its command line as plain
/// code, and what a provider can and cannot reach inside it.
@Suite(.showsDaemonLogs) struct SandboxTests {
    static let plan = SandboxPlan(
        bwrap: "/usr/bin/bwrap", appFolder: "/tmp/b/Mail.app", container: "/home/u/.local/share/todayd/containers/org.example.Mail.W",
        groupContainers: ["/home/u/.local/share/todayd/groups/group.org.example.mail"], network: false,
        busAddress: "unix:path=/run/user/1000/bus,guid=abc", libraryFolders: ["/opt/swift/usr/lib/swift/linux", "/usr/lib/x86_64-linux-gnu"])

    /// The pairs `flag a b` of a command line, for looking up.
    static func binds(_ arguments: [String], _ flag: String) -> [String] {
        arguments.indices.filter { arguments[$0] == flag && $0 + 2 < arguments.count }.map { arguments[$0 + 1] }
    }

    @Test func theCommandLine() {
        let exists: (String) -> Bool = { ["/etc/ssl/certs", "/etc/resolv.conf", "/etc/ld.so.cache", "/lib64"].contains($0) }
        let links: (String) -> String? = { ["/bin": "usr/bin", "/lib": "usr/lib"][$0] }
        let args = Self.plan.arguments(command: ["/tmp/b/Mail.app/PlugIns/W.appex/provider", "perform-update"], exists: exists, symlink: links)
        #expect(Array(args.prefix(3)) == ["--die-with-parent", "--new-session", "--unshare-all"])
        #expect(!args.contains("--share-net"))
        #expect(Self.binds(args, "--ro-bind") == ["/usr", "/lib64", "/etc/ld.so.cache", "/etc/ssl/certs", "/etc/resolv.conf", "/opt/swift/usr/lib/swift/linux", "/tmp/b/Mail.app"])
        #expect(Self.binds(args, "--symlink") == ["usr/bin", "usr/lib"])
        #expect(Self.binds(args, "--bind") == [Self.plan.container, Self.plan.groupContainers[0], "/run/user/1000/bus"])
        // The private /tmp comes before what is bound, which may lie in the host's /tmp.
        let tmpfs = args.firstIndex(of: "--tmpfs") ?? 0
        #expect(args[tmpfs + 1] == "/tmp" && tmpfs < (args.firstIndex(of: "/tmp/b/Mail.app") ?? 0))
        #expect(args.contains("--dev") && args.contains("--proc"))
        #expect(Array(args.suffix(8)) == ["--setenv", "HOME", Self.plan.container, "--chdir", Self.plan.container, "--", "/tmp/b/Mail.app/PlugIns/W.appex/provider", "perform-update"])
        // The network only when entitled, or when the bus is an abstract socket (which lives in the network namespace).
        var networked = Self.plan
        networked.network = true
        #expect(networked.arguments(command: ["x"], exists: exists, symlink: links).contains("--share-net"))
        var abstract = Self.plan
        abstract.busAddress = "unix:abstract=/tmp/dbus-xyz,guid=1"
        #expect(abstract.arguments(command: ["x"], exists: exists, symlink: links).contains("--share-net"))
        #expect(SandboxPlan(bwrap: "b", appFolder: "/a", container: "/c", groupContainers: [], network: false, busAddress: "unix:path=/tmp/a%20b", libraryFolders: []).busSocket.path == "/tmp/a b")
    }

    @Test func swiftProvidersNameTheirRuntimeFolder() throws {
        // The example widgets are Swift programs: their RUNPATH names where
        // the toolchain put the runtime, which the sandbox then binds.
        let executable = Paths.root.appendingPathComponent(".build/debug/latest-post").path
        let folders = SandboxPlan.libraryFolders(of: executable)
        #expect(folders.contains { FileManager.default.fileExists(atPath: $0 + "/libswiftCore.so") }, "\(folders)")
        #expect(SandboxPlan.libraryFolders(of: "/bin/sh") == [])
    }

    static let probe = #"""
        cat > /dev/null
        container="$TODAY_CONTAINER"
        group="${TODAY_GROUP_CONTAINERS#group.org.example.box=}"
        check() { if eval "$1" >/dev/null 2>&1; then echo yes; else echo no; fi; }
        secret=$(check 'test -e "${TODAY_CONTAINER%/data/todayd/containers/*}/secret.txt"')
        hosttmp=$(check 'test -e /tmp/todayd-sandbox-marker')
        writes=$(check 'echo x > "$container/file" && test -s "$container/file"')
        groups=$(check 'echo x > "$group/file"')
        app=$(check 'touch "$(dirname "$0")/written"')
        home=$([ "$HOME" = "$container" ] && [ "$(pwd)" = "$container" ] && echo yes || echo no)
        procs=$(ls /proc | grep -c '^[0-9]')
        nets=$(tail -n +3 /proc/net/dev | grep -vc ' lo:')
        bus=$(dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply=literal --dest=io.github.todayd.Today1 \
            /io/github/todayd/Today1/groups/group_2eorg_2eexample_2ebox io.github.todayd.Today1.Group.Get string:greeting 2>&1 | tr -d ' \n')
        (sleep 307; echo left) &
        printf '{"result": "new-data", "snapshot": {"secret": "%s", "hosttmp": "%s", "writes": "%s", "groups": "%s", "app": "%s", "home": "%s", "procs": %s, "nets": %s, "bus": "%s"}}' \
            "$secret" "$hosttmp" "$writes" "$groups" "$app" "$home" "$procs" "$nets" "$bus"
        """#

    static func bundles() throws -> BundleFolder {
        let bundles = try BundleFolder()
        try bundles.addApp("org.example.Box", widgets: [
            .init(name: "W", script: probe, groups: ["group.org.example.box"]),
            .init(name: "Net", script: probe, groups: ["group.org.example.box"]),
            .init(name: "Hang", script: "trap '' TERM\n(sleep 307; echo left) &\nsleep 60", attributes: ["TodayUpdateTimeout": .integer(1)]),
        ])
        try BundleRuleTests.writePlist(bundles.url.appendingPathComponent("org.example.Box.app/Entitlements.plist")) {
            $0["com.apple.security.application-groups"] = .array([.string("group.org.example.box")])
        }
        try BundleRuleTests.writePlist(bundles.url.appendingPathComponent("org.example.Box.app/PlugIns/Net.appex/Entitlements.plist")) {
            $0["com.apple.security.application-groups"] = .array([.string("group.org.example.box")])
            $0["com.apple.security.network.client"] = .boolean(true)
        }
        return bundles
    }

    static let available: Bool = {
        if case .available = SandboxSupport.probe(path: ["/usr/bin", "/bin"]) { return true }
        return false
    }()

    @Test(.enabled(if: available, "bwrap cannot make namespaces on this machine"))
    func whatAProviderReachesInside() async throws {
        let bundles = try Self.bundles()
        defer { bundles.remove() }
        let home = try temporaryDirectory("sandbox")
        let secret = home.appendingPathComponent("secret.txt")
        try Data("private".utf8).write(to: secret)
        let marker = "/tmp/todayd-sandbox-marker"
        #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
        defer { unlink(marker) }
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home, path: "/usr/bin:/bin")
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        try await client.center("RegisterApp", [.string("org.example.Box")])
        try await client.call(
            Today.busName, path: Today.groupPath("group.org.example.box"), interface: Today.group.name, member: MemberName("Set"),
            [.string("greeting"), .variant(.string("hello"))])
        #expect(try await client.property("org.example.Box.W", "Sandboxed") == .boolean(true))

        #expect(try await client.widget("org.example.Box.W", "PerformUpdate").body == [.string("new-data")])
        let seen = try await client.property("org.example.Box.W", "Snapshot").stringDictionary ?? [:]
        func value(_ key: String) -> Value? { seen[key]?.unwrapped }
        #expect(value("secret") == .string("no"), "the user's files are out of sight")
        #expect(value("hosttmp") == .string("no"), "/tmp is its own")
        #expect(value("writes") == .string("yes") && value("home") == .string("yes"), "its container is HOME and writable")
        #expect(value("groups") == .string("yes"), "its group's container is writable")
        #expect(value("app") == .string("no"), "its bundle is read-only")
        #expect((value("procs")?.int64 ?? 99) <= 6, "no other process is visible: \(String(describing: value("procs")))")
        #expect(value("nets") == .int64(0), "no network but loopback")
        #expect(value("bus") == .string("varianthello"), "it reaches todayd, as its widget")
        let net = try await client.widget("org.example.Box.Net", "PerformUpdate")
        #expect(net.body == [.string("new-data")])
        let networked = try await client.property("org.example.Box.Net", "Snapshot").stringDictionary ?? [:]
        let hostInterfaces = (try String(contentsOfFile: "/proc/net/dev", encoding: .utf8)).split(separator: "\n").dropFirst(2).filter { !$0.contains(" lo:") }.count
        #expect(networked["nets"]?.unwrapped == .int64(Int64(hostInterfaces)), "the entitled widget keeps the network")

        // The time limit ends everything inside; nothing outlives a run.
        #expect(try await client.widget("org.example.Box.Hang", "PerformUpdate").body == [.string("failed")])
        #expect(try await client.property("org.example.Box.Hang", "LastFailure") == .string("timeout"))
        #expect(try await eventually { try await run(["pgrep", "-f", "sleep 307"]).output.isEmpty }, "processes were left")
    }

    /// A provider replaced in place by a new build, here a Swift program
    /// copied over a script, runs in a sandbox made for the new file, with
    /// its runtime's folder bound; the old plan had none.
    @Test(.enabled(if: available, "bwrap cannot make namespaces on this machine"))
    func aProviderReplacedInPlaceGetsASandboxForTheNewFile() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Swap", widgets: [.init(name: "W", script: #"printf '{"result": "new-data", "snapshot": {"title": "script"}}'"#)])
        let daemon = try TodayDaemon(bundles: [bundles.path], path: "/usr/bin:/bin")
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        let widget = "org.example.Swap.W"
        #expect(try await client.property(widget, "Sandboxed") == .boolean(true))
        #expect(try await client.widget(widget, "PerformUpdate").body == [.string("new-data")])

        let swift = Paths.root.appendingPathComponent(".build/debug/trivial-provider").path
        #expect(!SandboxPlan.libraryFolders(of: swift).filter { !$0.hasPrefix("/usr/") }.isEmpty, "the Swift provider loads its runtime from outside /usr")
        let provider = bundles.url.appendingPathComponent("org.example.Swap.app/PlugIns/W.appex/provider").path
        let copied = try await run(["cp", swift, provider])
        #expect(copied.status == 0, "\(copied.error)")
        #expect(try await client.widget(widget, "PerformUpdate").body == [.string("no-data")])
        #expect(try await client.property(widget, "LastFailure") == .string(""))
    }

    @Test func withoutBwrapProvidersRunUnconfinedOrFail() async throws {
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Plain", widgets: [.init(name: "W", script: #"cat > /dev/null; echo '{"result": "new-data", "snapshot": {}}'"#)])
        let free = try TodayDaemon(bundles: [bundles.path], path: "/nonexistent")
        let client = try await free.ready()
        #expect(try await client.property("org.example.Plain.W", "Sandboxed") == .boolean(false))
        #expect(try await client.widget("org.example.Plain.W", "PerformUpdate").body == [.string("new-data")])
        client.close()
        free.stop(keepHome: true)
        #expect(free.logText.contains("providers run unconfined: bwrap is not installed"), "\(free.logText)")

        let strict = try TodayDaemon(bundles: [bundles.path], extra: ["--require-sandbox"], path: "/nonexistent")
        defer { strict.stop() }
        let strictClient = try await strict.ready()
        defer { strictClient.close() }
        #expect(try await strictClient.widget("org.example.Plain.W", "PerformUpdate").body == [.string("failed")])
        #expect(try await strictClient.property("org.example.Plain.W", "LastFailure") == .string("no-sandbox"))
    }
}
