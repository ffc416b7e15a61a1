import DBus
import FoundationEssentials
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

// MARK: Groups

func defaults(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    let bundle = try takeIdentity(&arguments)
    guard arguments.count >= 2 else { throw Failure.usage("defaults needs a group id and get, set, remove or list") }
    let group = arguments[0]
    guard BundleCatalog.isValidGroupID(group) else { throw Failure.usage("'\(group)' is not a group id (group.…)") }
    guard let bundle else { throw Failure.usage("defaults needs --as BUNDLE: a bundle entitled to \(group)") }
    try await client.register(as: bundle)
    let path = Today.groupPath(group)
    func call<each Input: DBusArgument>(_ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input) async throws -> Message {
        let values = method.values(repeat each inputs)
        return try await Client.attempt {
            try await client.connection.call(Today.busName, path: path, interface: Today.group.name, member: method.method.name, values)
        }
    }
    let verb = arguments[1]
    let operands = Array(arguments.dropFirst(2))
    switch verb {
    case "get":
        guard operands.count == 1 else { throw Failure.usage("defaults GROUP get KEY") }
        let value = try ValueMapping.plist(try await call(Today.Group.get, operands[0]).value(Variant.self, answering: "Get").value)
        if json {
            Out.json(.dictionary(["key": .string(operands[0]), "value": value]))
        } else {
            Out.line(describe(value))
        }
    case "list":
        guard operands.isEmpty else { throw Failure.usage("defaults GROUP list") }
        let value = try ValueMapping.plist(try await call(Today.Group.getAll).value(VariantDictionary.self, answering: "GetAll").value)
        if json {
            Out.json(value)
        } else {
            for (key, item) in value.dictionary ?? [:] { Out.line("\(key)\t\(describe(item))") }
        }
    case "remove":
        guard operands.count == 1 else { throw Failure.usage("defaults GROUP remove KEY") }
        _ = try await call(Today.Group.remove, operands[0])
        if json { Out.json(.dictionary(["key": .string(operands[0]), "removed": .boolean(true)])) }
    case "set":
        let types = ["--int", "--real", "--bool", "--date", "--data", "--string"]
        let type = operands.first(where: { types.contains($0) }) ?? "--string"
        let plain = operands.filter { !types.contains($0) }
        guard plain.count == 2, operands.filter({ types.contains($0) }).count <= 1 else {
            throw Failure.usage("defaults GROUP set KEY VALUE [--int|--real|--bool|--date|--data]")
        }
        let value = try typedValue(plain[1], type)
        _ = try await call(Today.Group.set, plain[0], Variant(ValueMapping.dbus(value, typedArrays: false)))
        if json { Out.json(.dictionary(["key": .string(plain[0]), "value": value])) }
    default:
        throw Failure.usage("defaults takes get, set, remove or list, not '\(verb)'")
    }
}

/// A value typed on the command line.
func typedValue(_ text: String, _ type: String) throws -> PlistValue {
    switch type {
    case "--int":
        guard let value = Int64(text) else { throw Failure.usage("'\(text)' is not an integer") }
        return .integer(value)
    case "--real":
        guard let value = Double(text), value.isFinite else { throw Failure.usage("'\(text)' is not a real number") }
        return .real(value)
    case "--bool":
        guard let value = ["true": true, "false": false, "yes": true, "no": false, "1": true, "0": false][text.lowercased()] else {
            throw Failure.usage("'\(text)' is not true or false")
        }
        return .boolean(value)
    case "--date":
        if let seconds = Double(text) { return .date(Date(timeIntervalSince1970: seconds)) }
        guard let date = try? Date(text, strategy: .iso8601) else {
            throw Failure.usage("'\(text)' is not a date: give ISO 8601 (2026-11-29T12:00:00Z) or seconds since the epoch")
        }
        return .date(date)
    case "--data":
        if text.hasPrefix("@") {
            guard let data = FileManager.default.contents(atPath: String(text.dropFirst())) else {
                throw Failure.refused("cannot read \(text.dropFirst())")
            }
            return .data(data)
        }
        guard let data = Data(base64Encoded: text) else { throw Failure.usage("'\(text)' is not base64; give @FILE to read a file") }
        return .data(data)
    default:
        return .string(text)
    }
}

func describe(_ value: PlistValue) -> String {
    switch value {
    case .string(let s): s
    case .data(let d): "<\(d.count) bytes: \(d.prefix(16).map(hex).joined())\(d.count > 16 ? "…" : "")>"
    case .date(let d): d.formatted(.iso8601)
    case .array, .dictionary: JSONOutput.text(value, compact: true)
    default: JSONOutput.text(value, compact: true)
    }
}
