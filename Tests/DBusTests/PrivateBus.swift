@testable import DBus
import TestSupport
import Foundation
import Testing

extension BusDaemon {
    func connect() throws -> Connection { try Connection(address: address) }
}

@Suite struct BusDaemonTests {
    @Test func stoppingRemovesTheSocket() async throws {
        let bus = try await BusDaemon.start()
        let socket = try #require(BusDaemon.socketPath(of: bus.address), "\(bus.address)")
        var info = stat()
        #expect(stat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK)
        bus.stop()
        #expect(stat(socket, &info) != 0 && errno == ENOENT, "\(socket) is still there")
    }

    @Test func theBusKeepsNoDescriptorOfOurs() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("open-\(UUID().uuidString)").path
        // Not close-on-exec, as Foundation's Data.write opens files.
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        try #require(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        let folder = "/proc/\(bus.pid)/fd"
        let targets = try FileManager.default.contentsOfDirectory(atPath: folder).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)
        }
        #expect(!targets.isEmpty)
        #expect(!targets.contains(path), "\(targets)")
    }

    /// A connection whose bus goes away ends its loop: it is told, its
    /// close is quiet, and it is freed with its descriptors. A
    /// loop that went on waiting kept the connection, its eventfd and its
    /// timerfd alive for good (a test process that lost many piled them up).
    @Test func aConnectionWhoseBusWentAwayIsFreed() async throws {
        let bus = try await BusDaemon.start()
        defer { bus.stop() }
        weak var gone: Connection?
        do {
            let client = try bus.connect()
            gone = client
            let lost = DispatchSemaphore(value: 0)
            client.onDisconnect { lost.signal() }
            _ = try await client.call(
                BusName("org.freedesktop.DBus"), path: ObjectPath("/org/freedesktop/DBus"), interface: InterfaceName("org.freedesktop.DBus"),
                member: MemberName("GetId"), [])
            bus.stop()
            #expect(lost.wait(timeout: .now() + 5) == .success, "the loss was not told")
            client.close()
        }
        // Freed, its descriptors closed with it.
        let freed = try await eventually(5) { gone == nil }
        #expect(freed, "the connection is still alive")
    }

    @Test func socketPathsOfAddresses() {
        #expect(BusDaemon.socketPath(of: "unix:path=/tmp/dbus-AbC,guid=0123") == "/tmp/dbus-AbC")
        #expect(BusDaemon.socketPath(of: "unix:guid=0123,path=/run/a%2cb%20c") == "/run/a,b c")
        #expect(BusDaemon.socketPath(of: "unix:abstract=/tmp/dbus-AbC,guid=0123") == nil)
        #expect(BusDaemon.socketPath(of: "tcp:host=localhost,port=1234") == nil)
        #expect(BusDaemon.socketPath(of: "unix:path=/tmp/bad%2") == nil)
    }
}
