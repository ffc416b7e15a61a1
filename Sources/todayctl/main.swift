import DBus
import Foundation
import PropertyList
import TodayCore

let usage = """
    usage: todayctl [--address ADDR] COMMAND …

      list                              the widgets todayd serves, one per line
      plist FILE [--to xml|binary|json] print a property list (XML by default)
      lint PATH…                        check .app bundles, or folders of them, against the bundle rules;
                                        one line per problem: `file: key: message`

    Exit status: 0 on success, 1 when the service or the file said no, 2 on bad usage.
    """

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("todayctl: \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.isEmpty || arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(arguments.isEmpty ? 2 : 0)
}
var address = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"]
if let index = arguments.firstIndex(of: "--address") {
    guard index + 1 < arguments.count else { fail("--address needs a bus address\n\(usage)", status: 2) }
    address = arguments[index + 1]
    arguments.removeSubrange(index...index + 1)
}

switch arguments.first {
case "plist":
    guard arguments.count == 2 || (arguments.count == 4 && arguments[2] == "--to") else {
        fail("plist FILE [--to xml|binary|json]", status: 2)
    }
    let format = arguments.count == 4 ? PlistFormat(rawValue: arguments[3]) : .xml
    guard let format else { fail("--to takes xml, binary or json, not '\(arguments[3])'", status: 2) }
    do {
        let value = try Plist.read(contentsOf: arguments[1])
        FileHandle.standardOutput.write(try Plist.write(value, format: format))
    } catch {
        fail("\(arguments[1]): \(error)", status: 1)
    }
case "lint":
    let paths = Array(arguments.dropFirst())
    guard !paths.isEmpty, !paths.contains(where: { $0.hasPrefix("-") }) else {
        fail("lint PATH…: give .app bundles or folders of them", status: 2)
    }
    let (checked, problems) = BundleCatalog.lint(paths)
    for problem in problems { print(problem) }
    if problems.isEmpty { print("\(checked) bundle\(checked == 1 ? "" : "s") checked: no problems") }
    exit(problems.isEmpty ? 0 : 1)
case "list":
    guard arguments.count == 1 else { fail("list takes no arguments", status: 2) }
    guard let address, !address.isEmpty else {
        fail("no bus: set DBUS_SESSION_BUS_ADDRESS or pass --address ADDR", status: 2)
    }
    do {
        let connection = try Connection(address: address)
        defer { connection.close() }
        let reply = try await connection.call(
            Today.busName, path: Today.managerPath, interface: Today.center.name, member: MemberName("ListWidgets"))
        for case .objectPath(let path) in reply.body.first?.elements ?? [] {
            let all = try await connection.call(
                Today.busName, path: path, interface: .properties, member: MemberName("GetAll"),
                [.string(Today.widget.name.rawValue)])
            let properties = all.body.first?.stringDictionary ?? [:]
            print("\(properties["BundleIdentifier"]?.string ?? path.rawValue)\t\(properties["DisplayName"]?.string ?? "")")
        }
    } catch let error as DBusError {
        fail(error.name == .serviceUnknown ? "todayd is not running on this bus: start it with `todayd`" : error.message, status: 1)
    } catch {
        fail("\(error)", status: 1)
    }
default:
    fail("unknown command '\(arguments.first ?? "")'\n\(usage)", status: 2)
}
