import FoundationEssentials
import Glibc
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The shared container and defaults of one app group (SPEC section 4):
/// `<base>/<group id>/` and `<base>/<group id>/Library/Preferences/<group id>.plist`.
/// Every path is opened relative to the base folder, component by
/// component, without following symlinks, so nothing is read or written
/// outside it. A write goes to a temporary file in the same folder, is
/// fsynced, renamed over the old file, and the folder is fsynced, before
/// the caller hears back.
public final class GroupStore: Sendable {
    public static let maximumStore = 16 << 20
    public static let maximumValue = 4 << 20
    public static let maximumKey = 1024

    public let identifier: GroupID
    public let base: String
    public var containerPath: String { base + "/" + identifier.rawValue }
    public var defaultsPath: String { containerPath + "/Library/Preferences/" + identifier.rawValue + ".plist" }

    private let defaults = Mutex<PlistDictionary?>(nil)

    public init(identifier: GroupID, base: String) {
        self.identifier = identifier
        self.base = base
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case invalidKey(String)
        case tooLarge(String)
        case storage(String)
        case noSuchKey(String)

        public var description: String {
            switch self {
            case .invalidKey(let m), .tooLarge(let m), .storage(let m): m
            case .noSuchKey(let key): "no key '\(key)' in the group's defaults"
            }
        }
    }

    /// Creates the container (0700) and returns its path.
    @discardableResult
    public func makeContainer() throws -> String {
        _ = try openFolder([identifier.rawValue])
        return containerPath
    }

    /// All keys and values.
    public func all() throws -> PlistDictionary {
        try withDefaults { $0 }
    }

    public func value(forKey key: String) throws -> PlistValue {
        try Self.check(key)
        guard let value = try withDefaults({ $0[key] }) else { throw Failure.noSuchKey(key) }
        return value
    }

    /// Sets and removes keys in one durable write; returns the keys that
    /// changed.
    @discardableResult
    public func update(set: [(String, PlistValue)], remove: [String]) throws -> [String] {
        for (key, value) in set {
            try Self.check(key)
            let size = (try? Plist.write(value, format: .binary).count) ?? Int.max
            guard size <= Self.maximumValue else {
                throw Failure.tooLarge("the value of '\(key)' is \(size) bytes encoded, over the limit of \(Self.maximumValue)")
            }
        }
        for key in remove { try Self.check(key) }
        return try defaults.withLock { cached -> [String] in
            var current = try cached ?? load()
            var changed: [String] = []
            for (key, value) in set where current[key] != value {
                current[key] = value
                changed.append(key)
            }
            for key in remove where current[key] != nil {
                current[key] = nil
                changed.append(key)
            }
            guard !changed.isEmpty else { return [] }
            let encoded = try Plist.write(.dictionary(current), format: .xml)
            let size = (try? Plist.write(.dictionary(current), format: .binary).count) ?? encoded.count
            guard size <= Self.maximumStore else {
                throw Failure.tooLarge("the group's defaults would be \(size) bytes encoded, over the limit of \(Self.maximumStore); remove keys first")
            }
            try write(encoded)
            cached = current
            return changed
        }
    }

    static func check(_ key: String) throws {
        guard !key.isEmpty, key.utf8.count <= maximumKey else {
            throw Failure.invalidKey("a key must be non-empty UTF-8 of at most \(maximumKey) bytes")
        }
    }

    private func withDefaults<T>(_ body: (PlistDictionary) throws -> T) throws -> T {
        try defaults.withLock { cached in
            if cached == nil { cached = try load() }
            return try body(cached ?? [:])
        }
    }

    // MARK: Files

    /// The defaults on disk; empty when there is no file yet.
    private func load() throws -> PlistDictionary {
        guard let folder = try openFolder([identifier.rawValue, "Library", "Preferences"], create: false) else { return [:] }
        let data: Data
        do {
            let file = try FileDescriptor.open(identifier.rawValue + ".plist", O_RDONLY | O_NOFOLLOW, in: folder)
            guard let read = try file.readToEnd(limit: Self.maximumStore * 2) else {
                throw Failure.storage("\(defaultsPath) is too large to be a group's defaults")
            }
            data = read
        } catch Errno.noSuchFile {
            return [:]
        } catch let error as Errno {
            throw Failure.storage("cannot read \(defaultsPath): \(error)")
        }
        do {
            guard let dictionary = try Plist.read(data).dictionary else {
                throw Failure.storage("\(defaultsPath) is not a dictionary; move it away to start afresh")
            }
            return dictionary
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.storage("\(defaultsPath) does not parse (\(error)); move it away to start afresh")
        }
    }

    private func write(_ data: Data) throws {
        guard let folder = try openFolder([identifier.rawValue, "Library", "Preferences"]) else {
            throw Failure.storage("cannot create \(containerPath)/Library/Preferences")
        }
        do {
            try DurableFile.write(data, named: identifier.rawValue + ".plist", in: folder, path: defaultsPath)
        } catch {
            throw Failure.storage("\(error)")
        }
    }

    /// Opens (and with `create`, makes, 0700) `base/components…`, each step
    /// relative to the last, never through a symlink. Without `create`,
    /// nil when a folder on the way does not exist.
    private func openFolder(_ components: [String], create: Bool = true) throws -> FileDescriptor? {
        if create {
            do {
                try DurableFile.makeFolder(base)
            } catch {
                throw Failure.storage("\(error)")
            }
        }
        let folderFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW
        var folder: FileDescriptor
        do {
            folder = try FileDescriptor.open(base, folderFlags)
        } catch Errno.noSuchFile where !create {
            return nil
        } catch {
            throw Failure.storage("cannot open \(base): \(error)")
        }
        for component in components {
            do {
                folder = try Self.openOrMake(component, in: folder, flags: folderFlags, create: create)
            } catch Errno.noSuchFile where !create {
                return nil
            } catch {
                let reason = error == .tooManyLinks || error == .notADirectory ? "it is a symlink or not a folder; remove it" : "\(error)"
                throw Failure.storage("cannot open \(component) in the group folder: \(reason)")
            }
        }
        return folder
    }

    /// The folder `name` in `folder`, made 0700 first where it is missing and `create` says so.
    private static func openOrMake(_ name: String, in folder: FileDescriptor, flags: Int32, create: Bool) throws(Errno) -> FileDescriptor {
        do {
            return try FileDescriptor.open(name, flags, in: folder)
        } catch Errno.noSuchFile where create {
            do {
                try folder.makeFolder(name, mode: 0o700)
            } catch Errno.exists {}
            let made = try FileDescriptor.open(name, flags, in: folder)
            // Whatever the umask.
            try? made.changeMode(0o700)
            return made
        }
    }
}
