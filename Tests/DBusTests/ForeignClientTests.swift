import DBus
import TestSupport
import Foundation
import Testing

/// The test object as seen by clients we did not write.
@Suite struct ForeignClientTests {
    func withServedObject(_ body: (BusDaemon, Connection, ExportedInterface) async throws -> Void) async throws {
        try await withPrivateBus { bus, server in
            let object = TestObject.make()
            server.objects.addObjectManager(at: ObjectPath("/org/example"))
            server.objects.export(TestObject.path, [object])
            #expect(try await server.requestName(BusName("org.example.Test"), flags: .doNotQueue) == .primaryOwner)
            try await body(bus, server, object)
        }
    }

    @Test func busctl() async throws {
        try await withServedObject { bus, _, _ in
            let introspect = try await run(["busctl", "--address=\(bus.address)", "introspect", "org.example.Test", "/org/example/Test"])
            #expect(introspect.status == 0, "\(introspect.error)")
            #expect(introspect.output.contains(".Add"))
            #expect(introspect.output.contains("method    ii        i"))
            #expect(introspect.output.contains(".Greeting"))
            #expect(introspect.output.contains("emits-change"))
            #expect(introspect.output.contains("org.freedesktop.DBus.Properties"))

            let call = try await run(["busctl", "--address=\(bus.address)", "call", "org.example.Test", "/org/example/Test", "org.example.Test1", "Add", "ii", "40", "2"])
            #expect(call.output == "i 42\n", "\(call)")

            let echo = try await run(["busctl", "--address=\(bus.address)", "call", "org.example.Test", "/org/example/Test", "org.example.Test1", "Echo", "v", "a{sv}", "2", "one", "s", "1", "two", "ai", "2", "3", "4"])
            #expect(echo.output == "v a{sv} 2 \"one\" s \"1\" \"two\" ai 2 3 4\n", "\(echo)")

            let property = try await run(["busctl", "--address=\(bus.address)", "get-property", "org.example.Test", "/org/example/Test", "org.example.Test1", "Greeting"])
            #expect(property.output == "s \"hello\"\n")

            let set = try await run(["busctl", "--address=\(bus.address)", "set-property", "org.example.Test", "/org/example/Test", "org.example.Test1", "Count", "u", "7"])
            #expect(set.status == 0, "\(set.error)")
            let count = try await run(["busctl", "--address=\(bus.address)", "get-property", "org.example.Test", "/org/example/Test", "org.example.Test1", "Count"])
            #expect(count.output == "u 7\n")

            let tree = try await run(["busctl", "--address=\(bus.address)", "tree", "org.example.Test"])
            #expect(tree.output.contains("/org/example/Test"), "\(tree)")

            let bad = try await run(["busctl", "--address=\(bus.address)", "call", "org.example.Test", "/org/example/Test", "org.example.Test1", "Add", "s", "x"])
            #expect(bad.status != 0)
            #expect(bad.error.contains("takes arguments of type 'ii'"), "\(bad.error)")
        }
    }

    @Test func gdbus() async throws {
        try await withServedObject { bus, _, _ in
            let introspect = try await run(["gdbus", "introspect", "--address", bus.address, "--dest", "org.example.Test", "--object-path", "/org/example/Test"])
            #expect(introspect.status == 0, "\(introspect.error)")
            #expect(introspect.output.contains("Add(in  i a,"))
            #expect(introspect.output.contains("readonly s Greeting = 'hello';"))
            #expect(introspect.output.contains("@org.freedesktop.DBus.Property.EmitsChangedSignal(\"const\")"))
            let call = try await run(["gdbus", "call", "--address", bus.address, "--dest", "org.example.Test", "--object-path", "/org/example/Test", "--method", "org.example.Test1.Add", "1", "2"])
            #expect(call.output == "(3,)\n", "\(call)")
            let managed = try await run(["gdbus", "call", "--address", bus.address, "--dest", "org.example.Test", "--object-path", "/org/example", "--method", "org.freedesktop.DBus.ObjectManager.GetManagedObjects"])
            #expect(managed.output.contains("objectpath '/org/example/Test'"), "\(managed)")
        }
    }

    @Test func dbusSend() async throws {
        try await withServedObject { bus, _, _ in
            let reply = try await run(["dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=org.example.Test", "/org/example/Test", "org.example.Test1.Add", "int32:5", "int32:6"])
            #expect(reply.status == 0, "\(reply.error)")
            #expect(reply.output.contains("int32 11"))
            let ping = try await run(["dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=org.example.Test", "/org/example/Test", "org.freedesktop.DBus.Peer.Ping"])
            #expect(ping.status == 0, "\(ping.error)")
            let unknown = try await run(["dbus-send", "--bus=\(bus.address)", "--print-reply", "--dest=org.example.Test", "/org/example/Test", "org.example.Test1.Nope"])
            #expect(unknown.error.contains("org.freedesktop.DBus.Error.UnknownMethod"), "\(unknown)")
        }
    }

    @Test func propertiesChangedSeenByDbusMonitor() async throws {
        try await withServedObject { bus, _, object in
            let monitor = Process()
            monitor.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
            monitor.arguments = ["--address", bus.address, "type='signal',interface='org.freedesktop.DBus.Properties'"]
            let output = Pipe()
            monitor.standardOutput = output
            try monitor.run()
            // A monitor loses its own name once it monitors: it says so.
            var text = try await read(output) { $0.contains("member=NameLost") }
            object.set("Greeting", .string("seen by a monitor"))
            text += try await read(output) { $0.contains("member=PropertiesChanged") }
            // Children of the test runner inherit a mask that blocks SIGTERM.
            kill(monitor.processIdentifier, SIGKILL)
            await exited(monitor)
            #expect(text.contains("member=PropertiesChanged"), "\(text)")
            #expect(text.contains("string \"seen by a monitor\""), "\(text)")
        }
    }
}
