/// A type JSONReader can read from the plain form JSONWriter writes; nil for anything else,
/// which JSONDecoder then reads (see JSONReader). `JSONLines.decode` and
/// `decodeOrError` try it first where the type is known to conform (an overload).
package protocol JSONReadable: Decodable {
    init?(json r: inout JSONReader)
}

extension JSONReader {
    // One member's value into its variable. `null` leaves it nil, as decodeIfPresent does;
    // a member that may not be nil is checked once the object is read.
    mutating func field(_ target: inout String?) -> Bool { value(&target) { $0.string() } }
    mutating func field(_ target: inout Bool?) -> Bool { value(&target) { $0.bool() } }
    mutating func field(_ target: inout [String]?) -> Bool { value(&target) { $0.strings() } }
    mutating func field<N: FixedWidthInteger>(_ target: inout N?) -> Bool { value(&target) { $0.integer() } }
    mutating func field<N: FixedWidthInteger>(_ target: inout [N]?) -> Bool { value(&target) { $0.array { $0.integer() } } }
    mutating func field<R: JSONReadable>(_ target: inout R?) -> Bool { value(&target) { R(json: &$0) } }
    mutating func field<R: JSONReadable>(_ target: inout [R]?) -> Bool { value(&target) { $0.array { R(json: &$0) } } }
    mutating func field<E: RawRepresentable>(_ target: inout E?) -> Bool where E.RawValue == String {
        value(&target) { $0.raw() }
    }

    private mutating func value<T>(_ target: inout T?, _ read: (inout JSONReader) -> T?) -> Bool {
        if null() { return true }
        target = read(&self)
        return target != nil
    }
}

extension LaunchOptions: JSONReadable {
    package init?(json r: inout JSONReader) {
        var attached: Bool?, backend: BackendChoice?, backgroundSignal: NoticeSignal?, command: [String]?
        var compactAfter: UInt64?, environment: [String]?, extraEnvironment: [String]?, foregroundSignal: Int32?
        var grace: UInt64?, maxGrace: UInt64?, name: String?, nameIsDefault: Bool?, priority: PriorityBand?
        var ready: ReadyMode?, readyTimeout: UInt64?, runAs: RunAs?, watchdogAction: WatchdogAction?
        var watchdog: UInt64?, workingDirectory: String?, startLimitBurst: Int?, startLimitInterval: UInt64?
        var pidNamespace: Bool?, evictTo: EvictionTarget?
        let read = r.object { r, key in
            switch key {
            case "attached": return r.field(&attached)
            case "backend": return r.field(&backend)
            case "background_signal": return r.field(&backgroundSignal)
            case "command": return r.field(&command)
            case "compact_after_ns": return r.field(&compactAfter)
            case "environment": return r.field(&environment)
            case "extra_environment": return r.field(&extraEnvironment)
            case "foreground_signal": return r.field(&foregroundSignal)
            case "grace_ns": return r.field(&grace)
            case "max_grace_ns": return r.field(&maxGrace)
            case "name": return r.field(&name)
            case "name_is_default": return r.field(&nameIsDefault)
            case "evict_to": return r.field(&evictTo)
            case "pid_namespace": return r.field(&pidNamespace)
            case "priority": return r.field(&priority)
            case "ready": return r.field(&ready)
            case "ready_timeout_ns": return r.field(&readyTimeout)
            case "run_as": return r.field(&runAs)
            case "start_limit_burst": return r.field(&startLimitBurst)
            case "start_limit_interval_ns": return r.field(&startLimitInterval)
            case "watchdog_action": return r.field(&watchdogAction)
            case "watchdog_ns": return r.field(&watchdog)
            case "working_directory": return r.field(&workingDirectory)
            default: return false
            }
        }
        // Only the name and the command are required; the rest defaults (docs/protocol.md).
        guard read, let command, let name else { return nil }
        self.init(name: name, command: command)
        self.nameIsDefault = nameIsDefault ?? self.nameIsDefault
        self.backend = backend ?? self.backend
        self.graceNanos = grace ?? graceNanos
        self.maxGraceNanos = maxGrace ?? maxGraceNanos
        self.backgroundSignal = backgroundSignal ?? self.backgroundSignal
        self.foregroundSignal = foregroundSignal
        self.ready = ready ?? self.ready
        self.readyTimeoutNanos = readyTimeout ?? readyTimeoutNanos
        self.workingDirectory = workingDirectory
        self.environment = environment ?? self.environment
        self.extraEnvironment = extraEnvironment ?? self.extraEnvironment
        self.priority = priority ?? self.priority
        self.compactAfterNanos = compactAfter
        self.attached = attached ?? self.attached
        self.watchdogNanos = watchdog
        self.watchdogAction = watchdogAction
        self.startLimitBurst = startLimitBurst
        self.startLimitIntervalNanos = startLimitInterval
        self.runAs = runAs
        self.pidNamespace = pidNamespace ?? false
        self.evictTo = evictTo
    }
}

extension ReadyMode: JSONReadable {
    package init?(json r: inout JSONReader) {
        guard let mode = r.string().flatMap(ReadyMode.parse) else { return nil }
        self = mode
    }
}

extension NoticeSignal: JSONReadable {
    package init?(json r: inout JSONReader) {
        guard let signal = r.string().flatMap(NoticeSignal.init(stored:)) else { return nil }
        self = signal
    }
}

extension RunAs: JSONReadable {
    package init?(json r: inout JSONReader) {
        var gid: UInt32?, group: String?, groups: [UInt32]?, uid: UInt32?, user: String?
        let read = r.object { r, key in
            switch key {
            case "gid": return r.field(&gid)
            case "group": return r.field(&group)
            case "groups": return r.field(&groups)
            case "uid": return r.field(&uid)
            case "user": return r.field(&user)
            default: return false
            }
        }
        guard read, let gid, let groups, let uid else { return nil }
        self.init(uid: uid, gid: gid, groups: groups, user: user, group: group)
    }
}

extension AppSummary: JSONReadable {
    package init?(json r: inout JSONReader) {
        var backend: BackendKind?, cgroup: String?, command: [String]?, ending: String?, exitStatus: Int32?
        var lastFreeze: UInt64?, lastThaw: UInt64?, memoryBytes: UInt64?, name: String?, pid: Int32?
        var priority: PriorityBand?, runsAs: RunAs?, sinceMonotonic: UInt64?, sinceWall: String?, state: AppState?
        var statusText: String?, adopted: Bool?, pidNamespace: Bool?
        let read = r.object { r, key in
            switch key {
            case "adopted": return r.field(&adopted)
            case "backend": return r.field(&backend)
            case "cgroup": return r.field(&cgroup)
            case "command": return r.field(&command)
            case "ending": return r.field(&ending)
            case "exit_status": return r.field(&exitStatus)
            case "last_freeze_ns": return r.field(&lastFreeze)
            case "last_thaw_ns": return r.field(&lastThaw)
            case "memory_bytes": return r.field(&memoryBytes)
            case "name": return r.field(&name)
            case "pid": return r.field(&pid)
            case "pid_namespace": return r.field(&pidNamespace)
            case "priority": return r.field(&priority)
            case "runs_as": return r.field(&runsAs)
            case "since_monotonic_ns": return r.field(&sinceMonotonic)
            case "since_wall": return r.field(&sinceWall)
            case "state": return r.field(&state)
            case "status_text": return r.field(&statusText)
            default: return false
            }
        }
        guard read, let backend, let command, let name, let pid, let priority, let sinceMonotonic, let sinceWall, let state
        else { return nil }
        self.init(
            name: name, pid: pid, state: state, sinceMonotonicNanos: sinceMonotonic, sinceWall: sinceWall, backend: backend,
            memoryBytes: memoryBytes, lastFreezeNanos: lastFreeze, lastThawNanos: lastThaw, statusText: statusText,
            ending: ending, exitStatus: exitStatus, command: command, priority: priority, cgroup: cgroup, runsAs: runsAs,
            adopted: adopted)
        self.pidNamespace = pidNamespace
    }
}

extension ControlReply: JSONReadable {
    /// The replies of `ps`, and the lines (with the event of their step) and ends of every
    /// command; one that carries a policy (a policy command: one at a time) is JSONDecoder's.
    package init?(json r: inout JSONReader) { self.init(json: &r, lineEvents: true) }

    /// `lineEvents` false: the `event` of a `line` reply is passed over, not decoded (a
    /// one-shot command prints the line and nothing of the event; decoding it was most of
    /// the command's JSON work). An `event` reply's event is still read, by the caller's
    /// fallback (`JSONLines.decode`, which reads it whole).
    package init?(json r: inout JSONReader, lineEvents: Bool) {
        var apps: [AppRecord]?, code: Int32?, kind: Kind?, summaries: [AppSummary]?, text: String?, event: Event?
        var reason: IceboxError.Reason.Wire?
        var skipped = false
        let read = r.object { r, key in
            switch key {
            case "apps": return r.field(&apps)
            case "code": return r.field(&code)
            case "event":
                if lineEvents { return r.field(&event) }
                skipped = true
                return r.skipValue()
            case "kind": return r.field(&kind)
            case "reason": return r.field(&reason)
            case "summaries": return r.field(&summaries)
            case "text": return r.field(&text)
            default: return false
            }
        }
        guard read, let kind, !(skipped && kind == .event) else { return nil }
        self.init(kind: kind, text: text, code: code)
        self.apps = apps
        self.summaries = summaries
        self.reason = reason
        self.event = event
    }
}

extension Event: JSONReadable {
    /// An event as `Event.writeJSON` writes it (the log's lines, a reply's `event`).
    package init?(json r: inout JSONReader) {
        var time: String?, monotonic: UInt64?, app: String?, pid: Int32?, kind: EventKind?, from: AppState?, to: AppState?
        var duration: UInt64?, detail: String?, reason: String?, backend: BackendKind?, tasks: Int?, grace: UInt64?
        var exitStatus: Int32?, band: PriorityBand?, before: UInt64?, after: UInt64?, victim: UInt64?, pids: [Int32]?
        var evictedFor: EvictionReason.Kind?, imageBytes: UInt64?
        let read = r.object { r, key in
            switch key {
            case "app": return r.field(&app)
            case "backend": return r.field(&backend)
            case "band": return r.field(&band)
            case "detail": return r.field(&detail)
            case "duration_ns": return r.field(&duration)
            case "event": return r.field(&kind)
            case "evicted_for": return r.field(&evictedFor)
            case "exit_status": return r.field(&exitStatus)
            case "from": return r.field(&from)
            case "grace_ns": return r.field(&grace)
            case "image_bytes": return r.field(&imageBytes)
            case "memory_after_bytes": return r.field(&after)
            case "memory_before_bytes": return r.field(&before)
            case "monotonic_ns": return r.field(&monotonic)
            case "pid": return r.field(&pid)
            case "pids": return r.field(&pids)
            case "reason": return r.field(&reason)
            case "tasks": return r.field(&tasks)
            case "time": return r.field(&time)
            case "to": return r.field(&to)
            case "victim_memory_bytes": return r.field(&victim)
            default: return false
            }
        }
        guard read, let time, let monotonic, let app, let kind, let detail else { return nil }
        self.init(time: time, monotonicNanos: monotonic, app: app, kind: kind, detail: detail)
        self.pid = pid
        self.from = from
        self.to = to
        self.durationNanos = duration
        self.reason = reason
        self.backend = backend
        self.tasks = tasks
        self.graceNanos = grace
        self.exitStatus = exitStatus
        self.band = band
        self.memoryBeforeBytes = before
        self.memoryAfterBytes = after
        self.victimMemoryBytes = victim
        self.pids = pids
        self.evictedFor = evictedFor
        self.imageBytes = imageBytes
    }
}

extension ControlRequest: JSONReadable {
    /// The requests typed in a shell one after another (ps, suspend, resume, switch, evict, ping);
    /// the others, and any request in another form, are JSONDecoder's.
    package init?(json r: inout JSONReader) {
        var request: ControlRequest?
        let read = r.object { r, key in
            guard request == nil else { return false }  // one case a request
            switch key {
            case "ping":
                guard r.object({ _, _ in false }) else { return false }
                request = .ping
            case "ps":
                var all: Bool?, brief: Bool?
                let read = r.object { r, key in
                    switch key {
                    case "all": return r.field(&all)
                    case "brief": return r.field(&brief)
                    default: return false
                    }
                }
                guard read, let all, let brief else { return false }
                request = .ps(all: all, brief: brief)
            case "suspend":
                var names: [String]?, grace: UInt64?
                let read = r.object { r, key in
                    switch key {
                    case "grace_ns": return r.field(&grace)
                    case "names": return r.field(&names)
                    default: return false
                    }
                }
                guard read, let names else { return false }
                request = .suspend(names: names, graceNanos: grace)
            case "resume":
                var names: [String]?, waitReady: Bool?
                let read = r.object { r, key in
                    switch key {
                    case "names": return r.field(&names)
                    case "wait_ready": return r.field(&waitReady)
                    default: return false
                    }
                }
                guard read, let names, let waitReady else { return false }
                request = .resume(names: names, waitReady: waitReady)
            case "switch_to":
                var name: String?
                guard r.object({ r, key in key == "name" && r.field(&name) }), let name else { return false }
                request = .switchTo(name: name)
            case "evict":
                var names: [String]?, toDisk: Bool?
                let read = r.object { r, key in
                    switch key {
                    case "names": return r.field(&names)
                    case "to_disk": return r.field(&toDisk)
                    default: return false
                    }
                }
                guard read, let names else { return false }
                request = .evict(names: names, toDisk: toDisk ?? false)  // absent: the kill, as before to_disk
            default: return false
            }
            return true
        }
        guard read, let request else { return nil }
        self = request
    }
}
