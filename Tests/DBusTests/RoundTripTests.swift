import DBus
import TestSupport
import Foundation
import Testing

@Suite struct RoundTripTests {
    static let samples: [Value] = {
        let nestedArray = (0..<31).reduce(Value.array(.int32, [.int32(7)])) { inner, _ in .array(inner.type, [inner]) }
        return [
            .byte(0), .byte(255), .boolean(true), .boolean(false),
            .int16(.min), .int16(.max), .uint16(.max), .int32(.min), .int32(.max), .uint32(.max),
            .int64(.min), .int64(.max), .uint64(.max), .double(-0.5), .double(.greatestFiniteMagnitude),
            .double(.infinity),
            .string(""), .string("héllo wörld ✓ 日本語 🙂"), .string(String(repeating: "x", count: 100_000)),
            .objectPath(ObjectPath("/")), .objectPath(ObjectPath("/a/b_c/D9")),
            .signature(Signature(rawValue: "a{sv}(iu)")!), .signature(Signature(rawValue: "")!),
            .array(.string, []), .bytes(Data()), .bytes(Data(0...255)),
            // Arrays of fixed-size types go to libdbus in one piece.
            .array(.uint32, [.uint32(0), .uint32(7), .uint32(.max)]), .array(.uint32, []), .array(.int32, [.int32(.min), .int32(-1)]),
            .array(.uint64, [.uint64(.max)]), .array(.int64, []), .array(.int64, [.int64(.min), .int64(1)]),
            .array(.double, [.double(-0.5), .double(.infinity)]), .structure([.byte(1), .array(.uint64, [.uint64(1 << 40)])]),
            .array(.array(.variant), [.array(.variant, [])]),
            .dictionary(key: .string, value: .variant, []),
            .vardict([("a", .int32(1)), ("b", .string("two")), ("c", .variant(.variant(.boolean(true))))]),
            .dictionary(
                key: .uint64, value: .array(.double),
                [DictionaryEntry(.uint64(1), .array(.double, [1.5, 2.5].map(Value.double)))]),
            .structure([.int32(1), .string("s"), .structure([.double(2), .array(.string, [])])]),
            .variant(.variant(.variant(.string("deep")))),
            nestedArray,
        ]
    }()

    @Test func everyTypeSurvivesARoundTrip() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let client = try bus.connect()
            defer { client.close() }
            let destination = try #require(BusName(rawValue: server.uniqueName))
            for sample in Self.samples {
                let reply = try await client.call(
                    destination, path: TestObject.path, interface: TestObject.name, member: MemberName("Echo"),
                    [.variant(sample)])
                #expect(reply.body == [.variant(sample)], "round trip of \(sample.type.signature)")
            }
        }
    }

    @Test func unixFileDescriptorsTravel() async throws {
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let client = try bus.connect()
            defer { client.close() }
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            let writer = UnixFileDescriptor(owning: fds[1])
            let reader = UnixFileDescriptor(owning: fds[0])
            _ = reader
            let reply = try await client.call(
                BusName(rawValue: server.uniqueName), path: TestObject.path, interface: TestObject.name,
                member: MemberName("Echo"), [.variant(.unixFD(writer))])
            guard case .variant(.unixFD(let received))? = reply.body.first else {
                Issue.record("no descriptor came back: \(reply.body)")
                return
            }
            #expect(received.rawValue != writer.rawValue, "a received descriptor is a new one")
            #expect(write(received.rawValue, "x", 1) == 1)
            var byte: UInt8 = 0
            #expect(read(reader.rawValue, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
        }
    }

    /// A method declared with Swift types reads its arguments from the
    /// message's bytes as those types; the handler sees what was sent, and
    /// `arguments` gives it as `Value`s. A variant carrying a descriptor
    /// sends the call through libdbus's iterators, which hand it over.
    @Test func typedArgumentsAreReadFromTheWire() async throws {
        let declared = MethodDeclaration(
            MemberName("Take"), in: ("text", String.self), ("number", UInt32.self), ("signed", Int32.self), ("list", [String].self),
            ("flag", Bool.self), ("inside", Variant.self), ("options", VariantDictionary.self), out: [Argument("seen", "av")])
        let interface = Interface(InterfaceName("org.example.Typed1"), methods: [declared])
        let exported = ExportedInterface(
            interface,
            bindings: [
                declared.immediate { call, text, number, signed, list, flag, inside, options in
                    let seen: [Value] = [
                        .string(text), .uint32(number), .int32(signed), .strings(list), .boolean(flag), inside.value, options.value,
                    ]
                    // Read again through libdbus, a descriptor is a new one.
                    if case .unixFD = inside.value {} else {
                        #expect(call.arguments == [
                            .string(text), .uint32(number), .int32(signed), .strings(list), .boolean(flag), .variant(inside.value), options.value,
                        ])
                    }
                    return [.array(.variant, seen.map { .variant($0) })]
                }
            ])
        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [exported])
            let client = try bus.connect()
            defer { client.close() }
            let destination = try #require(BusName(rawValue: server.uniqueName))
            var fds: [Int32] = [0, 0]
            #expect(pipe(&fds) == 0)
            let writer = UnixFileDescriptor(owning: fds[1])
            let reader = UnixFileDescriptor(owning: fds[0])
            let sent: [[Value]] = [
                [
                    .string("héllo wörld ✓ 日本語 🙂"), .uint32(.max), .int32(.min), .strings(["", "b", String(repeating: "x", count: 70_000)]),
                    .boolean(true), .variant(.structure([.int32(1), .string("s")])), .vardict([("a", .int32(1)), ("b", .strings([]))]),
                ],
                [.string(""), .uint32(0), .int32(-1), .strings([]), .boolean(false), .variant(.bytes(Data())), .vardict([])],
                [.string("fd"), .uint32(1), .int32(1), .strings(["a"]), .boolean(true), .variant(.unixFD(writer)), .vardict([])],
            ]
            for arguments in sent {
                let reply = try await client.call(
                    destination, path: TestObject.path, interface: interface.name, member: MemberName("Take"), arguments)
                guard case .array(.variant, let seen)? = reply.body.first else {
                    Issue.record("no answer: \(reply.body)")
                    continue
                }
                let unwrapped = seen.map(\.unwrapped)
                if case .variant(.unixFD)? = arguments.dropFirst(5).first {
                    #expect(unwrapped.prefix(5) == arguments.prefix(5))
                    guard case .unixFD(let received)? = unwrapped.dropFirst(5).first else {
                        Issue.record("no descriptor came through: \(unwrapped)")
                        continue
                    }
                    #expect(write(received.rawValue, "x", 1) == 1)
                    var byte: UInt8 = 0
                    #expect(read(reader.rawValue, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
                } else {
                    #expect(unwrapped == arguments.map(\.unwrapped))
                }
            }
        }
    }

    @Test func badValuesAreRefusedBeforeSending() async throws {
        #expect(ObjectPath(rawValue: "no/slash") == nil)
        #expect(ObjectPath(rawValue: "/trailing/") == nil)
        #expect(ObjectPath(rawValue: "/a//b") == nil)
        #expect(ObjectPath(rawValue: "/a\u{0}b") == nil)
        #expect(BusName(rawValue: "no-dots") == nil)
        #expect(BusName(rawValue: ":1.5") != nil)
        #expect(InterfaceName(rawValue: "a..b") == nil)
        #expect(MemberName(rawValue: "With.Dot") == nil)
        #expect(ErrorName(rawValue: "Single") == nil)
        #expect(Signature(rawValue: "a{vs}") == nil, "a dictionary key must be basic")
        #expect(Signature(rawValue: "(") == nil)
        #expect(Signature(rawValue: String(repeating: "a", count: 33) + "i") == nil, "33 nested arrays")
        #expect(Signature(rawValue: String(repeating: "a", count: 32) + "i") != nil)
        #expect(ObjectPath.escape("tech.agostini.app.LatestPost") == "tech_2eagostini_2eapp_2eLatestPost")
        #expect(ObjectPath.escape("") == "_")
        #expect(ObjectPath.unescape("tech_2eagostini") == "tech.agostini")

        try await withPrivateBus { bus, server in
            server.objects.export(TestObject.path, [TestObject.make()])
            let destination = BusName(rawValue: server.uniqueName)
            await #expect(throws: DBusError.self) {
                try await server.call(
                    destination, path: TestObject.path, interface: TestObject.name, member: MemberName("Echo"),
                    [.variant(.string("nul\u{0}inside"))])
            }
            await #expect(throws: DBusError.self) {
                try await server.call(
                    destination, path: TestObject.path, interface: TestObject.name, member: MemberName("Echo"),
                    [.variant(.array(.string, [.int32(1)]))])
            }
            await #expect(throws: DBusError.self) {
                try await server.call(
                    destination, path: TestObject.path, interface: TestObject.name, member: MemberName("Echo"),
                    [.variant(.array(.uint32, [.uint32(1), .int32(2)]))])
            }
            // The connection is still usable afterwards.
            let reply = try await server.call(
                destination, path: TestObject.path, interface: TestObject.name, member: MemberName("Add"),
                [.int32(2), .int32(3)])
            #expect(reply.body == [.int32(5)])
        }
    }
}
