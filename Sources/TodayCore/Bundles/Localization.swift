import FoundationEssentials
import PropertyList

/// Localized bundle names (SPEC section 12): `<lang>.lproj/InfoPlist.strings`
/// beside a bundle's Info.plist overrides CFBundleDisplayName and
/// CFBundleName; the language is chosen as gettext chooses it.
public enum Localization {
    /// The display name in each of a bundle's `tables`, by language tag
    /// (`de`, `pt_BR`).
    static func displayNames(in tables: [String: [String: String]]) -> [String: String] {
        tables.compactMapValues { $0["CFBundleDisplayName"] ?? $0["CFBundleName"] }
    }

    /// Every `<lang>.lproj/InfoPlist.strings` of `bundle`, by language tag,
    /// or the problem of a `.strings` file that does not read.
    static func tables(of bundle: String) throws -> [String: [String: String]] {
        var tables: [String: [String: String]] = [:]
        for folder in FileSystem.entries(bundle).sorted() where folder.hasSuffix(".lproj") && folder != "Base.lproj" {
            let file = bundle + "/" + folder + "/InfoPlist.strings"
            guard FileSystem.exists(file) else { continue }
            let entries: [(key: String, value: String)]
            do {
                entries = try StringsFile.read(try readFile(file))
            } catch {
                throw BundleProblem(file: file, key: "-", message: "not a readable .strings file (\(error)); fix or remove it")
            }
            tables[tag(String(folder.dropLast(6)))] = Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
        }
        return tables
    }

    /// `text` in the first of `languages` whose table has it as a key
    /// (a parameter's title, a choice's); else `text`.
    static func localized(_ text: String, in tables: [String: [String: String]], for languages: [String]) -> String {
        languages.lazy.compactMap { tables[$0]?[text] }.first ?? text
    }

    static func readFile(_ path: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else { throw PlistError("cannot read \(path)") }
        guard data.count <= 1 << 20 else { throw PlistError("\(path) is over 1 MiB") }
        return data
    }

    /// A folder's language as a tag: `pt-BR` and `pt_BR` are `pt_BR`.
    static func tag(_ name: String) -> String { String(name.map { $0 == "-" ? "_" : $0 }) }

    /// The languages to look for, most wanted first, as gettext takes them:
    /// the LANGUAGE list (unless the locale is exactly C or POSIX, or none
    /// is set: glibc honours LANGUAGE under `C.UTF-8`), then the first of
    /// LC_ALL, LC_MESSAGES, LANG where it names a language (`C.UTF-8`
    /// does not); each without its encoding and modifier, then its
    /// language alone (`pt_BR` then `pt`).
    public static func preferredLanguages(_ environment: [String: String]) -> [String] {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let locale = value("LC_ALL") ?? value("LC_MESSAGES") ?? value("LANG")
        var wanted: [String] = []
        let plain = locale.map { $0 == "C" || $0 == "POSIX" } ?? true
        if !plain, let list = value("LANGUAGE") { wanted += list.split(separator: ":").map(String.init) }
        if let locale, !plain, !locale.hasPrefix("C."), !locale.hasPrefix("POSIX.") { wanted.append(locale) }
        var result: [String] = []
        for entry in wanted {
            let base = String(entry.split(separator: ".").first ?? "").split(separator: "@").first.map(String.init) ?? ""
            guard !base.isEmpty else { continue }
            for candidate in [tag(base), String(tag(base).split(separator: "_").first ?? "")] where !candidate.isEmpty && !result.contains(candidate) {
                result.append(candidate)
            }
        }
        return result
    }

    /// The name for `languages` among `names`, or nil.
    public static func choose(_ names: [String: String], for languages: [String]) -> String? {
        languages.lazy.compactMap { names[$0] }.first
    }
}
