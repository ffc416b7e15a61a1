import CDBus
import FoundationEssentials
import Glibc

/// Conversion between `Value` and libdbus message iterators.
enum Marshal {
    private static func code(_ c: Unicode.Scalar) -> Int32 { Int32(c.value) }

    static func typeCode(_ type: DBusType) -> Int32 {
        switch type {
        case .byte: code("y")
        case .boolean: code("b")
        case .int16: code("n")
        case .uint16: code("q")
        case .int32: code("i")
        case .uint32: code("u")
        case .int64: code("x")
        case .uint64: code("t")
        case .double: code("d")
        case .string: code("s")
        case .objectPath: code("o")
        case .signature: code("g")
        case .unixFD: code("h")
        case .variant: code("v")
        case .array, .dictionary: code("a")
        case .structure: code("r")
        }
    }

    static func mismatch(_ value: Value, _ expected: DBusType) -> DBusError {
        .invalidArgs("a value of type '\(value.type.signature)' where '\(expected.signature)' is declared")
    }

    // MARK: Appending

    static func append(_ value: Value, to iterator: inout DBusMessageIter) throws {
        var basic = DBusBasicValue()
        switch value {
        case .byte(let v): basic.byt = v
        case .boolean(let v): basic.bool_val = v ? 1 : 0
        case .int16(let v): basic.i16 = v
        case .uint16(let v): basic.u16 = v
        case .int32(let v): basic.i32 = v
        case .uint32(let v): basic.u32 = v
        case .int64(let v): basic.i64 = dbus_int64_t(v)
        case .uint64(let v): basic.u64 = dbus_uint64_t(v)
        case .double(let v): basic.dbl = v
        case .unixFD(let fd): basic.fd = fd.rawValue
        case .string(let s):
            guard Validation.isTransportable(s) else {
                throw DBusError.invalidArgs("a string holds a NUL byte, which D-Bus cannot carry")
            }
            return try appendString(s, code("s"), to: &iterator)
        case .objectPath(let p): return try appendString(p.rawValue, code("o"), to: &iterator)
        case .signature(let g): return try appendString(g.rawValue, code("g"), to: &iterator)
        case .bytes(let data):
            return try appendBytes(data, to: &iterator)
        case .array(let element, let values):
            return try appendArray(element, values, to: &iterator)
        case .dictionary(let keyType, let valueType, let entries):
            return try withContainer(code("a"), "{\(keyType.signature)\(valueType.signature)}", &iterator) { sub in
                for entry in entries {
                    guard entry.key.type == keyType else { throw mismatch(entry.key, keyType) }
                    guard entry.value.type == valueType else { throw mismatch(entry.value, valueType) }
                    try withContainer(code("e"), nil, &sub) { pair in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError.invalidArgs("an empty structure cannot be sent") }
            return try withContainer(code("r"), nil, &iterator) { sub in
                for field in fields { try append(field, to: &sub) }
            }
        case .variant(let inner):
            return try withContainer(code("v"), inner.type.signature, &iterator) { sub in
                try append(inner, to: &sub)
            }
        }
        guard dbus_message_iter_append_basic(&iterator, typeCode(value.type), &basic) != 0 else {
            throw DBusError(.noMemory, "out of memory appending a value")
        }
    }

    private static func appendString(_ s: String, _ typeCode: Int32, to iterator: inout DBusMessageIter) throws {
        let ok = s.withCString { pointer -> Bool in
            var basic = DBusBasicValue()
            basic.str = UnsafeMutablePointer(mutating: pointer)
            return dbus_message_iter_append_basic(&iterator, typeCode, &basic) != 0
        }
        guard ok else { throw DBusError(.noMemory, "out of memory appending a string") }
    }

    /// An `ay` in one call, from the buffer as it is.
    private static func appendBytes(_ data: Data, to iterator: inout DBusMessageIter) throws {
        guard let count = Int32(exactly: data.count) else { throw DBusError.invalidArgs("\(data.count) bytes are more than D-Bus can carry") }
        try withContainer(code("a"), "y", &iterator) { sub in
            let ok = data.withUnsafeBytes { buffer -> Bool in
                // libdbus reads `count` bytes from the pointer; an empty array needs one anyway.
                var base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
                return withUnsafeMutablePointer(to: &base) {
                    dbus_message_iter_append_fixed_array(&sub, code("y"), $0, count) != 0
                }
            }
            guard ok else { throw DBusError(.noMemory, "out of memory appending bytes") }
        }
    }

    private static func appendArray(_ element: DBusType, _ values: [Value], to iterator: inout DBusMessageIter) throws {
        switch element {
        case .byte:
            var bytes = Data()
            bytes.reserveCapacity(values.count)
            for value in values {
                guard case .byte(let b) = value else { throw mismatch(value, .byte) }
                bytes.append(b)
            }
            return try appendBytes(bytes, to: &iterator)
        case .uint32:
            return try appendFixed(values, element, to: &iterator) { if case .uint32(let v) = $0 { v } else { nil } }
        case .int32:
            return try appendFixed(values, element, to: &iterator) { if case .int32(let v) = $0 { v } else { nil } }
        case .uint64:
            return try appendFixed(values, element, to: &iterator) { if case .uint64(let v) = $0 { v } else { nil } }
        case .int64:
            return try appendFixed(values, element, to: &iterator) { if case .int64(let v) = $0 { v } else { nil } }
        case .double:
            return try appendFixed(values, element, to: &iterator) { if case .double(let v) = $0 { v } else { nil } }
        default:
            break
        }
        try withContainer(code("a"), element.signature, &iterator) { sub in
            for value in values {
                guard value.type == element else { throw mismatch(value, element) }
                try append(value, to: &sub)
            }
        }
    }

    /// An array of a fixed-size type in one call (`T` is the type's own
    /// layout on the wire), where appending the elements one by one costs
    /// libdbus a few hundred instructions each: a NotificationsChanged
    /// after a burst carries hundreds of ids.
    private static func appendFixed<T>(
        _ values: [Value], _ element: DBusType, to iterator: inout DBusMessageIter, _ extract: (Value) -> T?
    ) throws {
        var elements: [T] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let v = extract(value) else { throw mismatch(value, element) }
            elements.append(v)
        }
        guard let count = Int32(exactly: elements.count) else {
            throw DBusError.invalidArgs("\(elements.count) values are more than D-Bus can carry")
        }
        let type = typeCode(element)
        try withContainer(code("a"), element.signature, &iterator) { sub in
            let ok = elements.withUnsafeBufferPointer { buffer -> Bool in
                // libdbus reads `count` values from the pointer; an empty array needs one anyway.
                var base = UnsafeRawPointer(buffer.baseAddress) ?? UnsafeRawPointer(bitPattern: 8)
                return withUnsafeMutablePointer(to: &base) {
                    dbus_message_iter_append_fixed_array(&sub, type, $0, count) != 0
                }
            }
            guard ok else { throw DBusError(.noMemory, "out of memory appending an array") }
        }
    }

    private static func withContainer(
        _ type: Int32, _ contained: String?, _ iterator: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) throws -> Void
    ) throws {
        var sub = DBusMessageIter()
        let opened: Bool =
            if let contained {
                contained.withCString { dbus_message_iter_open_container(&iterator, type, $0, &sub) != 0 }
            } else {
                dbus_message_iter_open_container(&iterator, type, nil, &sub) != 0
            }
        guard opened else { throw DBusError(.noMemory, "out of memory opening a container") }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iterator, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iterator, &sub) != 0 else {
            throw DBusError(.noMemory, "out of memory closing a container")
        }
    }

    // MARK: Reading

    /// The value at `iterator`. `known`: its type where the container's
    /// signature already said it, so that an array's is not read and
    /// parsed again for each element of an outer array.
    static func read(_ iterator: inout DBusMessageIter, as known: DBusType? = nil) throws -> Value {
        let type = dbus_message_iter_get_arg_type(&iterator)
        var basic = DBusBasicValue()
        switch UnicodeScalar(UInt32(type)).map(Character.init) {
        case "y": dbus_message_iter_get_basic(&iterator, &basic); return .byte(basic.byt)
        case "b": dbus_message_iter_get_basic(&iterator, &basic); return .boolean(basic.bool_val != 0)
        case "n": dbus_message_iter_get_basic(&iterator, &basic); return .int16(basic.i16)
        case "q": dbus_message_iter_get_basic(&iterator, &basic); return .uint16(basic.u16)
        case "i": dbus_message_iter_get_basic(&iterator, &basic); return .int32(basic.i32)
        case "u": dbus_message_iter_get_basic(&iterator, &basic); return .uint32(basic.u32)
        case "x": dbus_message_iter_get_basic(&iterator, &basic); return .int64(Int64(basic.i64))
        case "t": dbus_message_iter_get_basic(&iterator, &basic); return .uint64(UInt64(basic.u64))
        case "d": dbus_message_iter_get_basic(&iterator, &basic); return .double(basic.dbl)
        case "h":
            dbus_message_iter_get_basic(&iterator, &basic)
            // libdbus hands out a duplicate, or -1 when the message does not
            // carry the descriptor its body names.
            guard basic.fd >= 0 else { throw DBusError.invalidArgs("a unix fd (h) that the message does not carry") }
            return .unixFD(UnixFileDescriptor(owning: basic.fd))
        case "s", "o", "g":
            dbus_message_iter_get_basic(&iterator, &basic)
            guard let pointer = basic.str else { throw DBusError.invalidArgs("a string without data") }
            let text = String(cString: pointer)
            switch type {
            case code("o"): return .objectPath(ObjectPath(unchecked: text))
            case code("g"):
                guard let signature = Signature(rawValue: text) else { throw DBusError.invalidArgs("bad signature") }
                return .signature(signature)
            default: return .string(text)
            }
        case "v":
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .variant(try read(&sub))
        case "r":
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            var fieldTypes: [DBusType] = []
            if case .structure(let types) = known { fieldTypes = types }
            var fields: [Value] = []
            while dbus_message_iter_get_arg_type(&sub) != 0 {
                fields.append(try read(&sub, as: fieldTypes.indices.contains(fields.count) ? fieldTypes[fields.count] : nil))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case "a":
            return try readArray(&iterator, as: known)
        default:
            throw DBusError.invalidArgs("unsupported type code \(type)")
        }
    }

    private static func readArray(_ iterator: inout DBusMessageIter, as known: DBusType?) throws -> Value {
        let type: DBusType
        switch known {
        case .some(.array(let element)): type = .array(element)
        case .some(.dictionary(let key, let value)): type = .dictionary(key: key, value: value)
        default: type = try arrayType(at: &iterator)
        }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &sub)
        switch type {
        case .array(.byte):
            var base: UnsafeMutableRawPointer?
            var count: Int32 = 0
            withUnsafeMutablePointer(to: &base) { dbus_message_iter_get_fixed_array(&sub, $0, &count) }
            guard let base, count > 0 else { return .bytes(Data()) }
            return .bytes(Data(bytes: base, count: Int(count)))
        case .array(let element):
            var values: [Value] = []
            while dbus_message_iter_get_arg_type(&sub) != 0 {
                values.append(try read(&sub, as: element))
                dbus_message_iter_next(&sub)
            }
            return .array(element, values)
        case .dictionary(let keyType, let valueType):
            var entries: [DictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&sub) != 0 {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let key = try read(&pair, as: keyType)
                dbus_message_iter_next(&pair)
                let value = try read(&pair, as: valueType)
                entries.append(DictionaryEntry(key, value))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(key: keyType, value: valueType, entries)
        default:
            throw DBusError.invalidArgs("bad array signature \(type)")
        }
    }

    /// The type of the array at `iterator`, from its signature.
    private static func arrayType(at iterator: inout DBusMessageIter) throws -> DBusType {
        guard let raw = dbus_message_iter_get_signature(&iterator) else {
            throw DBusError(.noMemory, "out of memory reading a signature")
        }
        let signatureText = String(cString: raw)
        dbus_free(raw)
        guard let types = try? DBusType.parseList(signatureText), types.count == 1 else {
            throw DBusError.invalidArgs("bad array signature \(signatureText)")
        }
        return types[0]
    }
}
