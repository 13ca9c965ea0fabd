import IceboxCore

/// A column of `ps`: what `--format` names as `{{.Name}}`, in the order the man page lists them.
enum PsField: String, TemplateField {
    case name = "Name"
    case pid = "PID"
    case state = "State"
    case since = "Since"
    case backend = "Backend"
    case memory = "Memory"
    case memoryBytes = "MemoryBytes"
    case lastFreeze = "LastFreeze"
    case lastThaw = "LastThaw"
    case status = "Status"
    case command = "Command"
    case priority = "Priority"
    case exitStatus = "ExitStatus"
    case cgroup = "Cgroup"
    case user = "User"
    case pidNamespace = "PIDNamespace"

    /// This field of an app as text; "–" where there is no value. Safe on a terminal: an
    /// app's STATUS= (and anything else not ours) has its control characters escaped
    /// (`TerminalText`), so it cannot rewrite the table or the reader's terminal.
    func text(of r: AppSummary, now: UInt64, wall: Int64) -> String {
        let raw: String =
            switch self {
            case .name: r.name
            case .pid: String(r.pid)
            case .state: r.state.rawValue
            case .since: Self.since(r, now: now, wall: wall)
            case .backend: r.backend.rawValue
            case .memory: r.memoryBytes.map(SizeText.format) ?? "–"
            case .memoryBytes: r.memoryBytes.map { String($0) } ?? "–"
            case .lastFreeze: r.lastFreezeNanos.map(DurationText.format) ?? "–"
            case .lastThaw: r.lastThawNanos.map(DurationText.format) ?? "–"
            case .status: (r.state.isEnded ? r.ending : r.statusText) ?? (r.adopted == true ? "adopted" : "")
            case .command: r.command.joined(separator: " ")
            case .priority: r.priority.rawValue
            case .exitStatus: r.exitStatus.map { String($0) } ?? "–"
            case .cgroup: r.cgroup ?? "–"
            case .user: r.runsAs?.short ?? "–"
            case .pidNamespace: r.pidNamespace == true ? "yes" : "no"
            }
        return TerminalText.escaped(raw)
    }

    /// How long the app has been in its state, as an age: from the daemon's monotonic clock
    /// for a live app, from the recorded wall time for an ended one (which may predate a reboot).
    static func since(_ r: AppSummary, now: UInt64, wall: Int64) -> String {
        if !r.state.isEnded { return TimeText.age(now > r.sinceMonotonicNanos ? now - r.sinceMonotonicNanos : 0) }
        guard let then = TimeText.parseTimestamp(r.sinceWall, offset: TimeText.localOffset) else { return "–" }
        return TimeText.age(UInt64(max(0, wall - then)))
    }
}
