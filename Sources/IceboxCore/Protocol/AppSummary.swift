/// What `ps` shows of an app: its record without the launch options, the grace bookkeeping
/// and the rest. With a thousand apps, encoding and decoding the full records took most of a
/// `ps` (about 60% of the daemon's part went to JSONEncoder on the options alone), so a
/// table asks for these; `ps --json` and `{{json .}}` still get the whole records.
package struct AppSummary: Codable, Sendable, Equatable {
    package var name: String
    package var pid: Int32
    package var state: AppState
    package var sinceMonotonicNanos: UInt64
    package var sinceWall: String
    package var backend: BackendKind
    package var memoryBytes: UInt64?
    package var lastFreezeNanos: UInt64?
    package var lastThawNanos: UInt64?
    package var statusText: String?
    package var ending: String?
    package var exitStatus: Int32?
    package var command: [String]
    package var priority: PriorityBand
    package var cgroup: String?
    package var runsAs: RunAs?
    /// true for an app `icebox adopt` took over (nil otherwise).
    package var adopted: Bool?
    /// true for an app launched with `--pid-namespace` (nil otherwise: not on the wire).
    package var pidNamespace: Bool? = nil
}

extension AppRecord {
    package var summary: AppSummary {
        var summary = AppSummary(
            name: name, pid: pid, state: state, sinceMonotonicNanos: sinceMonotonicNanos, sinceWall: sinceWall,
            backend: backend, memoryBytes: memoryBytes, lastFreezeNanos: lastFreezeNanos, lastThawNanos: lastThawNanos,
            statusText: statusText, ending: ending, exitStatus: exitStatus, command: options.command,
            priority: options.priority, cgroup: cgroup, runsAs: runsAs, adopted: isAdopted ? true : nil)
        summary.pidNamespace = options.pidNamespace ? true : nil
        return summary
    }
}
