import DBus
import Foundation
import TestSupport
import Testing
@testable import TodayCore

/// The real todayd binary on a private bus, driven by busctl and by our client.
@Suite struct DaemonTests {
    static let todayd = Paths.todayd
    static let examples = Paths.examples
    typealias Daemon = TodayDaemon

    func busctl(_ daemon: Daemon, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/busctl")
        process.arguments = ["--address=\(daemon.address)"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    func waitForName(_ daemon: Daemon) async throws {
        for _ in 0..<100 {
            if try busctl(daemon, ["status", "io.github.todayd.Today1"]).contains("PID=") { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func servesTheExampleWidgets() async throws {
        let daemon = try Daemon(bundles: [Self.examples])
        try await waitForName(daemon)
        let list = try busctl(daemon, ["call", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Center", "ListWidgets"])
        #expect(list == "ao 2 \"/io/github/todayd/Today1/widgets/tech_2eagostini_2eapp_2eLatestPost\" \"/io/github/todayd/Today1/widgets/com_2ee_2dlegion_2eTraffic_2eWidget\"\n")
        let traffic = "/io/github/todayd/Today1/widgets/com_2ee_2dlegion_2eTraffic_2eWidget"
        #expect(try busctl(daemon, ["get-property", "io.github.todayd.Today1", traffic, "io.github.todayd.Today1.Widget", "PreferredHeight"]) == "d 350\n")
        #expect(try busctl(daemon, ["get-property", "io.github.todayd.Today1", traffic, "io.github.todayd.Today1.Widget", "Groups"]) == "as 1 \"group.traffic\"\n")
        #expect(try busctl(daemon, ["get-property", "io.github.todayd.Today1", "/io/github/todayd/Today1", "io.github.todayd.Today1.Center", "Version"]) == "s \"\(Today.version)\"\n")

        // A second daemon on the same bus refuses to start.
        let second = Process()
        second.executableURL = URL(fileURLWithPath: Self.todayd)
        second.arguments = ["--address", daemon.address]
        let err = Pipe()
        second.standardError = err
        try second.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        second.waitUntilExit()
        #expect(second.terminationStatus == 1)
        #expect(message.contains("already taken"), "\(message)")

        #expect(daemon.stop() == 0)
    }

    @Test func reloadFollowsTheBundleFolder() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bundles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let daemon = try Daemon(bundles: [folder.path])
        try await waitForName(daemon)
        let connection = try Connection(address: daemon.address)
        defer { connection.close() }
        let added = Locked<[String]>([])
        try await connection.subscribe(MatchRule(path: Today.managerPath, interface: .objectManager)) { message in
            added.value.append("\(message.member ?? ""):\(message.body.first?.string ?? "")")
        }
        try FileManager.default.copyItem(atPath: Self.examples + "/Traffic.app", toPath: folder.path + "/Traffic.app")
        try await connection.call(Today.busName, path: Today.managerPath, interface: Today.center.name, member: MemberName("Reload"))
        let reply = try await connection.call(Today.busName, path: Today.managerPath, interface: Today.center.name, member: MemberName("ListWidgets"))
        #expect(reply.body == [.objectPaths([Today.widgetPath("com.e-legion.Traffic.Widget")])])
        try FileManager.default.removeItem(atPath: folder.path + "/Traffic.app")
        kill(daemon.process.processIdentifier, SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        #expect(added.value == ["InterfacesAdded:\(Today.widgetPath("com.e-legion.Traffic.Widget").rawValue)", "InterfacesRemoved:\(Today.widgetPath("com.e-legion.Traffic.Widget").rawValue)"])
        #expect(daemon.stop() == 0)
    }

    @Test func aBrokenBundleIsSkippedWithAReason() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(atPath: folder.path + "/Bad.app", withIntermediateDirectories: true)
        try Data("<plist><dict><key>CFBundleIdentifier</key><string>bad id!</string></dict></plist>".utf8)
            .write(to: folder.appendingPathComponent("Bad.app/Info.plist"))
        try FileManager.default.copyItem(atPath: Self.examples + "/Traffic.app", toPath: folder.path + "/Traffic.app")
        let catalog = BundleCatalog.scan([folder.path])
        #expect(catalog.widgets.map(\.bundleIdentifier) == ["com.e-legion.Traffic.Widget"])
        #expect(catalog.problems.count == 1)
        #expect(catalog.problems.first?.key == "CFBundleIdentifier")
        #expect(catalog.problems.first?.file.hasSuffix("Bad.app/Info.plist") == true)
    }
}
