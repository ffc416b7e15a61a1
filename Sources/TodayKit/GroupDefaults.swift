import DBus
import Foundation
import PropertyList
import TodayProtocol

/// UserDefaults(suiteName:) for an app group: a key-value store shared by
/// an app and its widgets, kept by todayd. Every write is on disk before
/// it returns, so `synchronize()` has nothing left to do.
///
///     let persistence = GroupDefaults(suiteName: "group.agostini.tech.sharedData")
///     persistence?.set(post.postID, forKey: "postID")
///     let title = persistence?.string(forKey: "postTitle")
public final class GroupDefaults: Sendable {
    public let suiteName: String
    private let path: ObjectPath

    /// Nil when `suiteName` is not an app group id.
    public init?(suiteName: String) {
        guard GroupID.isValid(suiteName) else { return nil }
        self.suiteName = suiteName
        self.path = Today.groupPath(suiteName)
    }

    @discardableResult
    private func call<each Input: DBusArgument>(_ method: MethodDeclaration<repeat each Input>, _ inputs: repeat each Input) throws -> Message {
        try TodayBus.shared.registeredConnection().callBlocking(Today.busName, path: path, interface: Today.group.name, method, repeat each inputs)
    }

    // MARK: Writing

    /// Stores a property-list value (String, Int, Double, Bool, Data,
    /// Date, arrays and dictionaries of them); nil removes the key.
    public func set(_ value: Any?, forKey key: String) {
        guard let value else { return removeObject(forKey: key) }
        guard let plist = Self.plist(value) else {
            report("set(_:forKey: \(key))", TodayKitError.service("\(type(of: value)) is not a property-list type"))
            return
        }
        do {
            try call(Today.Group.set, key, Variant(ValueMapping.dbus(plist, typedArrays: false)))
        } catch {
            report("set(_:forKey: \(key))", error)
        }
    }

    public func removeObject(forKey key: String) {
        do {
            try call(Today.Group.remove, key)
        } catch {
            report("removeObject(forKey: \(key))", error)
        }
    }

    /// Writes are durable when they return; kept for code ported from UserDefaults.
    @discardableResult
    public func synchronize() -> Bool { true }

    // MARK: Reading

    /// The stored value as Swift values (String, Int, Double, Bool, Data,
    /// Date, [Any], [String: Any]), or nil.
    public func object(forKey key: String) -> Any? {
        do {
            let value = try call(Today.Group.get, key).value(Variant.self, answering: "Get")
            return Self.swiftValue(try ValueMapping.plist(value.value))
        } catch let error as DBusError where error.name.rawValue.hasSuffix(".NoSuchKey") {
            return nil
        } catch {
            report("object(forKey: \(key))", error)
            return nil
        }
    }

    public func value(forKey key: String) -> Any? { object(forKey: key) }
    public func string(forKey key: String) -> String? { object(forKey: key) as? String }
    public func data(forKey key: String) -> Data? { object(forKey: key) as? Data }
    public func double(forKey key: String) -> Double { (object(forKey: key) as? Double) ?? Double(integer(forKey: key)) }
    public func bool(forKey key: String) -> Bool { (object(forKey: key) as? Bool) ?? false }
    public func array(forKey key: String) -> [Any]? { object(forKey: key) as? [Any] }
    public func dictionary(forKey key: String) -> [String: Any]? { object(forKey: key) as? [String: Any] }

    /// The integer stored under `key`, 0 when there is none (as UserDefaults).
    public func integer(forKey key: String) -> Int {
        switch object(forKey: key) {
        case let value as Int: value
        case let value as Double: Int(exactly: value.rounded(.towardZero)) ?? 0
        case let value as String: Int(value) ?? 0
        default: 0
        }
    }

    /// Every key and value.
    public func dictionaryRepresentation() -> [String: Any] {
        do {
            let values = try call(Today.Group.getAll).value(VariantDictionary.self, answering: "GetAll")
            return (Self.swiftValue(try ValueMapping.plist(values.value)) as? [String: Any]) ?? [:]
        } catch {
            report("dictionaryRepresentation()", error)
            return [:]
        }
    }

    // MARK: Conversions

    static func plist(_ value: Any) -> PlistValue? {
        switch value {
        case let v as PlistValue: return v
        case let v as String: return .string(v)
        case let v as Bool: return .boolean(v)
        case let v as Int: return .integer(Int64(v))
        case let v as Int64: return .integer(v)
        case let v as Int32: return .integer(Int64(v))
        case let v as Double: return .real(v)
        case let v as Float: return .real(Double(v))
        case let v as Data: return .data(v)
        case let v as Date: return .date(v)
        case let v as URL: return .string(v.absoluteString)
        case let v as [Any]:
            var items: [PlistValue] = []
            for item in v {
                guard let converted = plist(item) else { return nil }
                items.append(converted)
            }
            return .array(items)
        case let v as [String: Any]:
            var dictionary = PlistDictionary()
            for key in v.keys.sorted() {
                guard let item = v[key], let converted = plist(item) else { return nil }
                dictionary[key] = converted
            }
            return .dictionary(dictionary)
        default: return nil
        }
    }

    static func swiftValue(_ value: PlistValue) -> Any {
        switch value {
        case .string(let s): s
        case .integer(let i): Int(truncatingIfNeeded: i)
        case .unsignedInteger(let u): u
        case .real(let d): d
        case .boolean(let b): b
        case .date(let d): d
        case .data(let d): d
        case .array(let a): a.map(swiftValue)
        case .dictionary(let d): Dictionary(d.map { ($0.0, swiftValue($0.1)) }, uniquingKeysWith: { a, _ in a })
        }
    }
}

extension FileManager {
    /// containerURLForSecurityApplicationGroupIdentifier: the app group's
    /// shared folder, created on first use; nil when this bundle is not
    /// entitled to the group.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        // A provider todayd started finds its groups in its environment.
        let given = ProcessInfo.processInfo.environment["TODAY_GROUP_CONTAINERS"] ?? ""
        for entry in given.split(separator: ":") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == groupIdentifier { return URL(fileURLWithPath: String(parts[1]), isDirectory: true) }
        }
        do {
            guard let group = GroupID(rawValue: groupIdentifier) else { throw TodayKitError.service(GroupID.problem(groupIdentifier)) }
            let reply = try TodayBus.shared.center(Today.Center.containerPathForGroup, group)
            return URL(fileURLWithPath: try reply.value(String.self, answering: "ContainerPathForGroup"), isDirectory: true)
        } catch {
            report("containerURL(forSecurityApplicationGroupIdentifier: \(groupIdentifier))", error)
            return nil
        }
    }
}
