import Dispatch
import FoundationEssentials
import Glibc
import Posix
import PropertyList
import Synchronization
import TodayProtocol

/// The rules of SPEC section 3 that one manifest value must keep: each
/// reads a value or throws a BundleProblem that names the file and key.
extension BundleCatalog {
    static func infoPlist(_ bundle: String) throws -> PlistDictionary {
        let path = bundle + "/Info.plist"
        let value: PlistValue
        do {
            value = try Plist.read(contentsOf: path)
        } catch where !FileSystem.exists(path) {
            throw BundleProblem(file: path, key: "-", message: "missing; every bundle needs an Info.plist")
        } catch {
            throw BundleProblem(file: path, key: "-", message: "not a readable property list (\(error)); fix or remove it")
        }
        guard let dictionary = value.dictionary else {
            throw BundleProblem(file: path, key: "-", message: "the root must be a <dict>, not <\(value.typeName)>")
        }
        return dictionary
    }

    static func bundleID(_ info: PlistDictionary, in file: String) throws -> BundleID {
        guard let id = try string(info, "CFBundleIdentifier", in: file) else {
            throw BundleProblem(file: file, key: "CFBundleIdentifier", message: "missing; add it as a <string> such as org.example.App")
        }
        guard let valid = BundleID(rawValue: id) else {
            throw BundleProblem(file: file, key: "CFBundleIdentifier", message: "'\(id.prefix(300))' is not reverse-DNS: [A-Za-z0-9.-], at most 255 bytes, no empty part")
        }
        return valid
    }

    /// The value of `key` as the type `read` takes out of it, nil where the
    /// key is absent, and a problem that names the type (`a <string>`)
    /// where it holds another.
    static func typed<T>(
        _ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String, _ type: String, _ read: (PlistValue) -> T?
    ) throws -> T? {
        guard let value = dictionary[key] else { return nil }
        guard let result = read(value) else {
            throw BundleProblem(file: file, key: prefix + key, message: "must be \(type), not <\(value.typeName)>")
        }
        return result
    }

    static func string(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String = "") throws -> String? {
        try typed(dictionary, key, in: file, prefix: prefix, "a <string>") { $0.string }
    }

    static func dictionary(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String = "") throws -> PlistDictionary? {
        try typed(dictionary, key, in: file, prefix: prefix, "a <dict>") { $0.dictionary }
    }

    /// A <real>, or an <integer> taken as one.
    static func number(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String) throws -> Double? {
        try typed(dictionary, key, in: file, prefix: prefix, "a <real>") { value in
            switch value {
            case .real(let d): d
            case .integer(let i): Double(i)
            default: nil
            }
        }
    }

    static func boolean(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String) throws -> Bool? {
        try typed(dictionary, key, in: file, prefix: prefix, "<true/> or <false/>") { $0.bool }
    }

    static func integer(_ dictionary: PlistDictionary, _ key: String, in file: String, prefix: String) throws -> Int64? {
        try typed(dictionary, key, in: file, prefix: prefix, "an <integer>") { $0.int64 }
    }

    /// Reverse-DNS: `[A-Za-z0-9.-]`, at most 255 bytes, no empty component.
    public static func isValidBundleID(_ id: String) -> Bool { BundleID.isValid(id) }

    /// `group.` followed by reverse-DNS characters, at most 255 bytes, no `..`.
    public static func isValidGroupID(_ id: String) -> Bool { GroupID.isValid(id) }

    /// A well-known D-Bus name (the D-Bus specification's rules): two or
    /// more elements of `[A-Za-z0-9_-]` separated by dots, none starting
    /// with a digit, at most 255 bytes.
    public static func isWellKnownBusName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 255 else { return false }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.utf8.first, !(48...57).contains(first) else { return false }
            return element.utf8.allSatisfy {
                (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 || $0 == 45
            }
        }
    }

    /// An RFC 3986 scheme: a letter, then letters, digits, `+`, `-`, `.`.
    public static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.utf8.first, (65...90).contains(first) || (97...122).contains(first), scheme.utf8.count <= 64 else { return false }
        return scheme.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 43 || $0 == 45 || $0 == 46 }
    }

    /// The URL schemes of CFBundleURLTypes.
    static func urlSchemes(_ info: PlistDictionary, in file: String) throws -> [String] {
        guard let value = info["CFBundleURLTypes"] else { return [] }
        guard let types = value.array else {
            throw BundleProblem(file: file, key: "CFBundleURLTypes", message: "must be an <array> of <dict>, not <\(value.typeName)>")
        }
        var schemes: [String] = []
        for (index, type) in types.enumerated() {
            let key = "CFBundleURLTypes[\(index)].CFBundleURLSchemes"
            guard let entry = type.dictionary, let list = entry["CFBundleURLSchemes"]?.array else {
                throw BundleProblem(file: file, key: key, message: "each URL type needs CFBundleURLSchemes, an <array> of <string>")
            }
            for item in list {
                guard let scheme = item.string, isValidScheme(scheme) else {
                    throw BundleProblem(file: file, key: key, message: "'\(item.string ?? item.typeName)' is not a URL scheme: a letter, then letters, digits, '+', '-' or '.'")
                }
                guard !["file", "http", "https"].contains(scheme.lowercased()) else {
                    throw BundleProblem(file: file, key: key, message: "'\(scheme)' belongs to the system; declare a scheme of the app's own")
                }
                schemes.append(scheme)
            }
        }
        return schemes
    }

    /// A CFBundleExecutable: a relative path that stays inside its bundle
    /// once symlinks are resolved and names an executable regular file.
    /// Returns the resolved path.
    static func executable(_ name: String, inside bundle: String, file: String) throws -> String {
        guard !name.isEmpty, !name.hasPrefix("/") else {
            throw BundleProblem(file: file, key: "CFBundleExecutable", message: "'\(name)' must be a path relative to the bundle")
        }
        switch resolve(bundle + "/" + name, inside: bundle) {
        case .success(let path): return path
        case .failure(let problem): throw BundleProblem(file: file, key: "CFBundleExecutable", message: problem.description)
        }
    }

    /// A file named in a manifest (an icon): inside the bundle, regular.
    static func resource(_ name: String, inside bundle: String, key: String, file: String) throws -> String {
        guard !name.isEmpty, !name.hasPrefix("/") else {
            throw BundleProblem(file: file, key: key, message: "'\(name)' must be a path relative to the bundle")
        }
        guard let resolved = try? Files.realPath(bundle + "/" + name) else {
            throw BundleProblem(file: file, key: key, message: "'\(name)' is not in the bundle; add the file or remove the key")
        }
        guard let root = try? Files.realPath(bundle) else { return resolved }
        guard resolved.hasPrefix(root + "/") else {
            throw BundleProblem(file: file, key: key, message: "'\(name)' leads outside the bundle; keep the file inside")
        }
        return resolved
    }

    struct ExecutableProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// Where an executable really is: a regular, executable file that
    /// stays inside `bundle` once symlinks are resolved.
    static func resolve(_ path: String, inside bundle: String) -> Result<String, ExecutableProblem> {
        let name = path.hasPrefix(bundle + "/") ? String(path.dropFirst(bundle.count + 1)) : path
        let resolved: String
        do {
            resolved = try Files.realPath(path)
        } catch {
            return .failure(ExecutableProblem(description: "'\(name)' is not in the bundle (\(error)); build and install the executable"))
        }
        guard let root = try? Files.realPath(bundle) else {
            return .failure(ExecutableProblem(description: "cannot resolve the bundle folder \(bundle)"))
        }
        guard resolved.hasPrefix(root + "/") else {
            return .failure(ExecutableProblem(description: "'\(name)' leads outside the bundle (to \(resolved)); keep the executable inside"))
        }
        guard let info = try? Files.status(resolved), info.st_mode & S_IFMT == S_IFREG else {
            return .failure(ExecutableProblem(description: "'\(name)' is not a regular file"))
        }
        guard Files.isExecutable(resolved) else {
            return .failure(ExecutableProblem(description: "'\(name)' is not executable; chmod +x it"))
        }
        return .success(resolved)
    }

    /// The app groups a bundle's entitlements name (SPEC section 3):
    /// `Entitlements.plist`, or else a single `*.entitlements` file.
    static func entitledGroups(_ bundle: String) throws -> [GroupID] { try entitlements(bundle).groups }

    /// What a bundle's entitlements grant: app groups, the network
    /// (`com.apple.security.network.client`) and reading the files the
    /// user names in its settings
    /// (`com.apple.security.files.user-selected.read-only`), which the
    /// sandbox honours.
    struct Entitlements {
        var groups: [GroupID] = []
        var networkClient = false
        var userSelectedFiles = false
    }

    static func entitlements(_ bundle: String) throws -> Entitlements {
        var path = bundle + "/Entitlements.plist"
        let names = FileSystem.entries(bundle)
        if !names.contains("Entitlements.plist") {
            let candidates = names.filter { $0.hasSuffix(".entitlements") }.sorted()
            guard !candidates.isEmpty else { return Entitlements() }
            guard candidates.count == 1 else {
                throw BundleProblem(file: bundle, key: "-", message: "has \(candidates.count) *.entitlements files (\(candidates.joined(separator: ", "))); keep one, or name it Entitlements.plist")
            }
            path = bundle + "/" + candidates[0]
        }
        let value: PlistValue
        do {
            value = try Plist.read(contentsOf: path)
        } catch {
            throw BundleProblem(file: path, key: "-", message: "not a readable property list (\(error)); fix or remove it")
        }
        let network = "com.apple.security.network.client"
        if let flag = value[network], flag.bool == nil {
            throw BundleProblem(file: path, key: network, message: "must be <true/> or <false/>, not <\(flag.typeName)>")
        }
        let networkClient = value[network]?.bool ?? false
        let files = "com.apple.security.files.user-selected.read-only"
        if let flag = value[files], flag.bool == nil {
            throw BundleProblem(file: path, key: files, message: "must be <true/> or <false/>, not <\(flag.typeName)>")
        }
        let userSelectedFiles = value[files]?.bool ?? false
        let key = "com.apple.security.application-groups"
        guard let entry = value[key] else { return Entitlements(networkClient: networkClient, userSelectedFiles: userSelectedFiles) }
        guard let list = entry.array else {
            throw BundleProblem(file: path, key: key, message: "must be an <array> of <string> group ids, not <\(entry.typeName)>")
        }
        var groups: [GroupID] = []
        for item in list {
            guard let group = item.string.flatMap(GroupID.init(rawValue:)) else {
                throw BundleProblem(file: path, key: key, message: GroupID.problem(item.string ?? item.typeName))
            }
            if !groups.contains(group) { groups.append(group) }
        }
        return Entitlements(groups: groups, networkClient: networkClient, userSelectedFiles: userSelectedFiles)
    }
}

/// SPEC section 16's manifest keys: `TodayParameters` and
/// `TodaySupportedFamilies`, each problem named by its exact key
/// (`NSExtension.NSExtensionAttributes.TodayParameters.1.type`).
extension BundleCatalog {
    static func parameters(_ attributes: PlistDictionary, in file: String, prefix: String) throws -> [WidgetParameter] {
        guard let list = attributes["TodayParameters"] else { return [] }
        let key = prefix + "TodayParameters"
        guard let items = list.array else {
            throw BundleProblem(file: file, key: key, message: "must be an <array> of <dict>, one per parameter, not <\(list.typeName)>")
        }
        var parameters: [WidgetParameter] = []
        for (index, item) in items.enumerated() {
            let itemPrefix = "\(key).\(index)."
            guard let entry = item.dictionary else {
                throw BundleProblem(file: file, key: "\(key).\(index)", message: "must be a <dict> with key, title and type, not <\(item.typeName)>")
            }
            guard let name = try string(entry, "key", in: file, prefix: itemPrefix), !name.isEmpty else {
                throw BundleProblem(file: file, key: itemPrefix + "key", message: "missing; each parameter needs a <string> key")
            }
            guard !parameters.contains(where: { $0.key == name }) else {
                throw BundleProblem(file: file, key: itemPrefix + "key", message: "'\(name)' is given twice; keys must differ")
            }
            let title = try string(entry, "title", in: file, prefix: itemPrefix) ?? name
            guard let typeName = try string(entry, "type", in: file, prefix: itemPrefix) else {
                throw BundleProblem(file: file, key: itemPrefix + "type", message: "missing; one of string, integer, boolean, choice")
            }
            guard let type = WidgetParameter.Kind(rawValue: typeName) else {
                throw BundleProblem(file: file, key: itemPrefix + "type", message: "'\(typeName)' is not one of string, integer, boolean, choice")
            }
            let dynamic = try boolean(entry, "dynamic", in: file, prefix: itemPrefix) ?? false
            guard !dynamic || type == .choice else {
                throw BundleProblem(file: file, key: itemPrefix + "dynamic", message: "only a choice can be dynamic")
            }
            var choices: [WidgetParameter.Choice] = []
            if let given = entry["choices"] {
                guard type == .choice, let list = given.array else {
                    throw BundleProblem(
                        file: file, key: itemPrefix + "choices", message: type == .choice ? "must be an <array> of <dict>" : "only a choice has choices")
                }
                for (number, choice) in list.enumerated() {
                    let choicePrefix = "\(itemPrefix)choices.\(number)."
                    guard let fields = choice.dictionary, let value = try string(fields, "value", in: file, prefix: choicePrefix) else {
                        throw BundleProblem(file: file, key: choicePrefix + "value", message: "each choice needs a <string> value")
                    }
                    choices.append(.init(value: value, title: try string(fields, "title", in: file, prefix: choicePrefix) ?? value))
                }
            }
            guard type != .choice || dynamic || !choices.isEmpty else {
                throw BundleProblem(file: file, key: itemPrefix + "choices", message: "missing; a choice that is not dynamic lists its choices")
            }
            let files = try boolean(entry, "files", in: file, prefix: itemPrefix) ?? false
            guard !files || type == .string else {
                throw BundleProblem(file: file, key: itemPrefix + "files", message: "only a string can name files")
            }
            var parameter = WidgetParameter(key: name, title: title, type: type, choices: choices, dynamic: dynamic, files: files)
            if let value = entry["default"] {
                if let problem = parameter.problem(with: value) {
                    throw BundleProblem(file: file, key: itemPrefix + "default", message: problem)
                }
                parameter.defaultValue = value
            }
            parameters.append(parameter)
        }
        return parameters
    }

    static func families(_ attributes: PlistDictionary, in file: String, prefix: String) throws -> [WidgetFamily] {
        guard let given = attributes["TodaySupportedFamilies"] else { return [.medium] }
        let key = prefix + "TodaySupportedFamilies"
        guard let items = given.array, !items.isEmpty else {
            throw BundleProblem(file: file, key: key, message: "must be a non-empty <array> of small, medium, large")
        }
        var families: [WidgetFamily] = []
        for (index, item) in items.enumerated() {
            guard let family = item.string.flatMap(WidgetFamily.init(rawValue:)) else {
                throw BundleProblem(file: file, key: "\(key).\(index)", message: "'\(item.string ?? item.typeName)' is not small, medium or large")
            }
            if !families.contains(family) { families.append(family) }
        }
        return families
    }
}
