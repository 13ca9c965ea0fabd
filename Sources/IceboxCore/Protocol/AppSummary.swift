/// What `ps` shows of an app: its record without the launch options, the grace bookkeeping
/// and the rest. With a thousand apps the full records took most of a `ps`, so a table asks
/// for these; `ps --json` and `{{json .}}` still get the whole records.
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
        AppSummary(
            name: name, pid: pid, state: state, sinceMonotonicNanos: sinceMonotonicNanos, sinceWall: sinceWall,
            backend: backend, memoryBytes: memoryBytes, lastFreezeNanos: lastFreezeNanos, lastThawNanos: lastThawNanos,
            statusText: statusText, ending: ending, exitStatus: exitStatus, command: options.command,
            priority: options.priority, cgroup: cgroup, runsAs: runsAs, adopted: isAdopted ? true : nil,
            pidNamespace: options.pidNamespace ? true : nil)
    }
}

extension AppSummary: JSONRecord {
    package init(from decoder: any Decoder) throws { try self.init(fieldsFrom: decoder) }

    package func encode(to encoder: any Encoder) throws { try encodeFields(to: encoder) }

    /// Every member, in key order: `ps`'s reply and Codable's.
    package func visitFields<V: JSONFieldVisitor>(_ v: inout V) where V.Root == AppSummary {
        v.optional("adopted", adopted) { $0.adopted = $1 }
        v.required("backend", backend) { $0.backend = $1 }
        v.optional("cgroup", cgroup) { $0.cgroup = $1 }
        v.required("command", command) { $0.command = $1 }
        v.optional("ending", ending) { $0.ending = $1 }
        v.optional("exit_status", exitStatus) { $0.exitStatus = $1 }
        v.optional("last_freeze_ns", lastFreezeNanos) { $0.lastFreezeNanos = $1 }
        v.optional("last_thaw_ns", lastThawNanos) { $0.lastThawNanos = $1 }
        v.optional("memory_bytes", memoryBytes) { $0.memoryBytes = $1 }
        v.required("name", name) { $0.name = $1 }
        v.required("pid", pid) { $0.pid = $1 }
        v.optional("pid_namespace", pidNamespace) { $0.pidNamespace = $1 }
        v.required("priority", priority) { $0.priority = $1 }
        v.optional("runs_as", runsAs) { $0.runsAs = $1 }
        v.required("since_monotonic_ns", sinceMonotonicNanos) { $0.sinceMonotonicNanos = $1 }
        v.required("since_wall", sinceWall) { $0.sinceWall = $1 }
        v.required("state", state) { $0.state = $1 }
        v.optional("status_text", statusText) { $0.statusText = $1 }
    }

    /// The blank record's summary.
    package static let jsonBlank = AppRecord.jsonBlank.summary
}
