import Synchronization

/// A property-list dictionary: string keys, in the order they were added.
///
/// Keys are the same when their UTF-8 bytes are, as in Foundation and
/// plistlib: "é" composed and "é" decomposed are two keys, although Swift's
/// `==` calls the strings equal.
///
/// Small dictionaries search their few keys; from `indexThreshold` keys on,
/// the first lookup builds an index from key to position and later additions
/// keep it, so finding and adding stay constant-time.
public struct PlistDictionary: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The keys and their index share one reference, so a dictionary stays
    /// two words and a `PlistValue` no larger than a string. `keys` changes
    /// only while the storage is uniquely referenced; the index is built
    /// under its lock, by whichever reader needs it first.
    private final class KeyStorage: @unchecked Sendable {
        var keys: [String]
        let index = Mutex<[ByteKey: Int]?>(nil)

        init(_ keys: [String]) { self.keys = keys }
    }

    private var storage: KeyStorage
    public private(set) var values: [PlistValue]
    private static let indexThreshold = 16

    public var keys: [String] { storage.keys }
    public var count: Int { values.count }
    public var isEmpty: Bool { values.isEmpty }

    public init() {
        storage = KeyStorage([])
        values = []
    }

    public init(dictionaryLiteral elements: (String, PlistValue)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }

    public init(_ pairs: [(String, PlistValue)]) {
        self.init()
        for (key, value) in pairs { self[key] = value }
    }

    /// Builds from keys already known to be distinct.
    init(uniqueKeys keys: [String], values: [PlistValue]) {
        storage = KeyStorage(keys)
        self.values = values
    }

    /// Builds from keys as a file lists them: when one repeats, the later
    /// value wins in the first one's place, as Foundation and plistlib read it.
    package init(readingKeys keys: [String], values: [PlistValue]) {
        guard KeyBytes.containsDuplicates(keys) else {
            self.init(uniqueKeys: keys, values: values)
            return
        }
        self.init()
        for (key, value) in zip(keys, values) { self[key] = value }
    }

    private func position(of key: String) -> Int? {
        let keys = storage.keys
        guard keys.count >= Self.indexThreshold else { return keys.firstIndex { ByteKey.equal($0, key) } }
        return storage.index.withLock { index in
            if index == nil {
                var built = [ByteKey: Int](minimumCapacity: keys.count)
                for (position, key) in keys.enumerated() where built[ByteKey(key)] == nil {
                    built[ByteKey(key)] = position
                }
                index = built
            }
            return index?[ByteKey(key)]
        }
    }

    /// Reading finds the key; writing replaces in place or appends;
    /// assigning nil removes.
    public subscript(key: String) -> PlistValue? {
        get { position(of: key).map { values[$0] } }
        set {
            if let position = position(of: key) {
                if let newValue {
                    values[position] = newValue
                } else {
                    values.remove(at: position)
                    var keys = storage.keys
                    keys.remove(at: position)
                    storage = KeyStorage(keys)
                }
            } else if let newValue {
                if !isKnownUniquelyReferenced(&storage) {
                    storage = KeyStorage(storage.keys)
                }
                storage.keys.append(key)
                values.append(newValue)
                let position = values.count - 1
                storage.index.withLock { index in index?[ByteKey(key)] = position }
            }
        }
    }

    public func makeIterator() -> Zip2Sequence<[String], [PlistValue]>.Iterator {
        zip(keys, values).makeIterator()
    }

    /// Equal when the same keys map to equal values, in any order.
    public static func == (lhs: PlistDictionary, rhs: PlistDictionary) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.keys.elementsEqual(rhs.keys, by: ByteKey.equal) { return lhs.values == rhs.values }
        for (key, value) in lhs where rhs[key] != value { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent, to agree with ==.
        var combined = 0
        for (key, value) in self {
            var entry = Hasher()
            entry.combine(key)
            entry.combine(value)
            combined ^= entry.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}

/// Finds repeated keys among a file's dictionary keys by their UTF-8 bytes.
///
/// Readers check every dictionary, so this is on the hot path of reading:
/// an open-addressing table of positions, hashed with a cheap multiplicative
/// mix seeded once per process. Should probing run long (keys crafted to
/// collide), it falls back to the standard library's seeded SipHash.
enum KeyBytes {
    private static let seed = UInt64.random(in: .min ... .max)
    private static let longestProbe = 32

    static func containsDuplicates(_ keys: [String]) -> Bool {
        if keys.count < 2 { return false }
        if keys.count <= 8 {
            for i in 1..<keys.count {
                for j in 0..<i where ByteKey.equal(keys[i], keys[j]) { return true }
            }
            return false
        }
        var capacity = 16
        while capacity < keys.count * 2 { capacity <<= 1 }
        let mask = capacity - 1
        var slots = [Int32](repeating: -1, count: capacity)
        var hashes = [UInt64](repeating: 0, count: keys.count)
        let seed = self.seed
        for (position, key) in keys.enumerated() {
            let hash = self.hash(key, seed: seed)
            hashes[position] = hash
            var slot = Int(truncatingIfNeeded: hash) & mask
            var probes = 0
            while slots[slot] >= 0 {
                let other = Int(slots[slot])
                if hashes[other] == hash, ByteKey.equal(keys[other], key) { return true }
                probes += 1
                if probes > longestProbe { return Set(keys.map(ByteKey.init)).count != keys.count }
                slot = (slot + 1) & mask
            }
            slots[slot] = Int32(truncatingIfNeeded: position)
        }
        return false
    }

    private static func hash(_ key: String, seed: UInt64) -> UInt64 {
        func mix(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
            var hash = seed ^ UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
            var index = 0
            while index + 8 <= bytes.count {
                let word = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[index..<index + 8])
                    .loadUnaligned(as: UInt64.self)
                hash = (hash ^ word) &* 0xBF58_476D_1CE4_E5B9
                hash ^= hash >> 31
                index += 8
            }
            var tail: UInt64 = 0
            while index < bytes.count {
                tail = tail << 8 | UInt64(bytes[index])
                index += 1
            }
            hash = (hash ^ tail) &* 0x94D0_49BB_1331_11EB
            return hash ^ hash >> 29
        }
        if let hash = key.utf8.withContiguousStorageIfAvailable(mix) { return hash }
        return Array(key.utf8).withUnsafeBufferPointer(mix)
    }
}

/// A string that hashes and compares by its UTF-8 bytes.
struct ByteKey: Hashable {
    let string: String

    init(_ string: String) { self.string = string }

    static func equal(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
    }

    static func == (lhs: ByteKey, rhs: ByteKey) -> Bool { equal(lhs.string, rhs.string) }

    func hash(into hasher: inout Hasher) {
        let utf8 = string.utf8
        if utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            Array(utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
