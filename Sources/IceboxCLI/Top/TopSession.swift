import Glibc
import IceboxCore
import IceboxSystem

/// The loop of `icebox top`: one poll(2) on the keyboard, the event log's inotify descriptor,
/// a signalfd (SIGWINCH; SIGINT/SIGTERM/SIGHUP to leave), the connections of requests in
/// flight and the next tick's deadline; nothing sleeps. The daemon is asked for a `ps --brief`
/// snapshot at start and when an event names an app the table lacks, and for the policy at
/// start and on policy events; the rest comes from the event log or is read here (memory from
/// the cgroups, PSI), so watching costs the daemon next to nothing.
final class TopSession {
    final class InFlight {  // a request sent and not fully answered
        enum Purpose: Equatable {
            case snapshot, policy
            case action(TopAction, String)
        }
        let connection: DaemonConnection
        let purpose: Purpose
        let deadline: UInt64
        var lines: [String] = []
        var warnings: [String] = []

        init(connection: DaemonConnection, purpose: Purpose, deadline: UInt64) {
            (self.connection, self.purpose, self.deadline) = (connection, purpose, deadline)
        }
    }

    /// How often the clock-driven parts (time in state) are redrawn, and memory and PSI read.
    static let tickNanos: UInt64 = 1_000_000_000
    static let sampleNanos: UInt64 = 2_000_000_000
    /// How long a request may go unanswered before it is given up (a terminate adds its own timeout).
    static let requestBudgetNanos: UInt64 = 30_000_000_000

    var model = TopModel()
    let terminal: TopTerminal
    let color: Bool
    private var client: DaemonClient
    private let follower: FileFollower
    private let mounts: CgroupMounts
    private let pressurePath: String?
    private var inFlight: [InFlight] = []
    private var snapshotWanted = true
    /// Asked for once a snapshot came (no daemon, no policy to ask for), and on policy events.
    private var policyWanted = false
    private var memoryCounters: [String: (pid: Int32, path: String?)] = [:]  // found once per main process
    private var pendingInput: [UInt8] = []

    init(terminal: TopTerminal, color: Bool, environment: (String) -> String?) throws(IceboxError) {
        self.terminal = terminal
        self.color = color
        // Never starts a daemon: watching needs none; an app launched later starts one, and
        // its first event brings the snapshot.
        client = DaemonClient(environment: environment, autostartFlagOff: true, cgroupRoot: nil)
        follower = try FileFollower(path: client.paths.eventLog, startAtEnd: true, follow: true, missingIsEmpty: true)
        mounts = CgroupMounts.read()
        pressurePath = Self.discoverPressure(cgroupRoot: environment("ICEBOX_CGROUP_ROOT"))
        loadLatestEvents()
        if let refused = follower.pollingBecause { model.report("events are looked for every second: \(refused)", error: true) }
    }

    /// Runs until q, Ctrl-C, a stop signal or the terminal's hang-up; returns the exit code
    /// (0, or 128 + the signal as a shell reports it; Ctrl-C counts as SIGINT, 130).
    func run() throws(IceboxError) -> Int32 {
        let stopSignals = [SIGINT, SIGTERM, SIGHUP]
        Signals.block(stopSignals + [SIGWINCH, SIGPIPE])
        let signalFD: Int32
        do { signalFD = try Signals.signalFD(stopSignals + [SIGWINCH]) } catch { throw IceboxError("set up signals", error) }
        defer { close(signalFD) }
        try terminal.enter()
        defer { terminal.leave() }
        var size = terminal.size
        var nextTick = Clock.monotonicNanos()
        var nextSample = nextTick
        var force = true
        while true {
            let now = Clock.monotonicNanos()
            if now >= nextSample {
                sample()
                nextSample = now.saturatingAdd(Self.sampleNanos)
            }
            if now >= nextTick { nextTick = now.saturatingAdd(Self.tickNanos) }
            startWantedRequests()
            expireRequests(now: now)
            terminal.draw(
                TopRender.lines(model, width: size.columns, height: size.rows, color: color, now: Clock.monotonicNanos()), force: force)
            force = false

            var fds = ([terminal.input, signalFD, follower.notificationDescriptor ?? -1] + inFlight.map(\.connection.fd)).map {
                pollfd(fd: $0, events: Int16(POLLIN), revents: 0)
            }
            let deadline = inFlight.map(\.deadline).reduce(min(nextTick, nextSample), min)
            do { _ = try Poll.wait(&fds, until: deadline) } catch { throw IceboxError("top: wait", error) }

            if fds[1].revents != 0 {
                for signal in Signals.drain(signalFD: signalFD) {
                    guard signal == SIGWINCH else { return 128 + signal }
                    size = terminal.size
                    force = true
                }
            }
            if fds[0].revents != 0 {
                guard let bytes = terminal.readInput() else { return 128 + SIGHUP }  // the terminal went away
                let (keys, rest) = TopKeys.decode(pendingInput + bytes)
                pendingInput = rest
                for key in keys {
                    for effect in TopKeys.reduce(&model, key, page: max(1, size.rows - 12)) {
                        switch effect {
                        case .quit: return key == .interrupt ? 128 + SIGINT : 0
                        case .send(let action, let name): start(.action(action, name), action.request(name))
                        }
                    }
                }
            }
            // A follower that polls (inotify refused) looks at every wake-up, at least once a tick.
            if fds[2].revents != 0 || follower.polls {
                let following = try follower.takeNotifications { self.take(eventLine: $0) }
                if !following { model.report("the event log was removed; events are no longer followed", error: true) }
            }
            for (i, request) in zip(fds.indices.dropFirst(3), inFlight) where fds[i].revents != 0 {
                read(request)
            }
            inFlight.removeAll { $0.connection.ended || finished.contains(ObjectIdentifier($0)) }
            finished = []
        }
    }

    private var finished: Set<ObjectIdentifier> = []

    // MARK: events

    /// The last events of the log for the bottom pane (not applied to rows: the snapshot is newer).
    private func loadLatestEvents() {
        guard follower.descriptor >= 0 else { return }
        var newestFirst: [String] = []
        _ = LogLines.backward(fd: follower.descriptor, end: follower.startOffset) { line in
            if let event = JSONLines.decode(Event.self, String(decoding: line, as: UTF8.self)) {
                newestFirst.append(EventText.line(event))
            }
            return newestFirst.count < TopModel.eventsKept
        }
        for line in newestFirst.reversed() { model.addEvent(line) }
    }

    func take(eventLine line: String) {
        guard let event = JSONLines.decode(Event.self, line) else { return }
        model.addEvent(EventText.line(event))
        if !model.apply(event) { snapshotWanted = true }
        if event.kind == .policy { policyWanted = true }
    }

    // MARK: requests

    private func startWantedRequests() {
        let busy = inFlight.map(\.purpose)
        if snapshotWanted, !busy.contains(.snapshot) {
            snapshotWanted = false
            start(.snapshot, .ps(all: false, brief: true))
        }
        if policyWanted, !busy.contains(.policy) {
            policyWanted = false
            start(.policy, .policy)
        }
    }

    /// Sends `request` on a connection of its own; the replies are read as they come.
    private func start(_ purpose: InFlight.Purpose, _ request: ControlRequest) {
        let line = DaemonConnection.Line(request)
        do {
            let connection = try client.session.connect()
            try connection.send(line)
            let deadline = DaemonConnection.deadline(for: request, base: Self.requestBudgetNanos)
            inFlight.append(InFlight(connection: connection, purpose: purpose, deadline: deadline))
        } catch {
            fail(purpose, error.code == .unavailable ? "no icebox daemon is running yet; apps show up when one starts" : "\(error)")
        }
    }

    private func read(_ request: InFlight) {
        do {
            let open = try request.connection.readAvailable()
            while let reply = request.connection.bufferedReply() {
                switch reply.kind {
                case .line: if let t = reply.text { request.lines.append(t) }
                case .warning: if let t = reply.text { request.warnings.append(t) }
                case .event: break  // the event log brings them
                case .data:
                    if let summaries = reply.summaries {
                        model.take(snapshot: summaries)
                        clearReachError()
                        // The daemon may not have run when top started: ask for its policy now.
                        if model.policy == nil { policyWanted = true }
                        if model.selected == nil { model.selected = model.visibleRows.first?.name }
                        sample()
                    }
                    if let policy = reply.policy {
                        model.policy = policy
                        clearReachError()
                    }
                case .done, .exit:
                    finish(request, code: reply.code ?? 1)
                    return
                }
            }
            if !open { fail(request.purpose, "the icebox daemon closed the connection before it answered") }
        } catch {
            fail(request.purpose, "\(error)")
        }
        if request.connection.ended { finished.insert(ObjectIdentifier(request)) }
    }

    /// A snapshot or the policy came: an earlier failure to get them is over.
    private func clearReachError() {
        if model.messageIsError, let m = model.message, m.hasPrefix(Self.listFailure) || m.hasPrefix(Self.policyFailure) {
            model.message = nil
        }
    }

    static let listFailure = "cannot list the apps: "
    static let policyFailure = "cannot read the policy: "

    private func finish(_ request: InFlight, code: Int32) {
        finished.insert(ObjectIdentifier(request))
        guard case .action(let action, let name) = request.purpose else {
            if code != 0 { fail(request.purpose, request.warnings.last ?? "exit \(code)") }
            return
        }
        model.pending -= 1
        if code == 0 {
            model.report(request.lines.last.map(Self.oneLine) ?? "\(action.rawValue) \(name): done", error: false)
        } else {
            let why = request.warnings.last.map(Self.oneLine) ?? "failed (exit \(code))"
            model.report("\(action.rawValue) \(name): \(why.replacingPrefix("icebox: "))", error: true)
        }
    }

    private func fail(_ purpose: InFlight.Purpose, _ why: String) {
        switch purpose {
        case .snapshot: model.report(Self.listFailure + why, error: true)
        case .policy: model.report(Self.policyFailure + why, error: true)
        case .action(let action, let name):
            model.pending -= 1
            model.report("\(action.rawValue) \(name): \(why)", error: true)
        }
    }

    private func expireRequests(now: UInt64) {
        for request in inFlight where now >= request.deadline && !finished.contains(ObjectIdentifier(request)) {
            fail(request.purpose, "no answer from the icebox daemon in time; its event log says what it did")
            finished.insert(ObjectIdentifier(request))
        }
        inFlight.removeAll { finished.contains(ObjectIdentifier($0)) }
        finished = []
    }

    static func oneLine(_ text: String) -> String {
        text.split(separator: "\n").last.map(String.init) ?? text
    }

    // MARK: memory and pressure

    private func sample() {  // each app's memory from its cgroup, and the host's pressure
        for row in model.rows {
            let known = memoryCounters[row.name]
            let path = known?.pid == row.pid ? known?.path : counterPath(for: row)
            memoryCounters[row.name] = (row.pid, path)
            if let path, let bytes = FileIO.readCounter(path) { model.setMemory(row.name, bytes: bytes) }
        }
        let names = Set(model.rows.map(\.name))
        memoryCounters = memoryCounters.filter { names.contains($0.key) }
        if let pressurePath, let text = try? FileIO.read(pressurePath) { model.pressure = Self.pressureText(text) }
    }

    /// The app's memory counter: its v1 memory cgroup's usage (found from its main process's
    /// /proc/PID/cgroup) on a hybrid host, else its v2 cgroup's memory.current.
    private func counterPath(for row: TopModel.Row) -> String? {
        let v1 = mounts.memoryV1Mount.flatMap { row.pid > 0 ? CgroupMembership.path(of: row.pid, controller: "memory", mount: $0) : nil }
        return AppMemory.counters(v2Cgroup: row.cgroup, v1MemoryCgroup: v1).first { FileIO.exists($0.path) }?.path
    }

    /// Where this host reports memory pressure: /proc/pressure/memory (Linux 4.20 with PSI),
    /// else the apps' cgroup root's memory.pressure; nil without PSI.
    static func discoverPressure(cgroupRoot: String?) -> String? {
        if (try? FileIO.read("/proc/pressure/memory")) != nil { return "/proc/pressure/memory" }
        let root = cgroupRoot.flatMap { $0.isEmpty ? nil : $0 } ?? HostFacts.discover(cgroupRootOverride: nil).cgroupRoot
        guard let root, (try? FileIO.read(root + "/memory.pressure")) != nil else { return nil }
        return root + "/memory.pressure"
    }

    /// "some avg10=0.12 …\nfull avg10=0.00 …" → "some 0.12% full 0.00% (10 s)".
    static func pressureText(_ text: String) -> String? {
        let parts = text.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(separator: " ")
            guard let kind = fields.first, let avg = fields.first(where: { $0.hasPrefix("avg10=") }) else { return nil }
            return "\(kind) \(avg.dropFirst(6))%"
        }
        return parts.isEmpty ? nil : parts.joined(separator: " ") + " (10 s)"
    }
}
