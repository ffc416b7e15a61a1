import DBus
import FoundationEssentials
import Synchronization

/// URLs that come straight back. Every process todayd starts to open a
/// URL carries a token in its environment (`TODAYD_URL_TOKEN`), which its
/// children inherit whatever runs in between (`env`, `sh -c`, a script).
/// When an OpenURL for the same URL arrives from a process that carries
/// the token of a launch made within `window`, the handler handed the URL
/// back to todayd: the call is refused instead of starting it again.
/// This catches a loop by what happens, not by the handler's name.
final class URLLaunches: Sendable {
    static let variable = "TODAYD_URL_TOKEN"
    static let window: Duration = .seconds(5)

    private let launches = Mutex<[String: (url: String, at: ContinuousClock.Instant)]>([:])

    /// A new token for a process about to be started for `url`.
    func token(for url: String) -> String {
        let token = String(UInt64.random(in: 1...UInt64.max), radix: 16)
        let now = ContinuousClock.now
        launches.withLock { launches in
            launches = launches.filter { now - $0.value.at < Self.window }
            launches[token] = (url, now)
        }
        return token
    }

    /// Whether `url`, asked for by a process whose environment holds
    /// `token`, comes back from the launch that token marks.
    func isLoop(url: String, token: String?) -> Bool {
        guard let token else { return false }
        let now = ContinuousClock.now
        return launches.withLock { launches in
            guard let launch = launches[token] else { return false }
            return launch.url == url && now - launch.at < Self.window
        }
    }

    /// The token in the environment of process `pid`, if any.
    static func token(ofProcess pid: UInt32, procRoot: String) -> String? {
        guard let environ = try? Data(contentsOf: URL(fileURLWithPath: "\(procRoot)/\(pid)/environ")) else { return nil }
        let prefix = Array((variable + "=").utf8)
        for entry in environ.split(separator: 0, omittingEmptySubsequences: true) where entry.starts(with: prefix) {
            return String(decoding: entry.dropFirst(prefix.count), as: UTF8.self)
        }
        return nil
    }
}
