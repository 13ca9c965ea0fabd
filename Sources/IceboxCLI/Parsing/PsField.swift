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
        TerminalText.escaped(raw(of: r, now: now, wall: wall))
    }

    private func raw(of r: AppSummary, now: UInt64, wall: Int64) -> String {
        switch self {
        case .name: return r.name
        case .pid: return String(r.pid)
        case .state: return r.state.rawValue
        case .since: return Self.since(r, now: now, wall: wall)
        case .backend: return r.backend.rawValue
        case .memory: return r.memoryBytes.map(SizeText.format) ?? "–"
        case .memoryBytes: return r.memoryBytes.map { String($0) } ?? "–"
        case .lastFreeze: return r.lastFreezeNanos.map(DurationText.format) ?? "–"
        case .lastThaw: return r.lastThawNanos.map(DurationText.format) ?? "–"
        case .status: return (r.state.isEnded ? r.ending : r.statusText) ?? (r.adopted == true ? "adopted" : "")
        case .command: return r.command.joined(separator: " ")
        case .priority: return r.priority.rawValue
        case .exitStatus: return r.exitStatus.map { String($0) } ?? "–"
        case .cgroup: return r.cgroup ?? "–"
        case .user: return r.runsAs?.short ?? "–"
        case .pidNamespace: return r.pidNamespace == true ? "yes" : "no"
        }
    }

    /// How long the app has been in its state, as an age: from the daemon's monotonic clock
    /// for a live app, from the recorded wall time for an ended one (which may predate a reboot).
    static func since(_ r: AppSummary, now: UInt64, wall: Int64) -> String {
        if !r.state.isEnded { return TimeText.age(now > r.sinceMonotonicNanos ? now - r.sinceMonotonicNanos : 0) }
        guard let then = TimeText.parseTimestamp(r.sinceWall, offset: TimeText.localOffset) else { return "–" }
        return TimeText.age(UInt64(max(0, wall - then)))
    }
}
