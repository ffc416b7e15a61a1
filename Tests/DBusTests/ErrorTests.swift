import DBus
import TestSupport
import Foundation
import Testing

@Suite struct ErrorTests {
    func expectError(
        _ name: String, _ client: Connection, _ destination: BusName?, path: ObjectPath = TestObject.path,
        interface: String?, member: String, _ arguments: [Value] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await client.call(
                destination, path: path, interface: interface.flatMap(InterfaceName.init(rawValue:)),
                member: MemberName(rawValue: member)!, arguments)
            Issue.record("\(member) succeeded; expected \(name)", sourceLocation: sourceLocation)
        } catch let error as DBusError {
            #expect(error.name.rawValue == name, "\(error)", sourceLocation: sourceLocation)
            #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func everyCallGetsANamedError() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            let test = "org.example.Test1"
            let fdo = "org.freedesktop.DBus.Error."
            await expectError(fdo + "UnknownObject", client, d, path: ObjectPath("/nowhere"), interface: test, member: "Add")
            await expectError(fdo + "UnknownInterface", client, d, interface: "org.example.Nope", member: "Add")
            await expectError(fdo + "UnknownMethod", client, d, interface: test, member: "Subtract")
            await expectError(fdo + "UnknownMethod", client, d, interface: nil, member: "Subtract")
            await expectError(fdo + "InvalidArgs", client, d, interface: test, member: "Add", [.string("1"), .int32(2)])
            await expectError(fdo + "InvalidArgs", client, d, interface: test, member: "Add", [])
            await expectError(fdo + "InvalidArgs", client, d, interface: test, member: "Add", [.int32(.max), .int32(1)])
            await expectError("org.example.Test1.Error.Refused", client, d, interface: test, member: "Fail", [.string("named")])
            await expectError(fdo + "Failed", client, d, interface: test, member: "Fail", [.string("other")])
            let props = "org.freedesktop.DBus.Properties"
            await expectError(fdo + "UnknownProperty", client, d, interface: props, member: "Get", [.string(test), .string("Nope")])
            await expectError(fdo + "UnknownInterface", client, d, interface: props, member: "Get", [.string("a.b"), .string("X")])
            await expectError(
                fdo + "PropertyReadOnly", client, d, interface: props, member: "Set",
                [.string(test), .string("Greeting"), .variant(.string("x"))])
            await expectError(
                fdo + "InvalidArgs", client, d, interface: props, member: "Set",
                [.string(test), .string("Count"), .variant(.string("x"))])
            await expectError(
                fdo + "InvalidArgs", client, d, interface: props, member: "Set",
                [.string(test), .string("Count"), .variant(.uint32(5000))])
            await expectError(fdo + "ServiceUnknown", client, BusName("org.example.Absent"), interface: test, member: "Add")
        }
    }

    @Test func callsTimeOut() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let client = try bus.connect()
            defer { client.close() }
            await #expect {
                try await client.call(
                    BusName(rawValue: server.uniqueName), path: TestObject.path, interface: TestObject.name,
                    member: MemberName("Sleep"), [.uint32(3000)], timeout: .milliseconds(200))
            } throws: { ($0 as? DBusError)?.name == .noReply }
        }
    }

    @Test func pendingCallsFailWhenTheConnectionCloses() async throws {
        try await withPrivateBus { bus, server in
            let sleeping = Locked(0)
            server.objects.export(TestObject.path, [TestObject.make(sleeping: sleeping)])
            let client = try bus.connect()
            let destination = BusName(rawValue: server.uniqueName)
            let slow = Task {
                try await client.call(
                    destination, path: TestObject.path, interface: TestObject.name, member: MemberName("Sleep"),
                    [.uint32(5000)])
            }
            // The call is on its way (the server has it) before the close.
            _ = try await eventually { sleeping.value > 0 }
            client.close()
            await #expect { _ = try await slow.value } throws: { ($0 as? DBusError)?.name == .disconnected }
            await #expect { try await client.callBus(MemberName("GetId")) } throws: {
                ($0 as? DBusError)?.name == .disconnected
            }
        }
    }
}
