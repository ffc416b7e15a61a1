import FoundationEssentials

/// A Swift type that stands for one complete D-Bus type, so that a method
/// declared with it hands its handler Swift values rather than `Value`s.
public protocol DBusArgument: Sendable {
    static var dbusType: DBusType { get }
    /// The value as this type. Throws when it is not of `dbusType`, or
    /// when it is but breaks the type's own rules (an id, say), with an
    /// error that says what was wrong.
    init(dbusValue value: Value) throws
    /// The value as it goes on the wire: how a client passes this type.
    var dbusValue: Value { get }
    /// The next argument of a call, read as this type straight from the
    /// message; the call's signature has `dbusType` there. By default
    /// read as a `Value` first (`init(dbusValue:)`); strings, numbers and
    /// string arrays skip the `Value`.
    static func read(from reader: inout ArgumentReader) throws -> Self
}

extension DBusArgument {
    public static func read(from reader: inout ArgumentReader) throws -> Self {
        try Self(dbusValue: reader.value(of: dbusType))
    }

    /// The error for a value that is not of `dbusType`.
    public static func mismatch(_ value: Value) -> DBusError {
        DBusError.invalidArgs("expected a value of type '\(dbusType.signature)', not '\(value.type.signature)'")
    }
}

extension String: DBusArgument {
    public static var dbusType: DBusType { .string }
    public var dbusValue: Value { .string(self) }
    public static func read(from reader: inout ArgumentReader) throws -> String { try reader.string() }
    public init(dbusValue value: Value) throws {
        guard case .string(let text) = value else { throw Self.mismatch(value) }
        self = text
    }
}

extension Bool: DBusArgument {
    public static var dbusType: DBusType { .boolean }
    public var dbusValue: Value { .boolean(self) }
    public init(dbusValue value: Value) throws {
        guard case .boolean(let flag) = value else { throw Self.mismatch(value) }
        self = flag
    }
}

/// An `as`.
extension Array: DBusArgument where Element == String {
    public static var dbusType: DBusType { .array(.string) }
    public var dbusValue: Value { .array(.string, map { .string($0) }) }
    public static func read(from reader: inout ArgumentReader) throws -> [String] { try reader.strings() }
    public init(dbusValue value: Value) throws {
        guard case .array(.string, let elements) = value else { throw Self.mismatch(value) }
        self = elements.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }
}

/// A `v`: the value inside.
public struct Variant: DBusArgument, Hashable {
    public let value: Value
    public static var dbusType: DBusType { .variant }
    public var dbusValue: Value { .variant(value) }
    public init(_ value: Value) { self.value = value }
    public init(dbusValue value: Value) throws {
        guard case .variant(let inner) = value else { throw Self.mismatch(value) }
        self.value = inner
    }
}

/// An `av`: the values inside.
public struct VariantArray: DBusArgument, Hashable {
    public let values: [Value]
    public static var dbusType: DBusType { .array(.variant) }
    public var dbusValue: Value { .array(.variant, values.map { .variant($0) }) }
    public init(_ values: [Value]) { self.values = values }
    public init(dbusValue value: Value) throws {
        guard case .array(.variant, let elements) = value else { throw Self.mismatch(value) }
        values = elements.map(\.unwrapped)
    }
}

/// An `aa{sv}`: a list of records, each a dictionary.
public struct VariantDictionaries: DBusArgument, Hashable {
    public let dictionaries: [VariantDictionary]
    public static var dbusType: DBusType { .array(VariantDictionary.dbusType) }
    public var dbusValue: Value { .array(VariantDictionary.dbusType, dictionaries.map(\.value)) }
    public init(_ dictionaries: [VariantDictionary]) { self.dictionaries = dictionaries }
    public init(dbusValue value: Value) throws {
        guard case .array(VariantDictionary.dbusType, let elements) = value else { throw Self.mismatch(value) }
        dictionaries = try elements.map { try VariantDictionary(dbusValue: $0) }
    }
}

/// An `a{sv}`, in wire order: options, platform data, a snapshot.
public struct VariantDictionary: DBusArgument, Hashable {
    /// The dictionary as it came, for code that maps it further.
    public let value: Value
    public static var dbusType: DBusType { .dictionary(key: .string, value: .variant) }
    public var dbusValue: Value { value }
    public init(_ entries: [(String, Value)]) { value = .vardict(entries) }
    /// `value` where it is an `a{sv}`.
    public init?(_ value: Value) {
        guard let checked = try? Self(dbusValue: value) else { return nil }
        self = checked
    }
    public init(dbusValue value: Value) throws {
        // The case, not `value.type`: a dictionary's type is made anew
        // (an allocation) each time it is asked for.
        guard case .dictionary(key: .string, value: .variant, _) = value else { throw Self.mismatch(value) }
        self.value = value
    }

    /// The entries, keys as strings and values unwrapped from their variants.
    public var entries: [(key: String, value: Value)] {
        value.dictionaryEntries.map { (key: $0.key.string ?? "", value: $0.value.unwrapped) }
    }
}

/// A method whose input types are Swift types: its declaration (name,
/// argument names, signature) and the binding of a handler that receives
/// the arguments as those types. The name and the types are written once,
/// here; the `Interface` that lists it and the handler bound to it follow.
public struct MethodDeclaration<each Input: DBusArgument>: Sendable, MethodDeclaring {
    public let method: Method

    /// `inputs` are the arguments' names and types, in order.
    public init(_ name: MemberName, in inputs: repeat (String, (each Input).Type), out outputs: [Argument] = [], doc: String = "") {
        var arguments: [Argument] = []
        for input in repeat each inputs { arguments.append(Argument(input.0, input.1.dbusType)) }
        method = Method(name, in: arguments, out: outputs, doc: doc)
    }

    /// The arguments of a call to this method, as a client sends them.
    public func values(_ inputs: repeat each Input) -> [Value] {
        var values: [Value] = []
        for input in repeat each inputs { values.append(input.dbusValue) }
        return values
    }

    /// Binds a handler that runs in a task of its own.
    @inlinable
    public func task(_ handler: @escaping @Sendable (MethodCall, repeat each Input) async throws -> [Value]) -> MethodBinding {
        MethodBinding(
            method.name,
            .task { call in
                let arguments = try Self.decode(call)
                return try await handler(call, repeat each arguments)
            })
    }

    /// Binds a handler that answers at once, on the connection's loop
    /// thread: only for work that cannot block.
    @inlinable
    public func immediate(_ handler: @escaping @Sendable (MethodCall, repeat each Input) throws -> [Value]) -> MethodBinding {
        MethodBinding(
            method.name,
            .immediate { call in
                var arguments = try CallArguments(call)
                return try handler(call, repeat try arguments.next((each Input).self))
            })
    }

    /// Binds a handler that answers at once, on the connection's loop
    /// thread, with a body marshalled beforehand: only for work that cannot
    /// block. The template's signature is not checked against the
    /// method's: its maker answers for it.
    @inlinable
    public func replying(_ handler: @escaping @Sendable (MethodCall, repeat each Input) throws -> ReplyTemplate) -> MethodBinding {
        MethodBinding(
            method.name,
            .template { call in
                var arguments = try CallArguments(call)
                return try handler(call, repeat try arguments.next((each Input).self))
            })
    }

    /// Binds a handler that takes the call on the loop thread and answers
    /// it later, from any thread, through its `PendingAnswer`.
    @inlinable
    public func deferred(_ handler: @escaping @Sendable (MethodCall, PendingAnswer, repeat each Input) throws -> Void) -> MethodBinding {
        MethodBinding(
            method.name,
            .deferred { call, answer in
                var arguments = try CallArguments(call)
                try handler(call, answer, repeat try arguments.next((each Input).self))
            })
    }

    /// The call's arguments as the declared types, for a handler that
    /// runs in a task. The signature was checked before dispatch, so this
    /// fails only where a type's own rules refuse a value. Inlinable, as
    /// the bindings above are, so that the module that binds a handler
    /// reads each argument as its own type: over an unknown pack, each went
    /// through the runtime's tuple and value witnesses.
    @inlinable
    static func decode(_ call: MethodCall) throws -> (repeat each Input) {
        var arguments = try CallArguments(call)
        return (repeat try arguments.next((each Input).self))
    }
}

/// What an `Interface` lists as a method: a `Method`, or a declaration
/// that also binds typed handlers.
public protocol MethodDeclaring: Sendable {
    var method: Method { get }
}

extension Method: MethodDeclaring {
    public var method: Method { self }
}

/// A handler bound to the method it answers, made by a `MethodDeclaration`.
public struct MethodBinding: Sendable {
    let name: MemberName
    let handler: ExportedInterface.Handler

    @usableFromInline
    init(_ name: MemberName, _ handler: ExportedInterface.Handler) {
        self.name = name
        self.handler = handler
    }
}

extension VariantDictionary {
    /// The value of `key`, unwrapped from its variant (the last where it
    /// is given twice): one look through the entries, where `dictionary`
    /// makes a dictionary of them all.
    public subscript(key: String) -> Value? {
        value.dictionaryEntries.last { $0.key.string == key }?.value.unwrapped
    }

    /// The entries by key, values unwrapped from their variants; the last
    /// of a key given twice.
    public var dictionary: [String: Value] {
        Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }
}

extension ObjectPath: DBusArgument {
    public static var dbusType: DBusType { .objectPath }
    public var dbusValue: Value { .objectPath(self) }
    public init(dbusValue value: Value) throws {
        guard case .objectPath(let path) = value else { throw Self.mismatch(value) }
        self = path
    }
}

/// An `ao`.
public struct ObjectPathList: DBusArgument, Hashable {
    public let paths: [ObjectPath]
    public static var dbusType: DBusType { .array(.objectPath) }
    public var dbusValue: Value { .objectPaths(paths) }
    public init(_ paths: [ObjectPath]) { self.paths = paths }
    public init(dbusValue value: Value) throws {
        guard case .array(.objectPath, let elements) = value else { throw Self.mismatch(value) }
        paths = elements.compactMap { if case .objectPath(let path) = $0 { path } else { nil } }
    }
}

extension UInt32: DBusArgument {
    public static var dbusType: DBusType { .uint32 }
    public var dbusValue: Value { .uint32(self) }
    public static func read(from reader: inout ArgumentReader) throws -> UInt32 { try reader.uint32() }
    public init(dbusValue value: Value) throws {
        guard case .uint32(let number) = value else { throw Self.mismatch(value) }
        self = number
    }
}

extension Int32: DBusArgument {
    public static var dbusType: DBusType { .int32 }
    public var dbusValue: Value { .int32(self) }
    public static func read(from reader: inout ArgumentReader) throws -> Int32 { try reader.int32() }
    public init(dbusValue value: Value) throws {
        guard case .int32(let number) = value else { throw Self.mismatch(value) }
        self = number
    }
}
