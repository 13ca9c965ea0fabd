import IceboxSystem

/// The lifecycle states. launching is iOS's Inactive (until ready); exited, terminated and
/// evicted are Not Running, kept apart so a user sees why.
public enum AppState: String, Codable, Sendable {
    case launching, active, background, suspended, exited, terminated, evicted

    public var isEnded: Bool { self == .exited || self == .terminated || self == .evicted }
}

/// One step in the timed event log. JSON lines on disk; `duration_ns` is an integer.
public struct Event: Codable, Sendable, Equatable {
    public var time: String  // RFC 3339, µs, UTC
    public var monotonicNanos: UInt64
    public var app: String
    public var pid: Int32?
    public var kind: String  // spawn, ready, notice, grace, freeze, thaw, resume, terminate, exit, evict, notify, error, ...
    public var from: AppState?
    public var to: AppState?
    public var durationNanos: UInt64?
    public var detail: String

    enum CodingKeys: String, CodingKey {
        case time, app, pid, kind = "event", from, to, detail
        case monotonicNanos = "monotonic_ns", durationNanos = "duration_ns"
    }

    public init(
        app: String, pid: Int32?, kind: String, from: AppState? = nil, to: AppState? = nil,
        durationNanos: UInt64? = nil, detail: String
    ) {
        self.time = Clock.rfc3339(wallNanos: Clock.wallNanos())
        self.monotonicNanos = Clock.monotonicNanos()
        self.app = app
        self.pid = pid
        self.kind = kind
        self.from = from
        self.to = to
        self.durationNanos = durationNanos
        self.detail = detail
    }

    /// The aligned human form: "08:09:23.123456  web  active → background  SIGUSR1 sent".
    public var humanLine: String {
        let clock = time.split(separator: "T").last.map { String($0.dropLast()) } ?? time
        var transition = kind
        if let from, let to { transition = "\(from.rawValue) → \(to.rawValue)" } else if let to { transition = "→ \(to.rawValue)" }
        return "\(clock)  \(pad(app, 12)) \(pad(transition, 26)) \(detail)"
    }

    func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }
}
