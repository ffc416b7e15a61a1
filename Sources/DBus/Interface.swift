import FoundationEssentials

/// A D-Bus interface declared once, as data: its methods with argument names
/// and types, its properties with access and change-signal behaviour, and its
/// signals. Dispatch, argument checking, `Properties`, PropertiesChanged and
/// the introspection XML all follow from this one value. A class, as
/// `Method` is: routing a call holds it by one reference, not a copy of
/// its fields.
public final class Interface: Sendable {
    public let name: InterfaceName
    public let methods: [Method]
    public let properties: [Property]
    public let signals: [Signal]
    /// What the interface is for, as a comment in the introspection XML.
    public let doc: String

    public init(
        _ name: InterfaceName, methods: [any MethodDeclaring] = [], properties: [Property] = [], signals: [Signal] = [],
        doc: String = ""
    ) {
        self.name = name
        self.methods = methods.map(\.method)
        self.properties = properties
        self.signals = signals
        self.doc = doc
    }

    public func method(named name: String) -> Method? { methods.first { $0.name.rawValue == name } }
    public func property(named name: String) -> Property? { properties.first { $0.name == name } }
    public func signal(named name: String) -> Signal? { signals.first { $0.name.rawValue == name } }
}

/// A named, typed argument of a method or signal.
public struct Argument: Sendable {
    public let name: String
    public let type: DBusType
    public init(_ name: String, _ type: DBusType) {
        self.name = name
        self.type = type
    }
}

/// A method: its arguments, their signatures and the types a call's body
/// is read by. Never changed once made, and held by reference.
public final class Method: Sendable {
    public let name: MemberName
    public let inputs: [Argument]
    public let outputs: [Argument]
    /// The signature a call must carry.
    public let inputSignature: String
    public let outputSignature: String
    public let doc: String
    /// The inputs' types, by which a call's body is read once it is known
    /// to carry them (its signature is `inputSignature`).
    let inputTypes: [DBusType]

    public init(_ name: MemberName, in inputs: [Argument] = [], out outputs: [Argument] = [], doc: String = "") {
        self.name = name
        self.doc = doc
        self.inputs = inputs
        self.outputs = outputs
        self.inputTypes = inputs.map(\.type)
        self.inputSignature = inputs.map(\.type.signature).joined()
        self.outputSignature = outputs.map(\.type.signature).joined()
    }
}

public struct Signal: Sendable {
    public let name: MemberName
    public let arguments: [Argument]
    public let doc: String
    public init(_ name: MemberName, _ arguments: [Argument] = [], doc: String = "") {
        self.name = name
        self.arguments = arguments
        self.doc = doc
    }
}

public struct Property: Sendable {
    public enum Access: String, Sendable { case read, write, readwrite }

    /// The `org.freedesktop.DBus.Property.EmitsChangedSignal` annotation.
    public enum ChangeSignal: String, Sendable {
        /// PropertiesChanged carries the new value.
        case emits = "true"
        /// PropertiesChanged names the property without its value.
        case invalidates
        /// The value never changes while the object exists.
        case const
        /// Changes are not signalled.
        case none = "false"
    }

    public let name: String
    public let type: DBusType
    public let access: Access
    public let changeSignal: ChangeSignal
    public let doc: String

    public init(_ name: String, _ type: DBusType, access: Access = .read, changeSignal: ChangeSignal = .emits, doc: String = "") {
        self.name = name
        self.doc = doc
        self.type = type
        self.access = access
        self.changeSignal = changeSignal
    }

    public var isReadable: Bool { access != .write }
    public var isWritable: Bool { access != .read }
}

// MARK: The standard interfaces, declared the same way

extension Interface {
    public static let introspectable = Interface(
        .introspectable, methods: [Method(.introspect, out: [Argument("xml_data", "s")])])

    public static let peer = Interface(
        .peer,
        methods: [
            Method(MemberName("Ping")),
            Method(MemberName("GetMachineId"), out: [Argument("machine_uuid", "s")]),
        ])

    public static let properties = Interface(
        .properties,
        methods: [
            Method(
                .get, in: [Argument("interface_name", "s"), Argument("property_name", "s")],
                out: [Argument("value", "v")]),
            Method(
                .getAll, in: [Argument("interface_name", "s")],
                out: [Argument("properties", "a{sv}")]),
            Method(
                MemberName("Set"),
                in: [Argument("interface_name", "s"), Argument("property_name", "s"), Argument("value", "v")]),
        ],
        signals: [
            Signal(
                .propertiesChanged,
                [
                    Argument("interface_name", "s"), Argument("changed_properties", "a{sv}"),
                    Argument("invalidated_properties", "as"),
                ])
        ])

    public static let objectManager = Interface(
        .objectManager,
        methods: [
            Method(.getManagedObjects, out: [Argument("objects", "a{oa{sa{sv}}}")])
        ],
        signals: [
            Signal(
                .interfacesAdded,
                [Argument("object_path", "o"), Argument("interfaces_and_properties", "a{sa{sv}}")]),
            Signal(.interfacesRemoved, [Argument("object_path", "o"), Argument("interfaces", "as")]),
        ])
}

// MARK: Introspection XML

extension Interface {
    /// This interface as an `<interface>` element of introspection XML.
    public func introspectionXML(indent: String = " ") -> String {
        var xml = Interface.comment(doc, indent: indent) + "\(indent)<interface name=\"\(name.rawValue)\">\n"
        let inner = indent + " "
        for method in methods {
            xml += Interface.comment(method.doc, indent: inner)
            let arguments =
                method.inputs.map { ($0, "in") } + method.outputs.map { ($0, "out") }
            if arguments.isEmpty {
                xml += "\(inner)<method name=\"\(method.name.rawValue)\"/>\n"
                continue
            }
            xml += "\(inner)<method name=\"\(method.name.rawValue)\">\n"
            for (argument, direction) in arguments {
                xml +=
                    "\(inner) <arg name=\"\(argument.name)\" type=\"\(Interface.escape(argument.type.signature))\" direction=\"\(direction)\"/>\n"
            }
            xml += "\(inner)</method>\n"
        }
        for signal in signals {
            xml += Interface.comment(signal.doc, indent: inner)
            if signal.arguments.isEmpty {
                xml += "\(inner)<signal name=\"\(signal.name.rawValue)\"/>\n"
                continue
            }
            xml += "\(inner)<signal name=\"\(signal.name.rawValue)\">\n"
            for argument in signal.arguments {
                xml += "\(inner) <arg name=\"\(argument.name)\" type=\"\(Interface.escape(argument.type.signature))\"/>\n"
            }
            xml += "\(inner)</signal>\n"
        }
        for property in properties {
            xml += Interface.comment(property.doc, indent: inner)
            xml +=
                "\(inner)<property name=\"\(property.name)\" type=\"\(Interface.escape(property.type.signature))\" access=\"\(property.access.rawValue)\">\n"
            xml +=
                "\(inner) <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(property.changeSignal.rawValue)\"/>\n"
            xml += "\(inner)</property>\n"
        }
        xml += "\(indent)</interface>\n"
        return xml
    }

    /// `doc` as an XML comment, one line per line; nothing when empty.
    static func comment(_ doc: String, indent: String) -> String {
        guard !doc.isEmpty else { return "" }
        // A comment cannot hold "--": a space goes between two hyphens.
        var safe = ""
        for scalar in doc.unicodeScalars {
            if scalar == "-", safe.unicodeScalars.last == "-" { safe.unicodeScalars.append(" ") }
            safe.unicodeScalars.append(scalar)
        }
        return safe.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { index, line in
            indent + (index == 0 ? "<!-- " : "     ") + line
        }.joined(separator: "\n") + " -->\n"
    }

    static func escape(_ text: String) -> String {
        text.replacingScalars("&", with: "&amp;").replacingScalars("<", with: "&lt;")
            .replacingScalars(">", with: "&gt;").replacingScalars("\"", with: "&quot;")
    }

    public static let introspectionDocType = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """
}
