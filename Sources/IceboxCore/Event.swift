import IceboxSystem

/// What an event in the log records.
public enum EventKind: String, Codable, Sendable, CaseIterable {
    case daemon  // the daemon started, stopped, or was told to stop
    case spawn  // the app's process was created and exec'd
    case ready  // launch → ready (cold start) or resume → READY=1 (hot start)
    case notice  // the background notice (didEnterBackground) and the start of the grace
    case grace  // the grace was extended (EXTEND_TIMEOUT_USEC)
    case freeze  // background → suspended, confirmed by the kernel
    case thaw  // suspended → active, confirmed by the kernel
    case resume  // back to active during the grace (no thaw needed)
    case terminate  // SIGTERM sent, or SIGKILL after the time-out
    case exit  // the app ended on its own or was terminated
    case evict  // killed without notice, reaped, recorded
    case notify  // a notify message worth recording (STOPPING=1, a dropped sender)
    case error  // something failed; the detail says what and what was done about it
    case detach  // the attached `icebox run` went away
    case adopt  // re-adopted after a daemon restart
    case compact  // a frozen app's memory was reclaimed
    case lock  // a frozen app held a file lock others wait on
    case policy  // an eviction decision and its result, or a policy change
    case pressure  // the PSI trigger fired
    case watchdog  // an active app missed its WATCHDOG=1
    case adopted  // icebox adopt took over a running process tree or cgroup (duration: the move)
    case released  // icebox release handed an app back, still running (duration: the move out)
}

/// Why the policy evicts an app.
public enum EvictionReason: Codable, Sendable, Equatable, CustomStringConvertible {
    case pressure(trigger: String)  // the PSI trigger fired
    case budget(limitBytes: UInt64, usedBytes: UInt64)
    case tooManySuspended(cap: Int, count: Int)

    public var description: String {
        switch self {
        case .pressure(let trigger): return "memory pressure (PSI \(trigger))"
        case .budget(let limit, let used): return "memory budget \(SizeText.format(limit)) exceeded (\(SizeText.format(used)))"
        case .tooManySuspended(let cap, let count): return "more than \(cap) suspended apps (\(count))"
        }
    }
}

/// One step in the timed event log. JSON lines on disk. Beside the human `detail`, the
/// figures are fields of their own (bytes, nanoseconds, pids), so `log --json` consumers read
/// numbers, not text.
public struct Event: Codable, Sendable, Equatable {
    public var time: String  // RFC 3339, µs, UTC
    public var monotonicNanos: UInt64
    public var app: String
    public var pid: Int32?
    public var kind: EventKind
    public var from: AppState?
    public var to: AppState?
    public var durationNanos: UInt64?
    public var detail: String

    // Structured fields; nil when they do not apply.
    public var reason: String?  // why: "READY=1", "expired", an eviction reason, ...
    public var backend: BackendKind?
    public var tasks: Int?  // processes (or threads, signal backend) a freeze or thaw confirmed
    public var graceNanos: UInt64?  // how long the grace lasted
    public var exitStatus: Int32?  // the shell's convention: code, or 128 + signal
    public var band: PriorityBand?
    public var memoryBeforeBytes: UInt64?  // the apps together, before an eviction
    public var memoryAfterBytes: UInt64?
    public var victimMemoryBytes: UInt64?
    public var pids: [Int32]?  // other processes involved (lock waiters, killed leftovers)
    public var evictedFor: EvictionReason.Kind?  // on the event of a policy eviction done: why, as one word

    enum CodingKeys: String, CodingKey {
        case time, app, pid, kind = "event", from, to, detail, monotonicNanos, durationNanos
        case reason, backend, tasks, graceNanos, exitStatus, band, memoryBeforeBytes, memoryAfterBytes, victimMemoryBytes, pids
        case evictedFor
    }

    public init(
        app: String, pid: Int32?, kind: EventKind, from: AppState? = nil, to: AppState? = nil,
        durationNanos: UInt64? = nil, detail: String, now: UInt64 = Clock.monotonicNanos()
    ) {
        self.time = Clock.rfc3339(wallNanos: Clock.wallNanos())
        self.monotonicNanos = now
        self.app = app
        self.pid = pid
        self.kind = kind
        self.from = from
        self.to = to
        self.durationNanos = durationNanos
        self.detail = detail
    }

    /// An event as read back from the log, without reading a clock: the other fields are
    /// nil until set (`icebox log` sets those it prints).
    package init(time: String, monotonicNanos: UInt64, app: String, kind: EventKind, detail: String) {
        self.time = time
        self.monotonicNanos = monotonicNanos
        self.app = app
        self.kind = kind
        self.detail = detail
    }

    /// The aligned human form: "08:09:23.123456  web  active → background  SIGUSR1 sent".
    public var humanLine: String {
        let clock = time.split(separator: "T").last.map { String($0.dropLast()) } ?? time
        var transition = kind.rawValue
        if let from, let to { transition = "\(from.rawValue) → \(to.rawValue)" } else if let to { transition = "→ \(to.rawValue)" }
        // The detail may quote what an app said or answered: escaped for a terminal.
        return
            "\(TerminalText.escaped(clock))  \(pad(TerminalText.escaped(app), 12)) \(pad(transition, 26)) \(TerminalText.escaped(detail, keepingTab: true))"
    }

    func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }
}
