import FoundationEssentials

/// A D-Bus match rule for signals, kept both as text for the bus and as
/// fields for matching messages locally.
public struct MatchRule: Sendable, Hashable {
    public var sender: String?
    public var path: ObjectPath?
    public var interface: InterfaceName?
    public var member: MemberName?
    /// The first argument, when it is a string.
    public var arg0: String?

    public init(
        sender: String? = nil, path: ObjectPath? = nil, interface: InterfaceName? = nil,
        member: MemberName? = nil, arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule as AddMatch takes it.
    public var text: String {
        var parts = ["type='signal'"]
        func quoted(_ key: String, _ value: String) {
            parts.append("\(key)='\(value.replacingScalars("'", with: "'\\''"))'")
        }
        if let sender { quoted("sender", sender) }
        if let path { quoted("path", path.rawValue) }
        if let interface { quoted("interface", interface.rawValue) }
        if let member { quoted("member", member.rawValue) }
        if let arg0 { quoted("arg0", arg0) }
        return parts.joined(separator: ",")
    }

    /// True when `message` is a signal this rule selects. The sender is
    /// compared as given: pass a unique name to match one connection.
    public func matches(_ message: Message) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, message.sender != sender { return false }
        if let path, message.path != path { return false }
        if let interface, message.interface != interface.rawValue { return false }
        if let member, message.member != member.rawValue { return false }
        if let arg0, message.body.first?.string != arg0 { return false }
        return true
    }
}
