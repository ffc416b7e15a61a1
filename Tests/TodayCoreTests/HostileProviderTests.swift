import DBus
import Foundation
import Glibc
import PropertyList
import TestSupport
import Testing
@testable import TodayCore

/// A hostile provider in the sandbox (SPEC section 11) tries what an iOS
/// extension cannot do, and fails at each; what it is given (its
/// container, its group, todayd for itself) it keeps.
@Suite(.showsDaemonLogs) struct HostileProviderTests {
    /// Each attempt prints `name=yes` when it worked, `name=no` when not.
    static func probe(port: UInt16) -> String {
        #"""
        cat > /dev/null
        try() { if (eval "$2") >/dev/null 2>&1; then echo "$1=yes"; else echo "$1=no"; fi; }
        containers="${TODAY_CONTAINER%/*}"
        data="${containers%/containers}"
        {
        try other-container 'cat "$containers/org.example.Box.Other/diary.txt"'
        try other-group-read 'cat "$data/groups/group.org.example.private/secret.txt"'
        try other-group-write 'echo x > "$data/groups/group.org.example.private/planted"'
        try other-group-bus 'dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply --dest=io.github.todayd.Today1 /io/github/todayd/Today1/groups/group_2eorg_2eexample_2eprivate io.github.todayd.Today1.Group.Get string:secret'
        try todayd-proc 'grep -lx todayd /proc/[0-9]*/comm'
        try ssh-keys 'cat "${data%/data/todayd}/.ssh/id_ed25519"'
        try bundle-write 'touch "$(dirname "$0")/planted"'
        try tcp 'timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/\#(port)"'
        # A terminal to type into (TIOCSTI) needs a controlling one: the
        # sandbox's new session has none, whatever todayd was started from.
        try terminal 'exec 3<>/dev/tty'
        try own-container 'echo x > "$TODAY_CONTAINER/kept" && test -s "$TODAY_CONTAINER/kept"'
        try own-group 'echo x > "${TODAY_GROUP_CONTAINERS#*=}/kept"'
        try todayd-for-itself 'dbus-send --bus="$DBUS_SESSION_BUS_ADDRESS" --print-reply --dest=io.github.todayd.Today1 /io/github/todayd/Today1 io.github.todayd.Today1.Center.SetHasContent boolean:true string:"$TODAY_WIDGET_ID"'
        } > "$TODAY_CONTAINER/attempts"
        printf '{"result": "new-data", "snapshot": {"attempts": "%s"}}' "$(tr '\n' ' ' < "$TODAY_CONTAINER/attempts")"
        """#
    }

    /// A listening TCP socket on 127.0.0.1 and its port.
    static func listener() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socket in
                bind(fd, socket, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, socket, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// What the widget's attempts came to, by name.
    func attempts(_ client: Connection, _ widget: String) async throws -> [String: String] {
        let answer = try await client.widget(widget, "PerformUpdate").body
        let failure = try await client.property(widget, "LastFailure")
        #expect(answer == [.string("new-data")], "\(failure)")
        let text = try await client.property(widget, "Snapshot").stringDictionary?["attempts"]?.unwrapped.string ?? ""
        return Dictionary(text.split(separator: " ").compactMap { pair in
            let parts = pair.split(separator: "=")
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }, uniquingKeysWith: { first, _ in first })
    }

    @Test(.enabled(if: SandboxTests.available, "bwrap cannot make namespaces on this machine"))
    func everyAttemptFails() async throws {
        let (socket, port) = try Self.listener()
        defer { close(socket) }
        let bundles = try BundleFolder()
        defer { bundles.remove() }
        try bundles.addApp("org.example.Box", widgets: [
            .init(name: "W", script: Self.probe(port: port), groups: ["group.org.example.box"]),
            .init(name: "Net", script: Self.probe(port: port), groups: ["group.org.example.box"]),
            .init(name: "Other", script: "cat > /dev/null; echo '{\"result\": \"no-data\"}'"),
            // The memory limit counts the sandbox's processes: a child grows past it.
            .init(
                name: "Big", script: "cat > /dev/null; /usr/bin/python3 -c 'a = bytearray(300 << 20); import time; time.sleep(20)'",
                attributes: ["TodayMemoryLimit": .integer(64 << 20), "TodayUpdateTimeout": .integer(15)]),
        ])
        try BundleRuleTests.writePlist(bundles.url.appendingPathComponent("org.example.Box.app/Entitlements.plist")) {
            $0["com.apple.security.application-groups"] = .array([.string("group.org.example.box")])
        }
        try BundleRuleTests.writePlist(bundles.url.appendingPathComponent("org.example.Box.app/PlugIns/Net.appex/Entitlements.plist")) {
            $0["com.apple.security.application-groups"] = .array([.string("group.org.example.box")])
            $0["com.apple.security.network.client"] = .boolean(true)
        }
        // Another app's private group, and the user's keys.
        try bundles.addApp("org.example.Private", widgets: [.init(name: "P", script: "exit 0", groups: ["group.org.example.private"])])
        let home = try temporaryDirectory("hostile")
        for (folder, file) in [
            ("data/todayd/containers/org.example.Box.Other", "diary.txt"), ("data/todayd/groups/group.org.example.private", "secret.txt"),
            (".ssh", "id_ed25519"),
        ] {
            try FileManager.default.createDirectory(at: home.appendingPathComponent(folder), withIntermediateDirectories: true)
            try Data("private".utf8).write(to: home.appendingPathComponent(folder).appendingPathComponent(file))
        }
        let daemon = try TodayDaemon(bundles: [bundles.path], home: home, path: "/usr/bin:/bin")
        defer { daemon.stop() }
        let client = try await daemon.ready()
        defer { client.close() }
        #expect(try await client.property("org.example.Box.W", "Sandboxed") == .boolean(true))

        let seen = try await attempts(client, "org.example.Box.W")
        for attempt in [
            "other-container", "other-group-read", "other-group-write", "other-group-bus", "todayd-proc", "ssh-keys", "bundle-write", "tcp",
            "terminal",
        ] {
            #expect(seen[attempt] == "no", "\(attempt) worked: \(seen)")
        }
        for given in ["own-container", "own-group", "todayd-for-itself"] {
            #expect(seen[given] == "yes", "\(given) failed: \(seen)")
        }
        #expect(!FileManager.default.fileExists(atPath: home.path + "/data/todayd/groups/group.org.example.private/planted"))
        #expect(!FileManager.default.fileExists(atPath: bundles.path + "/org.example.Box.app/PlugIns/W.appex/planted"))

        #expect(try await client.widget("org.example.Box.Big", "PerformUpdate").body == [.string("failed")])
        #expect(try await client.property("org.example.Box.Big", "LastFailure") == .string("memory-limit"))

        // With the network entitlement the same connection goes through;
        // the rest is as confined.
        let networked = try await attempts(client, "org.example.Box.Net")
        #expect(networked["tcp"] == "yes", "\(networked)")
        #expect(networked["other-group-read"] == "no" && networked["todayd-proc"] == "no", "\(networked)")
    }
}
