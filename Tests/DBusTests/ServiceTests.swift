import DBus
import TestSupport
import Foundation
import Testing

@Suite struct ServiceTests {
    @Test func aSlowHandlerDelaysNoOtherCall() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            let start = ContinuousClock.now
            let slow = Task {
                try await client.call(
                    d, path: TestObject.path, interface: TestObject.name, member: MemberName("Sleep"), [.uint32(2000)])
                return ContinuousClock.now - start
            }
            let fastDone = try await withThrowingTaskGroup(of: Duration.self) { group in
                for i in 0..<1000 {
                    group.addTask {
                        let member = i % 2 == 0 ? "Add" : "Sleep"
                        let arguments: [Value] = i % 2 == 0 ? [.int32(Int32(i)), .int32(1)] : [.uint32(0)]
                        let reply = try await client.call(
                            d, path: TestObject.path, interface: TestObject.name,
                            member: MemberName(rawValue: member)!, arguments)
                        if i % 2 == 0 { #expect(reply.body == [.int32(Int32(i) + 1)]) }
                        return ContinuousClock.now - start
                    }
                }
                var latest = Duration.zero
                for try await finished in group { latest = max(latest, finished) }
                return latest
            }
            let slowDone = try await slow.value
            #expect(fastDone < slowDone, "1000 calls finished after \(fastDone), the sleeping one after \(slowDone)")
            #expect(slowDone >= .milliseconds(2000))
        }
    }

    /// A deferred handler answers from a thread of its own: what it sends
    /// before answering arrives before the answer; an error it throws, or
    /// an answer it drops, still answers the call; a second answer is ignored.
    @Test func deferredAnswersFromAnyThread() async throws {
        try await withPrivateBus { bus, server in
            let declaration = Interface(
                InterfaceName("org.example.Deferred1"),
                methods: [
                    Method(MemberName("Work"), in: [Argument("how", "s")], out: [Argument("result", "s")])
                ],
                signals: [Signal(MemberName("Working"), [Argument("how", "s")])])
            let object = Locked<ExportedInterface?>(nil)
            let exported = ExportedInterface(
                declaration,
                deferred: [
                    "Work": { call, answer in
                        let how = call.arguments.first?.string ?? ""
                        if how == "throw" { throw DBusError.invalidArgs("refused at once") }
                        Thread.detachNewThread {
                            switch how {
                            case "drop": return
                            case "twice":
                                answer.succeed([.string("first")])
                                answer.succeed([.string("second")])
                            default:
                                try? object.value?.emit("Working", [.string(how)])
                                answer.succeed([.string("done " + how)])
                            }
                        }
                    }
                ])
            object.withLock { $0 = exported }
            server.objects.export(TestObject.path, [exported])
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            let seen = Locked<[String]>([])
            try await client.subscribe(MatchRule(path: TestObject.path, interface: declaration.name, member: MemberName("Working"))) {
                message in seen.withLock { $0.append(message.body.first?.string ?? "") }
            }
            func work(_ how: String) async throws -> String {
                let reply = try await client.call(d, path: TestObject.path, interface: declaration.name, member: MemberName("Work"), [.string(how)])
                return reply.body.first?.string ?? ""
            }
            for index in 0..<50 {
                #expect(try await work("n\(index)") == "done n\(index)")
                #expect(seen.value.last == "n\(index)", "the signal sent before the answer arrived first")
            }
            #expect(try await work("twice") == "first")
            let thrown = await #expect(throws: DBusError.self) { try await work("throw") }
            #expect(thrown?.name == .invalidArgs)
            let dropped = await #expect(throws: DBusError.self) { try await work("drop") }
            #expect(dropped?.message.contains("without an answer") == true)
        }
    }

    /// The bodies of the test object's PropertiesChanged as `client` sees
    /// them, in order.
    static func propertiesChanged(seenBy client: Connection) async throws -> Locked<[[Value]]> {
        let changes = Locked<[[Value]]>([])
        try await client.subscribe(
            MatchRule(path: TestObject.path, interface: .properties, member: MemberName("PropertiesChanged"))
        ) { message in changes.withLock { $0.append(message.body) } }
        return changes
    }

    @Test func propertiesAndTheirChanges() async throws {
        try await withPrivateBus { bus, server in
            let object = TestObject.make()
            server.objects.export(TestObject.path, [object])
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            let changes = try await Self.propertiesChanged(seenBy: client)

            let all = try await client.call(
                d, path: TestObject.path, interface: .properties, member: MemberName("GetAll"),
                [.string("org.example.Test1")])
            let properties = try #require(all.body.first?.stringDictionary)
            #expect(properties["Greeting"] == .string("hello"))
            #expect(properties["Count"] == .uint32(0))
            #expect(properties["Blob"] == .bytes(Data([1, 2, 3])))

            try await client.call(
                d, path: TestObject.path, interface: .properties, member: MemberName("Set"),
                [.string("org.example.Test1"), .string("Count"), .variant(.uint32(42))])
            #expect(object[property: "Count"] == .uint32(42))
            object.set("Blob", .bytes(Data([9])))
            object.set("Greeting", .string("hello"))  // unchanged: no signal
            try await client.call(
                d, path: TestObject.path, interface: TestObject.name, member: MemberName("SetGreeting"),
                [.string("bonjour")])
            let get = try await client.call(
                d, path: TestObject.path, interface: .properties, member: MemberName("Get"),
                [.string("org.example.Test1"), .string("Greeting")])
            #expect(get.body == [.variant(.string("bonjour"))])
            // GetAll's kept reply follows every change, and a second caller
            // gets its own copy addressed to it.
            let other = try bus.connect()
            defer { other.close() }
            for caller in [client, other] {
                let again = try await caller.call(
                    d, path: TestObject.path, interface: .properties, member: MemberName("GetAll"),
                    [.string("org.example.Test1")])
                let now = try #require(again.body.first?.stringDictionary)
                #expect(now["Greeting"] == .string("bonjour"))
                #expect(now["Count"] == .uint32(42))
                #expect(now["Blob"] == .bytes(Data([9])))
            }

            _ = try await eventually { changes.value.count >= 3 }
            let seen = changes.value
            #expect(seen.count == 3, "\(seen)")
            #expect(seen.first == [.string("org.example.Test1"), .vardict([("Count", .uint32(42))]), .strings([])])
            #expect(seen.dropFirst().first == [.string("org.example.Test1"), .vardict([]), .strings(["Blob"])])
            #expect(seen.last == [.string("org.example.Test1"), .vardict([("Greeting", .string("bonjour"))]), .strings([])])
        }
    }

    /// Changes set unannounced are read at once by Get, and go out in one
    /// PropertiesChanged at `announce()`, with the values of then; a set
    /// that announces a property takes it out of the next announcement.
    @Test func changesAnnouncedLaterGoOutOnceWithTheLastValues() async throws {
        try await withPrivateBus { bus, server in
            let object = TestObject.make()
            server.objects.export(TestObject.path, [object])
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            let changes = try await Self.propertiesChanged(seenBy: client)
            func get(_ name: String) async throws -> Value? {
                try await client.call(
                    d, path: TestObject.path, interface: .properties, member: MemberName("Get"),
                    [.string("org.example.Test1"), .string(name)]
                ).body.first
            }

            for count in UInt32(1)...5 {
                object.setUnannounced([("Count", .uint32(count)), ("Blob", .bytes(Data([UInt8(count)])))])
                #expect(try await get("Count") == .variant(.uint32(count)))
            }
            object.setUnannounced([("Greeting", .string("hej"))])
            object.set("Greeting", .string("hallo"))  // announced now, not again
            object.announce()
            object.announce()  // nothing left: no signal
            object.setUnannounced([("Count", .uint32(5))])  // unchanged: nothing to announce
            object.announce()
            object.set("Greeting", .string("ciao"))  // a marker: everything before it has arrived

            _ = try await eventually { changes.value.count >= 3 }
            try await Task.sleep(for: .milliseconds(100))
            let seen = changes.value
            #expect(seen.count == 3, "\(seen)")
            #expect(seen.first == [.string("org.example.Test1"), .vardict([("Greeting", .string("hallo"))]), .strings([])])
            #expect(seen.dropFirst().first == [.string("org.example.Test1"), .vardict([("Count", .uint32(5))]), .strings(["Blob"])])
            #expect(seen.last == [.string("org.example.Test1"), .vardict([("Greeting", .string("ciao"))]), .strings([])])
        }
    }

    /// A GetAll body of a megabyte is not kept: each call gets one made for
    /// it, with the large values last (in their order), and a later small
    /// body is kept again.
    @Test func aLargeGetAllReplyIsMadeForEachCall() async throws {
        try await withPrivateBus { bus, server in
            let object = TestObject.make()
            server.objects.export(TestObject.path, [object])
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            func getAll() async throws -> [DictionaryEntry] {
                let reply = try await client.call(
                    d, path: TestObject.path, interface: .properties, member: MemberName("GetAll"),
                    [.string("org.example.Test1")])
                guard case .dictionary(_, _, let entries)? = reply.body.first else {
                    Issue.record("GetAll answered \(reply.body)")
                    return []
                }
                return entries
            }
            let picture = Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let long = String(repeating: "hello ", count: 20_000)
            object.set("Blob", .bytes(picture))
            object.set("Greeting", .string(long))
            for _ in 0..<2 {
                let entries = try await getAll()
                #expect(entries.map(\.key) == ["Count", "Serial", "Greeting", "Blob"].map { Value.string($0) })
                let values = [Value.variant(.uint32(0)), .variant(.string("A-1")), .variant(.string(long)), .variant(.bytes(picture))]
                let same = entries.map(\.value) == values
                #expect(same, "GetAll's values differ from those set")
            }
            object.set("Blob", .bytes(Data([4])))
            object.set("Greeting", .string("hi"))
            for _ in 0..<2 {
                let entries = try await getAll()
                #expect(entries.map(\.key) == ["Greeting", "Count", "Serial", "Blob"].map { Value.string($0) })
                #expect(entries.last?.value == .variant(.bytes(Data([4]))))
            }
        }
    }

    @Test func approximateSizesCountTheBytes() {
        #expect(Value.bytes(Data(count: 70_000)).approximateSize == 70_000)
        #expect(Value.vardict([("a", .string("hello")), ("b", .uint32(1))]).approximateSize == 1 + 5 + 1 + 8)
    }

    @Test func objectManagerAnnouncesObjects() async throws {
        try await withPrivateBus { bus, server in
            let root = ObjectPath("/org/example")
            server.objects.addObjectManager(at: root)
            let client = try bus.connect()
            defer { client.close() }
            let d = BusName(rawValue: server.uniqueName)
            let signals = Locked<[Message]>([])
            try await client.subscribe(MatchRule(path: root, interface: .objectManager)) { message in
                signals.withLock { $0.append(message) }
            }
            server.objects.export(TestObject.path, [TestObject.make()])
            let managed = try await client.call(
                d, path: root, interface: .objectManager, member: MemberName("GetManagedObjects"))
            guard case .dictionary(_, _, let objects)? = managed.body.first else {
                Issue.record("bad reply \(managed.body)")
                return
            }
            #expect(objects.map(\.key) == [.objectPath(TestObject.path)])
            #expect(objects.first?.value.stringDictionary?["org.example.Test1"]?.stringDictionary?["Greeting"] == .string("hello"))

            server.objects.unexport(TestObject.path)
            _ = try await eventually { signals.value.count >= 2 }
            let seen = signals.value
            #expect(seen.map(\.member) == ["InterfacesAdded", "InterfacesRemoved"])
            #expect(seen.last?.body == [.objectPath(TestObject.path), .strings(["org.example.Test1"])])

            await #expect { try await client.call(d, path: TestObject.path, interface: TestObject.name, member: MemberName("Add"), [.int32(1), .int32(1)]) } throws: {
                ($0 as? DBusError)?.name == .unknownObject
            }
        }
    }

    @Test func signalsToOneConnectionReachOnlyIt() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let first = try bus.connect()
            let second = try bus.connect()
            defer {
                first.close()
                second.close()
            }
            let seenByFirst = Locked(0)
            let seenBySecond = Locked(0)
            let rule = MatchRule(interface: TestObject.name, member: MemberName("Shouted"))
            try await first.subscribe(rule) { _ in seenByFirst.withLock { $0 += 1 } }
            try await second.subscribe(rule) { _ in seenBySecond.withLock { $0 += 1 } }
            let d = BusName(rawValue: server.uniqueName)
            try await first.call(d, path: TestObject.path, interface: TestObject.name, member: MemberName("Shout"), [.string(second.uniqueName)])
            try await first.call(d, path: TestObject.path, interface: TestObject.name, member: MemberName("Shout"), [.string("")])
            // The server's signals went out before its reply, and the bus
            // keeps their order for each receiver: a ping of the server from
            // each receiver returns after whatever it was sent.
            for receiver in [first, second] {
                try await receiver.call(d, path: TestObject.path, interface: InterfaceName("org.freedesktop.DBus.Peer"), member: MemberName("Ping"))
            }
            #expect(seenByFirst.value == 1, "only the broadcast")
            #expect(seenBySecond.value == 2, "the unicast and the broadcast")
        }
    }

    @Test func nameOwnership() async throws {
        try await withPrivateBus { bus, first in
            let second = try bus.connect()
            defer { second.close() }
            let name = BusName("org.example.Owned")
            #expect(try await first.requestName(name, flags: [.allowReplacement, .doNotQueue]) == .primaryOwner)
            #expect(try await first.requestName(name, flags: [.allowReplacement, .doNotQueue]) == .alreadyOwner)
            #expect(try await second.requestName(name, flags: [.doNotQueue]) == .exists)
            let lost = Locked(false)
            try await first.subscribe(MatchRule(interface: .bus, member: MemberName("NameLost")), addToBus: false) { message in
                if message.body.first?.string == name.rawValue { lost.value = true }
            }
            #expect(try await second.requestName(name, flags: [.replaceExisting, .doNotQueue]) == .primaryOwner)
            _ = try await eventually { lost.value }
            #expect(lost.value)
        }
    }

    @Test func credentialsOfACaller() async throws {
        try await withPrivateBus { bus, connection in
            let credentials = try await connection.credentials(of: connection.uniqueName)
            #expect(credentials.userID == getuid())
            #expect(credentials.processID == UInt32(getpid()))
        }
    }
}
