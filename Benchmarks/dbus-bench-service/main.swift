// A service on our D-Bus layer with the reply shape of ../shared/bench's
// dbus-echo-ref: an object whose interface has ten string properties, read
// with Properties.GetAll.
//
//   dbus-bench-service NAME
import DBus
import Glibc

func complain(_ text: String) {
    let bytes = Array(text.utf8)
    _ = write(2, bytes, bytes.count)
}

let arguments = CommandLine.arguments
guard arguments.count == 2, let name = BusName(rawValue: arguments[1]) else {
    complain("usage: dbus-bench-service NAME\n")
    exit(2)
}

let interface = Interface(
    InterfaceName("io.github.todayd.Bench1"),
    properties: (0..<10).map { Property("Property\($0)", "s") })
let values = Dictionary(
    uniqueKeysWithValues: (0..<10).map {
        ("Property\($0)", Value.string("value-of-property-\($0)-padded-to-a-typical-size"))
    })

do {
    let connection = try Connection.session()
    connection.objects.export(ObjectPath("/io/github/todayd/Bench1"), [ExportedInterface(interface, properties: values)])
    guard try await connection.requestName(name, flags: .doNotQueue) == .primaryOwner else {
        complain("could not own \(name)\n")
        exit(1)
    }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        connection.onDisconnect { done.resume() }
    }
} catch {
    complain("\(error)\n")
    exit(1)
}
