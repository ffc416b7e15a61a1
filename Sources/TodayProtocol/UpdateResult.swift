/// What an update or action came to: `LastResult`, the `Updated` and
/// `ActionPerformed` signals and PerformUpdate's reply (SPEC section 4).
public enum UpdateResult: String, Sendable, Equatable {
    case newData = "new-data"
    case noData = "no-data"
    case failed
}

/// Why a provider run failed: what `LastFailure` says (SPEC section 4).
public enum FailureReason: Sendable, Equatable, CustomStringConvertible {
    /// Past TodayUpdateTimeout, or a D-Bus provider that did not answer.
    case timeout
    /// Past TodayMemoryLimit.
    case memoryLimit
    /// More standard output than a snapshot may be.
    case tooLarge
    /// No provider to run: none declared, not installed, not on the bus.
    case noProvider
    /// `todayd --require-sandbox` where no sandbox is available.
    case noSandbox
    /// The provider said `failed` itself.
    case reported
    case exit(Int32)
    case signal(Int32)
    /// An answer that breaks a rule, the rule named.
    case badOutput(String)
    /// The snapshot could not be kept.
    case storage(String)
    /// A reason written by another version of todayd, kept as it was.
    case other(String)

    public var description: String {
        switch self {
        case .timeout: "timeout"
        case .memoryLimit: "memory-limit"
        case .tooLarge: "too-large"
        case .noProvider: "no-provider"
        case .noSandbox: "no-sandbox"
        case .reported: "reported"
        case .exit(let code): "exit \(code)"
        case .signal(let number): "signal \(number)"
        case .badOutput(let rule): "bad-output: \(rule)"
        case .storage(let problem): "storage: \(problem)"
        case .other(let text): text
        }
    }

    /// The reason `description` wrote.
    public init(_ text: String) {
        func number(after prefix: String) -> Int32? {
            text.hasPrefix(prefix) ? Int32(text.dropFirst(prefix.count)) : nil
        }
        switch text {
        case "timeout": self = .timeout
        case "memory-limit": self = .memoryLimit
        case "too-large": self = .tooLarge
        case "no-provider": self = .noProvider
        case "no-sandbox": self = .noSandbox
        case "reported": self = .reported
        default:
            if let code = number(after: "exit ") {
                self = .exit(code)
            } else if let signal = number(after: "signal ") {
                self = .signal(signal)
            } else if text.hasPrefix("bad-output: ") {
                self = .badOutput(String(text.dropFirst("bad-output: ".count)))
            } else if text.hasPrefix("storage: ") {
                self = .storage(String(text.dropFirst("storage: ".count)))
            } else {
                self = .other(text)
            }
        }
    }
}
