import IceboxCore

/// What `icebox top` shows, as a value: the apps, the header's facts, the latest events,
/// the selection, filter, sort and prompt. `TopRender` draws it, `TopKeys` changes it on a
/// key, `TopSession` feeds it from the daemon, the event log and the cgroups. No I/O here.
struct TopModel: Equatable {
    struct Row: Equatable {
        var name: String
        var pid: Int32 = 0
        var state: AppState
        /// When it entered its state, on the monotonic clock (the daemon's and ours: one host).
        var sinceMonotonicNanos: UInt64 = 0
        var backend = BackendKind.cgroup2
        var priority = PriorityBand.normal
        var memoryBytes: UInt64?
        var memoryDelta: Int64 = 0  // since the reading before, for the trend
        var lastFreezeNanos: UInt64?
        var lastThawNanos: UInt64?
        var status = ""  // the app's STATUS=, raw: escaped when drawn
        var cgroup: String?  // its v2 cgroup, where its memory may be read
    }

    /// What the prompt line asks for, if anything.
    enum Prompt: Equatable {
        case none
        case confirm(TopAction, String)  // terminate or evict NAME? (y/n)
        case filter(String)  // being typed, applied on Enter
        case help
    }

    var rows: [Row] = []
    var selected: String?  // by name, so the selection stays on it as rows move
    var filter = ""  // only apps whose name contains this (case-insensitive); empty: all
    var sort = TopColumn.name
    var descending = false
    var prompt = Prompt.none
    /// The outcome of the last action, or an error (`messageIsError`: drawn in the error
    /// colour); cleared by Esc.
    var message: String?
    var messageIsError = false
    var events: [String] = []  // the latest, oldest first, as `icebox log` prints them (escaped)
    var policy: EvictionPolicy?
    /// Memory pressure as the host reports it: "some 0.12% full 0.00%" (10 s averages); nil if unknown.
    var pressure: String?
    var pending = 0  // actions sent and not answered yet

    static let eventsKept = 50

    /// The rows shown: those the filter keeps, in the sort order (ties by name).
    var visibleRows: [Row] {
        let kept = filter.isEmpty ? rows : rows.filter { $0.name.lowercased().contains(filter.lowercased()) }
        return kept.sorted { a, b in
            let order = sort.compare(a, b)
            if order == 0 { return a.name < b.name }
            return descending ? order > 0 : order < 0
        }
    }

    var selectedRow: Row? {  // the selected one if it is shown, else the first shown
        let shown = visibleRows
        return shown.first { $0.name == selected } ?? shown.first
    }

    mutating func addEvent(_ line: String) {
        events.append(line)
        if events.count > Self.eventsKept { events.removeFirst(events.count - Self.eventsKept) }
    }

    mutating func report(_ text: String, error: Bool) {
        message = text
        messageIsError = error
    }

    /// Replaces the rows with a snapshot from `ps`, keeping the memory trend of rows that stay.
    mutating func take(snapshot: [AppSummary]) {
        let old = Dictionary(rows.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        rows = snapshot.filter { !$0.state.isEnded }.map { summary in
            var row = Row(summary)
            if let before = old[row.name], before.pid == row.pid {
                row.memoryDelta = before.memoryDelta
                if row.memoryBytes == nil { row.memoryBytes = before.memoryBytes }
            }
            return row
        }
    }

    /// What an event from the log changes: the state and its start, the last freeze or thaw
    /// time; an app that ended leaves the table. Returns false when the event names an app
    /// the table lacks and it is not one that ended (a snapshot is then needed). Events older
    /// than what a row shows (read after a snapshot that had them) change nothing.
    mutating func apply(_ event: Event) -> Bool {
        guard let i = rows.firstIndex(where: { $0.name == event.app }) else { return event.to?.isEnded ?? true }
        guard event.monotonicNanos >= rows[i].sinceMonotonicNanos else { return true }
        if let to = event.to {
            if to.isEnded {
                rows.remove(at: i)
                return true
            }
            if to != rows[i].state {
                rows[i].state = to
                rows[i].sinceMonotonicNanos = event.monotonicNanos
            }
        }
        if let pid = event.pid, event.kind == .spawn { rows[i].pid = pid }
        if event.kind == .freeze, let d = event.durationNanos { rows[i].lastFreezeNanos = d }
        if event.kind == .thaw, let d = event.durationNanos { rows[i].lastThawNanos = d }
        return true
    }

    mutating func setMemory(_ name: String, bytes: UInt64) {
        guard let i = rows.firstIndex(where: { $0.name == name }) else { return }
        if let before = rows[i].memoryBytes { rows[i].memoryDelta = Int64(bitPattern: bytes &- before) }
        rows[i].memoryBytes = bytes
    }
}

// In an extension, so that the memberwise initializer (with the defaults above) stays.
extension TopModel.Row {
    init(_ s: AppSummary) {
        self.init(
            name: s.name, pid: s.pid, state: s.state, sinceMonotonicNanos: s.sinceMonotonicNanos, backend: s.backend,
            priority: s.priority, memoryBytes: s.memoryBytes, lastFreezeNanos: s.lastFreezeNanos, lastThawNanos: s.lastThawNanos,
            status: (s.state.isEnded ? s.ending : s.statusText) ?? "", cgroup: s.cgroup)
    }
}

/// A column of the table, in its order; each can be the sort key.
enum TopColumn: Int, CaseIterable, Equatable {
    case name, state, since, memory, lastFreeze, lastThaw, backend, priority, status

    var title: String {
        switch self {
        case .name: "NAME"
        case .state: "STATE"
        case .since: "SINCE"
        case .memory: "MEMORY"
        case .lastFreeze: "FREEZE"
        case .lastThaw: "THAW"
        case .backend: "BACKEND"
        case .priority: "PRIORITY"
        case .status: "STATUS"
        }
    }

    /// Negative, zero or positive as `a` comes before, with or after `b` ascending. SINCE
    /// ascending is the shortest time in state first; a missing figure sorts first.
    func compare(_ a: TopModel.Row, _ b: TopModel.Row) -> Int {
        func cmp<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : x > y ? 1 : 0 }
        func cmp(_ x: UInt64?, _ y: UInt64?) -> Int { cmp(x.map { Int128($0) } ?? -1, y.map { Int128($0) } ?? -1) }
        switch self {
        case .name: return cmp(a.name, b.name)
        case .state: return cmp(Self.stateRank(a.state), Self.stateRank(b.state))
        case .since: return cmp(b.sinceMonotonicNanos, a.sinceMonotonicNanos)
        case .memory: return cmp(a.memoryBytes, b.memoryBytes)
        case .lastFreeze: return cmp(a.lastFreezeNanos, b.lastFreezeNanos)
        case .lastThaw: return cmp(a.lastThawNanos, b.lastThawNanos)
        case .backend: return cmp(a.backend.rawValue, b.backend.rawValue)
        case .priority: return cmp(a.priority, b.priority)
        case .status: return cmp(a.status, b.status)
        }
    }

    /// The lifecycle's order: launching, active, background, suspended, then the ended ones.
    static func stateRank(_ s: AppState) -> Int { AppState.allCases.firstIndex(of: s) ?? 0 }
}

/// What a key asks the daemon to do to the selected app: the same requests as the commands.
enum TopAction: String, Equatable {
    case suspend, resume, switchTo = "switch to", terminate, evict

    /// The request `icebox suspend NAME` (and the others) sends: the app's own grace, the
    /// default terminate timeout.
    func request(_ name: String) -> ControlRequest {
        switch self {
        case .suspend: .suspend(names: [name], graceNanos: nil)
        case .resume: .resume(names: [name], waitReady: false)
        case .switchTo: .switchTo(name: name)
        case .terminate: .terminate(names: [name], timeoutNanos: nil)
        case .evict: .evict(names: [name])
        }
    }
}
