/// What `ps` shows of an app: its record without the launch options, the grace bookkeeping
/// and the rest. With a thousand apps, encoding and decoding the full records took most of a
/// `ps` (about 60% of the daemon's part went to JSONEncoder on the options alone), so a
/// table asks for these; `ps --json` and `{{json .}}` still get the whole records.
public struct AppSummary: Codable, Sendable, Equatable {
    public var name: String
    public var pid: Int32
    public var state: AppState
    public var sinceMonotonicNanos: UInt64
    public var sinceWall: String
    public var backend: BackendKind
    public var memoryBytes: UInt64?
    public var lastFreezeNanos: UInt64?
    public var lastThawNanos: UInt64?
    public var statusText: String?
    public var ending: String?
    public var exitStatus: Int32?
    public var command: [String]
    public var priority: PriorityBand
    public var cgroup: String?
    public var runsAs: RunAs?
    /// true for an app `icebox adopt` took over (nil otherwise).
    public var adopted: Bool?
}

extension AppRecord {
    public var summary: AppSummary {
        AppSummary(
            name: name, pid: pid, state: state, sinceMonotonicNanos: sinceMonotonicNanos, sinceWall: sinceWall,
            backend: backend, memoryBytes: memoryBytes, lastFreezeNanos: lastFreezeNanos, lastThawNanos: lastThawNanos,
            statusText: statusText, ending: ending, exitStatus: exitStatus, command: options.command,
            priority: options.priority, cgroup: cgroup, runsAs: runsAs, adopted: isAdopted ? true : nil)
    }
}
