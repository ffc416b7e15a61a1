/// Reading a reply or a signal by the types its sender declared: the body
/// checked against them, and an error that names the message where it does
/// not fit, instead of values read by position and defaults for the rest.
extension Message {
    /// What a message is called in errors: `member of interface` or its kind.
    private var what: String {
        switch (interface, member) {
        case (let interface?, let member?): "\(member) of \(interface)"
        case (nil, let member?): member
        default: kind == .methodReturn ? "a reply" : "a message"
        }
    }

    /// The body's one value, as `T`; throws where the body holds anything
    /// else (a reply to a call of `method`, for the message, or to a signal).
    public func value<T: DBusArgument>(_ type: T.Type = T.self, answering method: String? = nil) throws -> T {
        guard body.count == 1 else { throw mismatch(T.dbusType.signature, answering: method) }
        do {
            return try T(dbusValue: body[0])
        } catch {
            throw mismatch(T.dbusType.signature, answering: method)
        }
    }

    /// The body's values, as `types`; throws where it holds anything else.
    public func values<each T: DBusArgument>(_ types: repeat (each T).Type, answering method: String? = nil) throws -> (repeat each T) {
        var signature = ""
        for type in repeat each types { signature += type.dbusType.signature }
        guard self.signature == signature else { throw mismatch(signature, answering: method) }
        var index = 0
        func next<Element: DBusArgument>(_ type: Element.Type) throws -> Element {
            defer { index += 1 }
            return try Element(dbusValue: body[index])
        }
        do {
            return (repeat try next(each types))
        } catch {
            throw mismatch(signature, answering: method)
        }
    }

    /// The body's one value, which must be of `type` (for types with no
    /// Swift counterpart: a timeline's `a(ta{sv}d)`, say).
    public func value(of type: DBusType, answering method: String? = nil) throws -> Value {
        guard body.count == 1, body[0].type == type else { throw mismatch(type.signature, answering: method) }
        return body[0]
    }

    private func mismatch(_ expected: String, answering method: String?) -> DBusError {
        let subject = method.map { "the reply to \($0)" } ?? what
        return DBusError.failed("\(subject) came as '\(signature)' where '\(expected)' was expected: the other side speaks another version")
    }
}
