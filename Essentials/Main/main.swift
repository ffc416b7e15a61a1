// todayd's own widgets (SPEC section 17): one executable, linked into
// each extension of io.github.todayd.Essentials.app, that serves the
// extension it runs as.
//
// - World Clock, Weather and Up Next are exec providers: todayd runs them
//   sandboxed with perform-update, and their timelines carry the clock.
// - Now Playing and Battery follow something that tells of its changes (a
//   media player, UPower): the session bus starts them with `serve` at
//   todayd's first call, and they ask todayd to reload when it changes.
//   They stay out of Swift concurrency (no `await` here), so that idle
//   they never wake. Their executables also answer perform-options (the
//   player choice).
import Dispatch
import Essentials
import Foundation
import PropertyList
import TodayKit

let kind = TodayBundle.main.bundleIdentifier ?? ""
let arguments = Array(CommandLine.arguments.dropFirst())

/// Serves a bus provider until its bus goes away.
func serve(_ make: () throws -> any BusWidgetProvider, as name: String) -> Never {
    do {
        try BusProviderHost.serve(try make(), as: name)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("\(kind): \(error)\n".utf8))
        exit(1)
    }
}

/// Runs an exec provider's async entry point, which exits when done.
func run(_ main: @escaping @Sendable () async -> Void) -> Never {
    Task {
        await main()
        exit(0)
    }
    dispatchMain()
}

switch (kind, arguments.first) {
case (NowPlayingProvider.kind, "serve"):
    serve({ try NowPlayingProvider() }, as: NowPlayingProvider.kind)
case (NowPlayingProvider.kind, "perform-options"):
    let choices: [PlistValue] = NowPlayingProvider.runningPlayers().map { .dictionary(["value": .string($0.value), "title": .string($0.title)]) }
    FileHandle.standardOutput.write((try? Plist.write(.dictionary(["choices": .array(choices)]), format: .xml)) ?? Data())
case (BatteryProvider.kind, "serve"):
    serve({ try BatteryProvider() }, as: BatteryProvider.kind)
case (WorldClock.kind, _):
    run { await WorldClock.main() }
case (WeatherProvider.kind, _):
    run { await WeatherProvider.main() }
case (UpNextProvider.kind, _):
    run { await UpNextProvider.main() }
default:
    FileHandle.standardError.write(
        Data("usage: run as one of io.github.todayd.Essentials' widgets (todayd runs it); this is '\(kind.isEmpty ? "none" : kind)'\n".utf8))
    exit(2)
}
