import DBus
import FoundationEssentials
import PropertyList
import TodayCore
import TodayProtocol

// MARK: The layout (SPEC section 16)

/// One placed instance as `todayctl layout` shows it.
private struct PlacedInstance {
    var id: WidgetInstanceID
    var name: String
    var family: String
    var configuration: PlistDictionary

    var value: PlistValue {
        .dictionary([
            "instance": .string(id.description), "kind": .string(id.kind.rawValue), "path": .string(id.path.rawValue), "name": .string(name),
            "family": .string(family), "configuration": .dictionary(configuration),
        ])
    }
}

extension Client {
    /// Center.Layout: what the view shows, in order.
    func layout() async throws -> [WidgetInstanceID] {
        (try await centerProperty(Today.Center.layout.name)?.elements ?? []).compactMap { value in
            if case .objectPath(let path) = value { WidgetInstanceID(path: path) } else { nil }
        }
    }

    /// Layout's instances as ids (`kind`, `kind/n`); ListWidgets' kinds
    /// where todayd has no Layout (one from before instances).
    func layoutIDs() async throws -> [String] {
        do {
            return try await layout().map(\.description)
        } catch let failure as Failure where failure.message.contains("Layout") || failure.message.contains("property") {
            return try await widgetIDs()
        }
    }

    /// An interface's properties on an instance's object.
    func properties(_ id: WidgetInstanceID, _ interface: Interface) async throws -> [String: Value] {
        try await Self.attempt {
            let reply = try await connection.call(
                Today.busName, path: id.path, interface: .properties, member: .getAll, [.string(interface.name.rawValue)])
            return try reply.value(VariantDictionary.self, answering: "GetAll").dictionary
        }
    }

    /// The kind's parameters, as its Widget object gives them.
    func parameters(of kind: BundleID) async throws -> [WidgetParameter] {
        let values = try await properties(WidgetInstanceID(kind: kind), Today.widget)
        return (values[Today.Widget.parameters.name]?.elements ?? []).compactMap(WidgetParameter.init(dbusValue:))
    }
}

/// An instance from the command line: `KIND`, `KIND/N` or its object path.
func instanceID(_ text: String) throws -> WidgetInstanceID {
    if let id = WidgetInstanceID(text) ?? ObjectPath(rawValue: text).flatMap(WidgetInstanceID.init(path:)) { return id }
    throw Failure.usage("'\(text)' is not a widget instance: a widget id, id/number or the object path; `todayctl layout` lists them")
}

/// Takes every `--set KEY=VALUE`, `--family F` and `--at N` out of `arguments`.
private func takeSettings(_ arguments: inout [String]) throws -> (set: [(String, String)], family: String?, at: Int32?) {
    var set: [(String, String)] = []
    var family: String?
    var at: Int32?
    var rest: [String] = []
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        switch argument {
        case "--set":
            guard let pair = iterator.next(), let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw Failure.usage("--set takes KEY=VALUE, such as --set zone=Asia/Tokyo")
            }
            set.append((String(pair[..<equals]), String(pair[pair.index(after: equals)...])))
        case "--family":
            guard let value = iterator.next() else { throw Failure.usage("--family takes small, medium or large") }
            family = value
        case "--at":
            guard let text = iterator.next(), let position = Int32(text), position >= 0 else {
                throw Failure.usage("--at takes a position in the layout, 0 for the first")
            }
            at = position
        default: rest.append(argument)
        }
    }
    arguments = rest
    return (set, family, at)
}

/// `--set` values typed as the kind's parameters take them; a key the kind
/// does not have goes as a string, for todayd to name in its refusal.
private func typed(_ set: [(String, String)], for kind: BundleID, _ client: Client) async throws -> [(String, Value)] {
    let parameters = try await client.parameters(of: kind)
    return try set.map { key, text in
        guard let parameter = parameters.first(where: { $0.key == key }) else { return (key, .string(text)) }
        guard let value = parameter.value(parsing: text) else {
            throw Failure.usage("'\(text)' is not a value for \(key), \(parameter.type == .integer ? "an integer" : "true or false")")
        }
        return (key, ValueMapping.dbus(value))
    }
}

func layout(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.isEmpty else { throw Failure.usage("layout takes no arguments") }
    var placed: [PlacedInstance] = []
    for id in try await client.layout() {
        let widget = try await client.properties(id, Today.widget)
        let instance = id.isDefault ? [:] : try await client.properties(id, Today.instance)
        let configuration = (instance[Today.Instance.configuration.name]).flatMap { try? ValueMapping.plist($0).dictionary } ?? [:]
        let family = instance[Today.Instance.family.name]?.string ?? widget[Today.Widget.supportedFamilies.name]?.elements?.first?.string ?? "medium"
        placed.append(PlacedInstance(id: id, name: widget[Today.Widget.displayName.name]?.string ?? id.kind.rawValue, family: family, configuration: configuration))
    }
    if json {
        Out.json(.array(placed.map(\.value)))
        return
    }
    if placed.isEmpty { Out.line("the layout is empty: `todayctl add WIDGET` places one") }
    for (index, instance) in placed.enumerated() {
        let settings = instance.configuration.isEmpty ? "" : "\t" + Plist.displayJSON(.dictionary(instance.configuration), compact: true)
        Out.line("\(index)\t\(instance.id)\t\(instance.name)\t\(instance.family)\(settings)")
    }
}

func add(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    let settings = try takeSettings(&arguments)
    guard arguments.count == 1 else { throw Failure.usage("add needs one widget id (and --set KEY=VALUE…, --family F, --at N)") }
    let kind = try Client.widgetID(arguments[0])
    let configuration = try await typed(settings.set, for: kind, client)
    let reply = try await client.center(
        Today.Center.addWidget, kind, VariantDictionary(configuration), settings.family ?? "", settings.at ?? -1)
    let path = try reply.value(ObjectPath.self, answering: "AddWidget")
    let id = WidgetInstanceID(path: path)?.description ?? path.rawValue
    if json {
        Out.json(.dictionary(["instance": .string(id), "path": .string(path.rawValue)]))
    } else {
        Out.line("added \(id)")
    }
}

func remove(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 1 else { throw Failure.usage("remove needs one instance (see `todayctl layout`)") }
    let id = try instanceID(arguments[0])
    try await client.center(Today.Center.removeWidget, id.path)
    if json {
        Out.json(.dictionary(["removed": .string(id.description)]))
    } else {
        Out.line(id.isDefault ? "\(id) left the layout (its widget stays installed)" : "removed \(id)")
    }
}

func move(_ client: Client, _ arguments: [String], json: Bool) async throws {
    guard arguments.count == 2, let position = Int(arguments[1]), position >= 0 else {
        throw Failure.usage("move needs an instance and a position, 0 for the first")
    }
    let id = try instanceID(arguments[0])
    var order = try await client.layout()
    guard let index = order.firstIndex(of: id) else {
        throw Failure.refused("\(id) is not in the layout; `todayctl layout` lists what is")
    }
    order.remove(at: index)
    order.insert(id, at: min(position, order.count))
    try await client.center(Today.Center.setLayout, ObjectPathList(order.map(\.path)))
    if json {
        Out.json(.array(order.map { .string($0.description) }))
    } else {
        Out.line("moved \(id) to \(min(position, order.count - 1))")
    }
}

func configure(_ client: Client, _ arguments: [String], json: Bool) async throws {
    var arguments = arguments
    let settings = try takeSettings(&arguments)
    guard arguments.count == 1, settings.at == nil else {
        throw Failure.usage("configure needs one added instance and --set KEY=VALUE… or --family F")
    }
    let id = try instanceID(arguments[0])
    guard !id.isDefault else {
        throw Failure.usage("\(id) is the widget's own instance, which has the defaults; `todayctl add \(id.kind) --set …` places a configured one")
    }
    // The values not given stay as they are.
    let current = try await client.properties(id, Today.instance)
    var configuration = VariantDictionary(current[Today.Instance.configuration.name] ?? .vardict([])).map { $0.entries } ?? []
    for (key, value) in try await typed(settings.set, for: id.kind, client) {
        configuration.removeAll { $0.key == key }
        configuration.append((key: key, value: value))
    }
    let family = settings.family ?? current[Today.Instance.family.name]?.string ?? ""
    try await client.connectionCall(id.path, Today.instance, Today.Instance.configure, VariantDictionary(configuration.map { ($0.key, $0.value) }), family)
    if json {
        Out.json(.dictionary(["instance": .string(id.description), "family": .string(family)]))
    } else {
        Out.line("configured \(id)")
    }
}

extension Client {
    /// Calls a method of `interface` on the object at `path`.
    @discardableResult
    func connectionCall<each Input: DBusArgument>(
        _ path: ObjectPath, _ interface: Interface, _ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input
    ) async throws -> Message {
        let values = method.values(repeat each inputs)
        return try await Self.attempt {
            try await connection.call(Today.busName, path: path, interface: interface.name, member: method.method.name, values)
        }
    }
}
