import DBus
import TestSupport
import Foundation

/// An object exported by tests: every kind of method, property and signal.
enum TestObject {
    static let path = ObjectPath("/org/example/Test")
    static let name = InterfaceName("org.example.Test1")

    static let interface = Interface(
        name,
        methods: [
            Method(MemberName("Echo"), in: [Argument("value", "v")], out: [Argument("value", "v")]),
            Method(
                MemberName("Add"), in: [Argument("a", "i"), Argument("b", "i")], out: [Argument("sum", "i")]),
            Method(MemberName("Sleep"), in: [Argument("milliseconds", "u")]),
            Method(MemberName("Fail"), in: [Argument("how", "s")]),
            Method(MemberName("SetGreeting"), in: [Argument("greeting", "s")]),
            Method(MemberName("Shout"), in: [Argument("to", "s")]),
            Method(MemberName("Count"), in: [Argument("n", "u")]),
        ],
        properties: [
            Property("Greeting", "s"),
            Property("Count", "u", access: .readwrite),
            Property("Serial", "s", changeSignal: .const),
            Property("Blob", "ay", changeSignal: .invalidates),
        ],
        signals: [
            Signal(MemberName("Shouted"), [Argument("text", "s")]),
            Signal(MemberName("Counted"), [Argument("n", "u"), Argument("odd", "b"), Argument("half", "d"), Argument("low", "y")]),
        ])

    struct Refused: DBusErrorConvertible {
        var dbusError: DBusError { DBusError(ErrorName("org.example.Test1.Error.Refused"), "refused, as asked") }
    }

    /// The object; `sleeping` counts the Sleep calls under way.
    static func make(sleeping: Locked<Int>? = nil) -> ExportedInterface {
        let holder = Locked<ExportedInterface?>(nil)
        let exported = ExportedInterface(
            interface,
            properties: [
                "Greeting": .string("hello"), "Count": .uint32(0), "Serial": .string("A-1"),
                "Blob": .bytes(Data([1, 2, 3])),
            ],
            methods: [
                "Sleep": { call in
                    guard case .uint32(let ms) = call.arguments[0] else { return [] }
                    sleeping?.withLock { $0 += 1 }
                    defer { sleeping?.withLock { $0 -= 1 } }
                    // A slow method, as asked: behaviour, not a wait of the test's.
                    try await Task.sleep(for: .milliseconds(ms))
                    return []
                },
                "Fail": { call in
                    switch call.arguments[0].string {
                    case "named": throw Refused()
                    default: throw CocoaError(.fileNoSuchFile)
                    }
                },
                "SetGreeting": { call in
                    holder.value?.set("Greeting", call.arguments[0])
                    return []
                },
                "Count": { call in
                    guard case .uint32(let n) = call.arguments[0] else { return [] }
                    try holder.value?.emit("Counted", [.uint32(n), .boolean(n % 2 == 1), .double(Double(n) / 2), .byte(UInt8(truncatingIfNeeded: n))])
                    return []
                },
                "Shout": { call in
                    let to = call.arguments[0].string ?? ""
                    try holder.value?.emit(
                        "Shouted", [.string("HEY")], to: to.isEmpty ? nil : BusName(rawValue: to))
                    return []
                },
            ],
            immediate: [
                "Echo": { call in [call.arguments[0]] },
                "Add": { call in
                    guard case .int32(let a) = call.arguments[0], case .int32(let b) = call.arguments[1] else {
                        throw DBusError.invalidArgs("two integers")
                    }
                    let (sum, overflow) = a.addingReportingOverflow(b)
                    if overflow { throw DBusError.invalidArgs("the sum does not fit 32 bits") }
                    return [.int32(sum)]
                },
            ],
            setters: [
                "Count": { _, value in
                    if case .uint32(let n) = value, n > 1000 {
                        throw DBusError.invalidArgs("Count is at most 1000")
                    }
                }
            ])
        holder.value = exported
        return exported
    }
}
