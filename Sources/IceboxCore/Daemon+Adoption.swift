import Glibc
import IceboxSystem

/// Taking over after a daemon that died (SIGKILL, a crash) or stopped leaving its apps: each
/// app in the registry is checked to be the very process it was (start time and cgroup, not
/// just the pid number), held again through a new pidfd, and put back in the state the
/// kernel says it is in. A freeze or thaw that was half done is completed; a grace period
/// under way runs to its recorded deadline.
extension Daemon {
    func adopt(_ saved: AppRecord) {
        var record = saved
        guard isSameProcess(record), let handle = try? ProcessHandle(adopting: record.pid) else {
            recordEndedWhileAway(record)
            return
        }
        let cgroups = AppCgroups.adopt(v2: record.cgroup, freezerV1: record.freezerV1, memoryV1: record.memoryV1)
        let notifyPath = record.notifySocket ?? config.paths.notifySocket(record.name)
        guard
            let notifyFD = try? AppNotifySocket.bind(
                app: record.name, paths: config.paths, runAs: record.options.runAs, existing: notifyPath
            ).fd
        else {
            log(
                Event(
                    app: record.name, pid: record.pid, kind: .error,
                    detail: "cannot re-adopt: the notify socket \(notifyPath) cannot be bound"))
            record.state = .exited
            record.ending = "left running: not re-adopted (notify socket)"
            ended[record.name] = record
            return
        }
        let app = LiveApp(
            lifecycle: AppLifecycle(adopting: record, now: Clock.monotonicNanos()), handle: handle, cgroups: cgroups,
            notifyFD: notifyFD, notifyPath: notifyPath)
        do {
            try watch(handle.pidfd, .pidfd(app.name))
            try watch(notifyFD, .notify(app.name))
        } catch {
            close(notifyFD)
            return
        }
        apps[app.name] = app
        let outcome = reconcile(app, saved: saved)
        log(
            Event(
                app: app.name, pid: app.pid, kind: .adopt, to: app.record.state,
                detail: "re-adopted after a daemon restart (pid \(app.pid), was \(saved.state.rawValue)): \(outcome)"))
    }

    /// The pid is the app's own process: same start time, and (if it had one) same cgroup.
    func isSameProcess(_ record: AppRecord) -> Bool {
        guard record.startTicks != 0, let stat = ProcFS.stat(pid: record.pid), stat.startTimeTicks == record.startTicks,
            stat.state != "Z", stat.state != "X"
        else { return false }
        guard let cgroup = record.cgroup, let unified = facts.mounts.unified else { return true }
        guard let text = try? FileIO.read("/proc/\(record.pid)/cgroup"), let relative = ProcFS.unifiedCgroup(in: text) else {
            return false
        }
        return unified + relative == cgroup
    }

    /// The app ended while no daemon ran: record what can be known and clear its leftovers.
    /// This runs once, as the daemon starts and before it serves anyone, so the removal of
    /// what is left may wait (bounded) here.
    func recordEndedWhileAway(_ saved: AppRecord) {
        var record = saved
        let cgroups = AppCgroups.adopt(v2: record.cgroup, freezerV1: record.freezerV1, memoryV1: record.memoryV1)
        let start = Clock.monotonicNanos()
        var progress = cgroups.beginDestroy(now: start, deadline: start.saturatingAdd(5_000_000_000))
        while case .waiting(let at, let watch) = progress {
            let now = Clock.monotonicNanos()
            if at > now { _ = try? Poll.wait(watch ?? -1, events: Int16(POLLPRI), timeoutNanos: at - now) }
            progress = cgroups.stepDestroy(now: Clock.monotonicNanos())
        }
        var removed = "its cgroup was removed"
        if case .failed(let problems) = progress { removed = "its cgroup could not be removed: " + problems.joined(separator: "; ") }
        AppNotifySocket.remove(record.notifySocket ?? config.paths.notifySocket(record.name))
        record.killedWhileSuspended = saved.state == .suspended
        record.state = .exited
        record.ending = "ended while no daemon ran (exit status unknown)"
        record.sinceWall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        ended[record.name] = record
        log(
            Event(
                app: record.name, pid: record.pid, kind: .exit, from: saved.state, to: .exited,
                detail: "found ended after a daemon restart (was \(saved.state.rawValue)); \(removed)"))
    }

    /// Puts the app in the state the kernel says it is in and gives it a lifecycle that starts
    /// there. What was half done is finished through the loop, never waited for here: a
    /// freeze under way becomes a grace that is over (the first turn of the loop freezes), a
    /// thaw under way is requested again. A grace under way keeps its recorded deadline.
    func reconcile(_ app: LiveApp, saved: AppRecord) -> String {
        let now = Clock.monotonicNanos()
        let frozen = app.freezer.isFrozen()
        let started = app.freezer.freezeStarted()
        var record = saved
        func become(_ state: AppState, since: UInt64 = Clock.monotonicNanos()) {
            record.state = state
            record.sinceMonotonicNanos = since
            record.sinceWall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        }
        var outcome: String
        var probe = false
        var thaw = false
        switch saved.state {
        case .suspended, .background:
            if frozen {
                become(.suspended, since: saved.sinceMonotonicNanos)
                outcome = "frozen (confirmed)"
            } else if started {
                // A freeze was under way when the last daemon died: complete it now.
                become(.background)
                record.graceStartNanos = saved.graceStartNanos ?? now
                record.graceDeadlineNanos = now
                record.graceCapNanos = now
                outcome = "a freeze under way: completing it"
            } else if saved.state == .suspended {
                // A thaw was under way: the app runs; finish the job.
                thaw = true
                become(.active)
                outcome = "a thaw under way: completing it; active"
            } else {
                // In its grace period: it runs to the recorded deadline.
                let due = saved.graceDeadlineNanos ?? now
                become(.background, since: saved.sinceMonotonicNanos)
                outcome = due > now ? "grace period resumed, \(DurationText.format(due - now)) left" : "grace period over: freezing now"
            }
        case .active, .launching:
            if started || frozen {
                thaw = true
                become(.active)
                outcome = "found frozen without a suspend: thawing it"
            } else if saved.state == .launching {
                outcome = "still launching; waiting for it to be ready"
                if case .notify = saved.options.ready {} else { probe = true }
            } else {
                outcome = "running"
            }
        default:
            outcome = saved.state.rawValue
        }
        var lifecycle = AppLifecycle(adopting: record, now: now)
        lifecycle.freezeTimeout = config.freezeTimeoutNanos
        app.lifecycle = lifecycle
        saveRegistry(app.name)
        if thaw { startOperation(app, .thaw, deadline: now.saturatingAdd(config.freezeTimeoutNanos), aside: "after a daemon restart") }
        if probe { startProbe(app) }
        return outcome
    }
}
