import FoundationEssentials

/// Decodes `Decodable` Swift types from property-list values, as
/// Foundation's PropertyListDecoder does from bytes:
///
///     struct Settings: Decodable { var lat: Double; var lon: Double; var spn: Double }
///     let settings = try PlistDecoder().decode(Settings.self, from: Plist.read(contentsOf: path))
///
/// Integers are range-checked; a real decodes as an integer only when it is
/// whole. Errors are `DecodingError`s whose coding path names the key.
public struct PlistDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: PlistValue) throws -> T {
        try T(from: ValueDecoder(value: value, codingPath: []))
    }

}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

private struct ValueDecoder: Decoder {
    let value: PlistValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ expected: String) -> DecodingError {
        DecodingError.typeMismatch(
            Any.self, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(value.typeName)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let dictionary = value.dictionary else { throw mismatch("a dictionary") }
        return KeyedDecodingContainer(Keyed<Key>(dictionary: dictionary, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value.array else { throw mismatch("an array") }
        return Unkeyed(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    // MARK: Scalars

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        switch value {
        case .integer(let i):
            guard let result = T(exactly: i) else { throw outOfRange(type) }
            return result
        case .unsignedInteger(let u):
            guard let result = T(exactly: u) else { throw outOfRange(type) }
            return result
        case .real(let d):
            guard let result = T(exactly: d) else { throw outOfRange(type) }
            return result
        default: throw mismatch("an integer")
        }
    }

    func outOfRange<T>(_ type: T.Type) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(value) does not fit \(type)"))
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // Foundation's own Codable forms of these are not plist types.
        if type == Date.self {
            guard let date = value.date as? T else { throw mismatch("a date") }
            return date
        }
        if type == Data.self {
            guard let data = value.data as? T else { throw mismatch("data") }
            return data
        }
        if type == URL.self {
            guard let url = value.string.flatMap(URL.init(string:)) as? T else { throw mismatch("a URL string") }
            return url
        }
        return try T(from: self)
    }
}

private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let dictionary: PlistDictionary
    let codingPath: [any CodingKey]
    var allKeys: [Key] { dictionary.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { dictionary[key.stringValue] != nil }

    func decoder(for key: Key) throws -> ValueDecoder {
        guard let value = dictionary[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no key '\(key.stringValue)'"))
        }
        return ValueDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { dictionary[key.stringValue] == nil }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Single(decoder: decoder(for: key)).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Single(decoder: decoder(for: key)).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Single(decoder: decoder(for: key)).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Single(decoder: decoder(for: key)).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(for: key).integer(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(for: key).integer(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(for: key).integer(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(for: key).integer(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(for: key).integer(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(for: key).integer(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(for: key).integer(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(for: key).integer(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(for: key).integer(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(for: key).integer(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(for: key).decode(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(for: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(for: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ValueDecoder(value: .dictionary(dictionary), codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(for: key) }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let array: [PlistValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any.self, .init(codingPath: codingPath, debugDescription: "the array has only \(array.count) elements"))
        }
        defer { currentIndex += 1 }
        return ValueDecoder(value: array[currentIndex], codingPath: codingPath + [AnyKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool { false }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}

private struct Single: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { false }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard let value = decoder.value.bool else { throw decoder.mismatch("a boolean") }
        return value
    }

    func decode(_ type: String.Type) throws -> String {
        guard let value = decoder.value.string else { throw decoder.mismatch("a string") }
        return value
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard let value = decoder.value.double else { throw decoder.mismatch("a number") }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(type) }
}
