import IceboxSystem

/// What an event in the log records.
public enum EventKind: String, Codable, Sendable, CaseIterable {
    /// The daemon started, stopped, or was told to stop.
    case daemon
    /// The app's process was created and exec'd.
    case spawn
    /// Launch → ready (cold start) or resume → READY=1 (hot start).
    case ready
    /// The background notice (didEnterBackground) and the start of the grace.
    case notice
    /// The grace was extended (EXTEND_TIMEOUT_USEC).
    case grace
    /// Background → suspended, confirmed by the kernel.
    case freeze
    /// Suspended → active, confirmed by the kernel.
    case thaw
    /// Back to active during the grace (no thaw needed).
    case resume
    /// SIGTERM sent, or SIGKILL after the time-out.
    case terminate
    /// The app ended on its own or was terminated.
    case exit
    /// Killed without notice, reaped, recorded.
    case evict
    /// Checkpointed to disk (CRIU), or a checkpoint that failed.
    case checkpoint
    /// Restored from disk (CRIU), or a restore that failed.
    case restore
    /// A notify message worth recording (STOPPING=1, a dropped sender).
    case notify
    /// Something failed; the detail says what and what was done about it.
    case error
    /// The attached `icebox run` went away.
    case detach
    /// Re-adopted after a daemon restart.
    case adopt
    /// A frozen app's memory was reclaimed.
    case compact
    /// A frozen app held a file lock others wait on.
    case lock
    /// An eviction decision and its result, or a policy change.
    case policy
    /// The PSI trigger fired.
    case pressure
    /// An active app missed its WATCHDOG=1.
    case watchdog
    /// Icebox adopt took over a running process tree or cgroup (duration: the move).
    case adopted
    /// Icebox release handed an app back, still running (duration: the move out).
    case released
}

/// Why the policy evicts an app.
package enum EvictionReason: Codable, Sendable, Equatable, CustomStringConvertible {
    /// The PSI trigger fired.
    case pressure(trigger: String)
    case budget(limitBytes: UInt64, usedBytes: UInt64)
    case tooManySuspended(cap: Int, count: Int)

    package var description: String {
        switch self {
        case .pressure(let trigger): return "memory pressure (PSI \(trigger))"
        case .budget(let limit, let used): return "memory budget \(SizeText.format(limit)) exceeded (\(SizeText.format(used)))"
        case .tooManySuspended(let cap, let count): return "more than \(cap) suspended apps (\(count))"
        }
    }
}

/// One step in the timed event log (JSON lines on disk). Beside the human `detail`, the figures
/// are fields of their own (bytes, nanoseconds, pids): `log --json` consumers read numbers.
public struct Event: Codable, Sendable, Equatable {
    /// When it happened: RFC 3339, microseconds, UTC.
    public var time: String
    /// When it happened on CLOCK_MONOTONIC, in nanoseconds: orders the events of one boot.
    public var monotonicNanos: UInt64
    /// The app it is about ("-" for the daemon's own).
    public var app: String
    /// The app's main process (or the daemon's, for its own events).
    public var pid: Int32?
    /// What happened.
    public var kind: EventKind
    /// The state it left, for a transition.
    public var from: AppState?
    /// The state it entered, for a transition.
    public var to: AppState?
    package var durationNanos: UInt64?
    /// What happened, in words: the line `icebox log` prints.
    public var detail: String

    // Structured fields; nil when they do not apply.
    /// Why: "READY=1", "expired", an eviction reason, ...
    public var reason: String?
    /// The backend that froze or thawed.
    public var backend: BackendKind?
    /// Processes (or threads, signal backend) a freeze or thaw confirmed.
    public var tasks: Int?
    package var graceNanos: UInt64?
    /// The shell's convention: code, or 128 + signal.
    public var exitStatus: Int32?
    /// The app's priority band (policy events).
    public var band: PriorityBand?
    /// The apps together, before an eviction.
    public var memoryBeforeBytes: UInt64?
    /// The apps together, after an eviction.
    public var memoryAfterBytes: UInt64?
    /// The evicted app's own memory.
    public var victimMemoryBytes: UInt64?
    /// Other processes involved (lock waiters, killed leftovers).
    public var pids: [Int32]?
    package var evictedFor: EvictionReason.Kind?  // on the event of a policy eviction done: why, as one word
    /// A checkpoint's images on disk, in bytes (checkpoint and restore events).
    public var imageBytes: UInt64?

    package init(
        app: String, pid: Int32?, kind: EventKind, from: AppState? = nil, to: AppState? = nil,
        durationNanos: UInt64? = nil, detail: String, at instant: Instant
    ) {
        // Stamped with the instant given, never a clock read here: an event says when its
        // transition happened.
        self.time = instant.rfc3339
        self.monotonicNanos = instant.monotonicNanos
        self.app = app
        self.pid = pid
        self.kind = kind
        self.from = from
        self.to = to
        self.durationNanos = durationNanos
        self.detail = detail
    }

    /// An event as read back from the log: the other fields are nil until set.
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

extension Event: JSONRecord {
    /// Decodes an event under its Swift names, `kind` under `event`.
    public init(from decoder: any Decoder) throws { try self.init(fieldsFrom: decoder) }

    /// Encodes an event under its Swift names, `kind` under `event` (the log's key for it).
    public func encode(to encoder: any Encoder) throws { try encodeFields(to: encoder) }

    /// Every member, in key order: the event log's form, a reply's and Codable's.
    package func visitFields<V: JSONFieldVisitor>(_ v: inout V) where V.Root == Event {
        v.required("app", app) { $0.app = $1 }
        v.optional("backend", backend) { $0.backend = $1 }
        v.optional("band", band) { $0.band = $1 }
        v.required("detail", detail) { $0.detail = $1 }
        v.optional("duration_ns", durationNanos) { $0.durationNanos = $1 }
        v.required("event", kind) { $0.kind = $1 }
        v.optional("evicted_for", evictedFor) { $0.evictedFor = $1 }
        v.optional("exit_status", exitStatus) { $0.exitStatus = $1 }
        v.optional("from", from) { $0.from = $1 }
        v.optional("grace_ns", graceNanos) { $0.graceNanos = $1 }
        v.optional("image_bytes", imageBytes) { $0.imageBytes = $1 }
        v.optional("memory_after_bytes", memoryAfterBytes) { $0.memoryAfterBytes = $1 }
        v.optional("memory_before_bytes", memoryBeforeBytes) { $0.memoryBeforeBytes = $1 }
        v.required("monotonic_ns", monotonicNanos) { $0.monotonicNanos = $1 }
        v.optional("pid", pid) { $0.pid = $1 }
        v.optional("pids", pids) { $0.pids = $1 }
        v.optional("reason", reason) { $0.reason = $1 }
        v.optional("tasks", tasks) { $0.tasks = $1 }
        v.required("time", time) { $0.time = $1 }
        v.optional("to", to) { $0.to = $1 }
        v.optional("victim_memory_bytes", victimMemoryBytes) { $0.victimMemoryBytes = $1 }
    }

    package static let jsonBlank = Event(time: "", monotonicNanos: 0, app: "", kind: .daemon, detail: "")
}
