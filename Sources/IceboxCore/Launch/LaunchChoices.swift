import IceboxSystem

/// `--backend`: which freezer an app gets. `auto` is resolved at launch against the host
/// (HostFacts.resolve): cgroup2, else cgroup1, else signal.
public enum BackendChoice: String, Codable, Sendable, CaseIterable {
    /// Chosen at launch: cgroup2 where usable, else cgroup1, else signal.
    case auto
    /// cgroup v2's `cgroup.freeze`.
    case cgroup2
    /// The cgroup v1 freezer.
    case cgroup1
    /// SIGSTOP and SIGCONT.
    case signal
}

/// `--watchdog-action`: what happens to an active app that stops sending WATCHDOG=1.
public enum WatchdogAction: String, Codable, Sendable, CaseIterable {
    /// Record it (once, until the app pings again).
    case log
    /// SIGKILL every process of the app; it ends as terminated.
    case kill
    /// Kill it, then launch it again with the same command line and options.
    case restart
}

/// `--background-signal`: the notice an app gets when it goes to the background
/// (didEnterBackground). `auto` sends SIGUSR1 only if the app's main process handles it (sigcatch
/// in /proc/PID/stat), so a program that does not listen is never killed by the notice.
public enum NoticeSignal: Codable, Sendable, Equatable, CustomStringConvertible {
    /// SIGUSR1 if the app's main process handles it, else none.
    case auto
    /// No notice: the grace runs without one.
    case none
    /// This signal (a number: `SIGUSR2`, `SIGRTMIN + 1`, ...).
    case signal(Int32)

    public var description: String {
        switch self {
        case .auto: return "auto"
        case .none: return "none"
        case .signal(let n): return Signals.name(of: n)
        }
    }

    // Encoded as its text ("auto", "none", "10"), as the registry has always kept it.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let signal = NoticeSignal(stored: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "bad signal \(text)"))
        }
        self = signal
    }

    /// The notice from its stored text; nil if it names no signal.
    init?(stored text: String) {
        switch text {
        case "auto": self = .auto
        case "none": self = NoticeSignal.none
        default:
            guard let n = Int32(text) ?? Signals.number(of: text) else { return nil }
            self = .signal(n)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .auto: try c.encode("auto")
        case .none: try c.encode("none")
        case .signal(let n): try c.encode(String(n))
        }
    }
}
