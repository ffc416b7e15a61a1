import Foundation
import PropertyList
import TodayProtocol

/// NCUpdateResult: todayd's own result type (`.newData`, `.noData`,
/// `.failed`, written as SPEC section 4 says).
public typealias UpdateResult = TodayProtocol.UpdateResult

/// What a widget shows: the keys panels understand (SPEC section 2), and
/// any others, which pass through to them. One model, todayd's and every
/// panel's: `Snapshot(title:subtitle:body:image:imagePath:url:items:actions:)`.
public typealias Snapshot = TodayProtocol.Snapshot

/// NCWidgetProviding: a widget's provider. todayd runs the widget's
/// executable with `perform-update`; `main()` reads the previous snapshot,
/// calls `performUpdate`, and answers todayd.
///
///     @main struct LatestPost: WidgetProviding {
///         func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot) {
///             (.newData, Snapshot(title: "Hello"))
///         }
///     }
public protocol WidgetProviding {
    init()
    /// widgetPerformUpdate(completionHandler:): fresh content, or `.noData`
    /// to keep the previous snapshot, or `.failed`.
    func performUpdate(previous: Snapshot) async -> (UpdateResult, Snapshot)
    /// The intents the snapshot's buttons and toggles run: `perform-action
    /// ID` performs the one with that id, then the update runs and its
    /// snapshot is the answer.
    static var intents: [any WidgetIntent.Type] { get }
    /// Runs when the executable is started with other arguments.
    func run(arguments: [String]) async -> Int32
}

extension WidgetProviding {
    public static var intents: [any WidgetIntent.Type] { [] }

    public func run(arguments: [String]) async -> Int32 {
        FileHandle.standardError.write(Data("usage: \(CommandLine.arguments.first ?? "widget") perform-update (todayd runs this)\n".utf8))
        return 2
    }

    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "perform-action", !intents.isEmpty {
            let input = FileHandle.standardInput.readDataToEndOfFile()
            if let problem = await performIntent(arguments, among: intents) { exit(answerFailed(problem)) }
            exit(await Self().answer(input: input, afterAction: true))
        }
        guard arguments == ["perform-update"] else { exit(await Self().run(arguments: arguments)) }
        exit(await Self().answer(input: FileHandle.standardInput.readDataToEndOfFile()))
    }

    /// One update: the previous snapshot in, the answer on standard output.
    /// After an action the snapshot is sent even when it did not change,
    /// so that a toggle's state comes back from the widget itself.
    func answer(input: Data, afterAction: Bool = false) async -> Int32 {
        var previous = Snapshot()
        if !input.isEmpty, let value = try? Plist.read(input), let dictionary = value.dictionary {
            previous = Snapshot(dictionary)
        }
        let (result, snapshot) = await performUpdate(previous: previous)
        var answer: PlistDictionary = ["result": .string(result.rawValue)]
        if result == .newData || (afterAction && result == .noData) {
            answer = ["result": .string(UpdateResult.newData.rawValue), "snapshot": .dictionary(snapshot.dictionary)]
        }
        return writeAnswer(answer)
    }
}

/// Writes a provider's answer to todayd on standard output (an XML
/// plist); the exit status.
func writeAnswer(_ answer: PlistDictionary) -> Int32 {
    do {
        FileHandle.standardOutput.write(try Plist.write(.dictionary(answer), format: .xml))
        return 0
    } catch {
        FileHandle.standardError.write(Data("cannot write the answer: \(error)\n".utf8))
        return 1
    }
}
