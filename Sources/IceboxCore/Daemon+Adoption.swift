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
        let cgroup = record.cgroup.map { Cgroup2(path: $0) }
        let freezerV1 = record.freezerV1.map { Cgroup1Freezer(path: $0) }
        let notifyPath = config.paths.notifySocket(record.name)
        guard let notifyFD = try? UnixSocket.bindNotify(path: notifyPath) else {
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
            lifecycle: AppLifecycle(adopting: record, now: Clock.monotonicNanos()), handle: handle, cgroup: cgroup,
            freezerV1: freezerV1, notifyFD: notifyFD, notifyPath: notifyPath)
        app.memoryV1 = record.memoryV1.map { MemoryCgroupV1(path: $0) }
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
    func recordEndedWhileAway(_ saved: AppRecord) {
        var record = saved
        if let path = record.cgroup {
            let cg = Cgroup2(path: path)
            if cg.exists {
                if (try? cg.events().populated) == true {
                    try? cg.kill()
                    _ = try? cg.waitForEvents(until: Clock.monotonicNanos() + 5_000_000_000) { !$0.populated }
                }
                try? cg.remove()
            }
        }
        if let path = record.freezerV1 {
            let v1 = Cgroup1Freezer(path: path)
            for pid in v1.procs() { kill(pid, SIGKILL) }
            try? FileIO.write(path + "/freezer.state", "THAWED")
            try? v1.remove()
        }
        if let path = record.memoryV1 { try? MemoryCgroupV1(path: path).remove() }
        unlink(config.paths.notifySocket(record.name))
        record.killedWhileSuspended = saved.state == .suspended
        record.state = .exited
        record.ending = "ended while no daemon ran (exit status unknown)"
        record.sinceWall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        ended[record.name] = record
        log(
            Event(
                app: record.name, pid: record.pid, kind: .exit, from: saved.state, to: .exited,
                detail: "found ended after a daemon restart (was \(saved.state.rawValue)); its cgroup was removed"))
    }

    /// Puts the app in the state the kernel says it is in, finishing what was half done, and
    /// gives it a lifecycle that starts there (a grace under way keeps its recorded deadline).
    func reconcile(_ app: LiveApp, saved: AppRecord) -> String {
        let now = Clock.monotonicNanos()
        let deadline = now.saturatingAdd(config.freezeTimeoutNanos)
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
        switch saved.state {
        case .suspended, .background:
            if frozen {
                become(.suspended, since: saved.sinceMonotonicNanos)
                outcome = "frozen (confirmed)"
            } else if started {
                // A freeze was under way when the last daemon died: complete it.
                if let report = try? app.freezer.freeze(deadline: deadline) {
                    record.lastFreezeNanos = report.durationNanos
                    become(.suspended)
                    outcome = "a freeze under way was completed in \(DurationText.format(report.durationNanos))"
                } else {
                    _ = try? app.freezer.thaw(deadline: deadline)
                    become(.active)
                    outcome = "a freeze under way could not be completed: rolled back, the app runs"
                }
            } else if saved.state == .suspended {
                // A thaw was under way: the app runs; finish the job.
                _ = try? app.freezer.thaw(deadline: deadline)
                become(.active)
                outcome = "a thaw under way was completed: active"
            } else {
                // In its grace period: it runs to the recorded deadline.
                let due = saved.graceDeadlineNanos ?? now
                become(.background, since: saved.sinceMonotonicNanos)
                outcome = due > now ? "grace period resumed, \(DurationText.format(due - now)) left" : "grace period over: freezing now"
            }
        case .active, .launching:
            if started || frozen {
                _ = try? app.freezer.thaw(deadline: deadline)
                become(.active)
                outcome = "found frozen without a suspend: thawed"
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
        if probe { startProbe(app) }
        return outcome
    }
}
