import DBus
import FoundationEssentials
import Glibc
import PropertyList
import TodayCore
import TodayProtocol

// MARK: Files

func lint(_ paths: [String], json: Bool) throws {
    guard !paths.isEmpty, !paths.contains(where: { $0.hasPrefix("-") }) else {
        throw Failure.usage("lint needs .app bundles or folders of them")
    }
    let (checked, problems) = BundleCatalog.lint(paths)
    if json {
        Out.json(.dictionary([
            "checked": .integer(Int64(checked)),
            "problems": .array(problems.map { .dictionary(["file": .string($0.file), "key": .string($0.key), "message": .string($0.message)]) }),
        ]))
    } else {
        for problem in problems { Out.line(problem.description) }
        if problems.isEmpty { Out.line("\(checked) bundle\(checked == 1 ? "" : "s") checked: no problems") }
    }
    if !problems.isEmpty { throw Failure(message: "\(problems.count) problem\(problems.count == 1 ? "" : "s") found", status: 1) }
}

func plist(_ arguments: [String], json: Bool) throws {
    guard arguments.count == 1 || (arguments.count == 3 && arguments[1] == "--to") else {
        throw Failure.usage("plist FILE|- [--to xml|binary|json]")
    }
    let format = json ? .json : arguments.count == 3 ? PlistFormat(rawValue: arguments[2]) : .xml
    guard let format else { throw Failure.usage("--to takes xml, binary or json, not '\(arguments[2])'") }
    let name = arguments[0] == "-" ? "standard input" : arguments[0]
    do {
        let value = arguments[0] == "-" ? try Plist.read(try Plist.readStandardInput()) : try Plist.read(contentsOf: arguments[0])
        // JSON as --json prints it (docs/todayctl.md): data as base64 and
        // dates as ISO 8601 strings, non-finite reals as null.
        if format == .json {
            Out.line(Plist.displayJSON(value))
        } else {
            Out.bytes(try Plist.write(value, format: format))
        }
    } catch {
        throw Failure.refused("\(name): \(error)")
    }
}
