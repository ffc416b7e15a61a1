// A service on our D-Bus layer with the reply shape of ../shared/bench's
// dbus-echo-ref: an object whose interface has ten string properties, read
// with Properties.GetAll.
//
//   dbus-bench-service NAME
import DBus
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 2, let name = BusName(rawValue: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: dbus-bench-service NAME\n".utf8))
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
        FileHandle.standardError.write(Data("could not own \(name)\n".utf8))
        exit(1)
    }
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        connection.onDisconnect { done.resume() }
    }
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
