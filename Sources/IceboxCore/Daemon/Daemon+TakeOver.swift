import Glibc
import IceboxSystem

/// Taking over after a daemon that died or stopped leaving its apps: each recorded app is
/// checked to be the very process it was (start time and cgroup), held again by a new pidfd,
/// and put back in the state the kernel says it is in; what was half done is completed.
extension Daemon {
    func takeOver(_ record: AppRecord) {
        // `icebox adopt` cut short (no move time yet): undone, not taken over half moved.
        if record.isAdopted && record.adoptMoveNanos == nil { return undoInterruptedAdoption(record) }
        // A pidfd refused is a process gone since the record: recorded as ended while away.
        guard isSameProcess(record), let handle = try? ProcessHandle(adopting: record.pid) else {
            return recordEndedWhileAway(record)
        }
        if let why = holdsThisDaemon(record) { return leaveUnadopted(record, why: why) }
        let cgroups = AppCgroups.adopt(v2: record.cgroup, freezerV1: record.freezerV1, memoryV1: record.memoryV1)
        let app: LiveApp
        switch attach(record, lifecycle: AppLifecycle(adopting: record, now: .read()), handle: handle, cgroups: cgroups) {
        case .success(let attached): app = attached
        case .failure(let why): return leaveUnadopted(record, why: why.message)
        }
        let outcome = reconcile(app, saved: record)
        log(
            Event(
                app: app.name, pid: app.pid, kind: .adopt, to: app.record.state,
                detail: "re-adopted after a daemon restart (pid \(app.pid), was \(record.state.rawValue)): \(outcome)", at: .read()))
    }

    /// Makes a running process an app of this daemon again (re-adopted, or restored from disk):
    /// its notify socket bound again, its pidfd watched. On failure nothing is left open.
    func attach(
        _ record: AppRecord, lifecycle: AppLifecycle, handle: ProcessHandle, cgroups: AppCgroups
    ) -> Result<LiveApp, AttachFailure> {
        let notifyPath = notifySocketPath(of: record)
        let notify: NotifyChannel
        if notifyPath == config.paths.sharedNotifySocket {
            guard (try? sharedNotifySocket()) != nil else {  // why not: said in the failure
                return .failure(AttachFailure(message: "the shared notify socket \(notifyPath) cannot be bound"))
            }
            notify = .shared(path: notifyPath)
        } else {
            guard
                let notifyFD = try? AppNotifySocket.bind(  // why not: said in the failure
                    app: record.name, paths: config.paths, runAs: record.options.runAs, existing: notifyPath
                ).fd
            else {
                return .failure(AttachFailure(message: "the notify socket \(notifyPath) cannot be bound"))
            }
            notify = .own(fd: notifyFD, path: notifyPath)
        }
        let app = LiveApp(lifecycle: lifecycle, handle: handle, cgroups: cgroups, notify: notify)
        do {
            try watch(handle.pidfd, .pidfd(app.name))
            if let fd = notify.ownFD { try watch(fd, .notify(app.name)) }
        } catch {
            unwatch(handle.pidfd)
            if let fd = notify.ownFD { close(fd) }
            return .failure(AttachFailure(message: "\(error)"))
        }
        apps[app.name] = app
        appDeadlines.add(app)
        rebalanceDescriptors(adding: app)
        return .success(app)
    }

    struct AttachFailure: Error { var message: String }

    /// An app that runs but cannot be supervised again: logged and recorded as left running.
    func leaveUnadopted(_ saved: AppRecord, why: String) {
        var record = saved
        log(.error, app: record.name, pid: record.pid, "cannot re-adopt: \(why); left running")
        record.state = .exited
        record.ending = "left running: not re-adopted (\(why))"
        ended[record.name] = record
    }

    /// Why an app holding this daemon must not be adopted (its freeze would freeze the daemon).
    func holdsThisDaemon(_ record: AppRecord) -> String? {
        let own = getpid()
        if record.pid == own { return "its main process is this daemon (pid \(own))" }
        for path in [record.cgroup, record.freezerV1].compactMap({ $0 }) where CgroupTree.processes(path).contains(own) {
            return "its cgroup \(path) holds this daemon (pid \(own)): freezing it would freeze the daemon"
        }
        return nil
    }

    /// The pid is the app's own process: same start time, and inside its v2 cgroup (if any).
    func isSameProcess(_ record: AppRecord) -> Bool {
        guard record.startTicks != 0, let stat = ProcFS.stat(pid: record.pid), stat.startTimeTicks == record.startTicks,
            stat.state != "Z", stat.state != "X"
        else { return false }
        guard let cgroup = record.cgroup, let unified = facts.mounts.unifiedMount else { return true }
        guard let now = CgroupMembership.path(of: record.pid, mount: unified) else { return false }
        return CgroupMembership.isWithin(now, cgroup)
    }

    /// The app ended while no daemon ran: record what can be known and clear its leftovers.
    func recordEndedWhileAway(_ saved: AppRecord, ending: String = "ended while no daemon ran (exit status unknown)") {
        var record = saved
        let removed = clearLeftovers(AppCgroups.adopt(v2: record.cgroup, freezerV1: record.freezerV1, memoryV1: record.memoryV1))
        removeOwnNotifySocket(of: record)
        record.killedWhileSuspended = saved.state == .suspended
        // One told to go (a terminate or eviction under way) is recorded as what it was told.
        record.state = saved.endIntent == .evict ? .evicted : saved.endIntent == .terminate ? .terminated : .exited
        record.endIntent = nil
        record.endStartNanos = nil
        record.killDeadlineNanos = nil
        record.ending = ending
        record.sinceWall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        ended[record.name] = record
        log(
            Event(
                app: record.name, pid: record.pid == 0 ? nil : record.pid, kind: .exit, from: saved.state, to: record.state,
                detail: "found ended after a daemon restart (was \(saved.state.rawValue)): \(ending); \(removed)", at: .read()))
    }

    /// Kills what is left in the cgroups and removes them, waiting (bounded): only at start.
    func clearLeftovers(_ cgroups: AppCgroups) -> String {
        let start = Clock.monotonicNanos()
        let first = cgroups.beginDestroy(now: start, deadline: start.saturatingAdd(CgroupRemoval.timeoutNanos))
        let last = Stepping.run(from: first, step: { cgroups.stepDestroy(now: $0) })
        return CgroupRemoval.End(last)?.description ?? "its cgroup was removed"
    }

    // MARK: Half-done launches and apps without a record

    /// A launch the last daemon recorded but did not see through (no pid yet): the app is found
    /// by its marks and adopted, or its cgroups removed and the launch recorded as interrupted.
    /// Processes without the marks belong to another daemon sharing the root: left alone.
    func finishInterruptedLaunch(_ saved: AppRecord) {
        let marks = appMarks(saved.name, ownSocket: notifySocketPath(of: saved))
        let paths = [saved.cgroup, saved.freezerV1, saved.memoryV1].compactMap { $0 }
        let inside = Array(Set(paths.flatMap { CgroupTree.processes($0) }))
        let ours = inside.filter(marks.carried(by:))
        if let main = AppMarks.mainProcess(among: ours) {
            var record = saved
            record.pid = main
            record.startTicks = ProcFS.stat(pid: main)?.startTimeTicks ?? 0
            // The record was written before the launch chose the app's notify socket.
            noteSharedSocket(of: main, in: &record)
            return takeOver(record)
        }
        if ours.isEmpty && !inside.isEmpty {
            removeOwnNotifySocket(of: saved)  // the launch named it: no app of ours will use it
            var record = saved
            record.state = .exited
            record.ending = "launch interrupted by a daemon restart; never started"
            ended[record.name] = record
            log(
                .error, app: saved.name, pid: nil,
                "an interrupted launch's cgroup holds \(inside.count) process(es) without this daemon's marks (another daemon's?): left alone"
            )
            return
        }
        recordEndedWhileAway(saved, ending: "launch interrupted by a daemon restart" + (ours.isEmpty ? "; never started" : ""))
    }

    /// Every cgroup under icebox's roots that no app claims: one holding marked processes is
    /// adopted (rebuilt from the kernel), or killed without a main process; an empty one is
    /// removed, but only while no other daemon shares the root (`holdCgroupRoot`).
    func adoptUnrecordedCgroups() {
        let ownsRoot = holdCgroupRoot()
        var claimed = Set(apps.values.flatMap { [$0.cgroups.v2Path, $0.cgroups.freezerV1Path, $0.cgroups.memoryV1Path] }.compactMap { $0 })
        let roots = [facts.cgroup2Usable ? facts.cgroupRoot : nil, facts.freezerV1Root, facts.memoryV1Root].compactMap { $0 }
        for root in roots {
            // A root that cannot be listed holds no leftovers we could name.
            for name in (try? FileIO.listDirectories(root)) ?? [] {
                let path = root + "/" + name
                if claimed.contains(path) { continue }
                let inside = CgroupTree.processes(path)
                // A cgroup holding this daemon is never adopted, killed or removed by it.
                if inside.contains(getpid()) { continue }
                if inside.isEmpty {
                    if ownsRoot && CgroupTree.remove(path).isEmpty {
                        log(.daemon, app: name, pid: nil, "removed an empty leftover cgroup \(path) (no app claims it)")
                    }
                    continue
                }
                let marks = appMarks(name, ownSocket: config.paths.notifySocket(name))
                let ours = inside.filter(marks.carried(by:))
                if ours.isEmpty { continue }  // another daemon's (same root, its own socket)
                // A directory whose name is not an app name is not one of ours to adopt.
                if apps[name] == nil, (try? AppName.validate(name)) != nil, let main = AppMarks.mainProcess(among: ours) {
                    takeOver(rebuiltRecord(name: name, main: main))
                    if let app = apps[name] {
                        claimed.formUnion([app.cgroups.v2Path, app.cgroups.freezerV1Path, app.cgroups.memoryV1Path].compactMap { $0 })
                        log(
                            Event(
                                app: name, pid: main, kind: .adopt, to: app.record.state,
                                detail:
                                    "found by its marks without a registry record (cgroup \(path)); adopted as \(app.record.backend.rawValue)",
                                at: .read()
                            ))
                        continue
                    }
                }
                for pid in ours { kill(pid, SIGKILL) }
                log(
                    .error, app: name, pid: nil,
                    "\(ours.count) process(es) with this app's marks in \(path) but no record and no main process (or the name is taken): killed"
                )
            }
        }
    }

    /// A record for an app found by its marks, from what the kernel says: its backend from its
    /// cgroups, its state from its freezer (a freeze under way: background with the grace
    /// over, completed), its command and environment from /proc. Never thawed on a guess.
    func rebuiltRecord(name: String, main: pid_t) -> AppRecord {
        let v2 = facts.cgroup2Usable ? facts.cgroupRoot.map { $0 + "/" + name }.flatMap { FileIO.isDirectory($0) ? $0 : nil } : nil
        let freezerV1 = facts.freezerV1Root.map { $0 + "/" + name }.flatMap { FileIO.isDirectory($0) ? $0 : nil }
        let memoryV1 = facts.memoryV1Root.map { $0 + "/" + name }.flatMap { FileIO.isDirectory($0) ? $0 : nil }
        let members = CgroupTree.processes(v2 ?? freezerV1 ?? memoryV1 ?? "")
        let stopped = !members.isEmpty && members.allSatisfy { ProcFS.stat(pid: $0)?.state == "T" }
        let backend: BackendKind = freezerV1 != nil ? .cgroup1 : stopped || v2 == nil ? .signal : .cgroup2
        let cgroups = AppCgroups.adopt(v2: v2, freezerV1: freezerV1, memoryV1: memoryV1)
        let freezer = cgroups.freezer(backend: backend) { members }
        let state: AppState = freezer.isFrozen() ? .suspended : freezer.freezeStarted() ? .background : .active
        cgroups.close()
        var options = LaunchOptions(name: name, command: AppMarks.commandLine(of: main))
        options.environment = (AppMarks.environment(of: main) ?? []).filter {
            !$0.hasPrefix("ICEBOX_") && !$0.hasPrefix("NOTIFY_SOCKET=") && !$0.hasPrefix("WATCHDOG_")
        }
        let now = Clock.monotonicNanos()
        let wall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        var record = AppRecord(
            name: name, options: options, pid: main, state: state, sinceMonotonicNanos: now, sinceWall: wall, launchedWall: wall,
            backend: backend, cgroup: v2, freezerV1: freezerV1)
        record.memoryV1 = memoryV1
        record.startTicks = ProcFS.stat(pid: main)?.startTimeTicks ?? 0
        record.spawnMethod = "unknown (found without a record)"
        noteSharedSocket(of: main, in: &record)
        if state == .background {
            record.graceStartNanos = now
            record.graceDeadlineNanos = now
            record.graceCapNanos = now
        }
        return record
    }

    /// Locks the cgroup root: exclusive for a moment (true: no other daemon shares it), then
    /// shared.
    func holdCgroupRoot() -> Bool {
        guard
            let root = [facts.cgroup2Usable ? facts.cgroupRoot : nil, facts.freezerV1Root].compactMap({ $0 }).first(
                where: FileIO.isDirectory)
        else { return false }
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { return false }
        if cgroupRootLockFD >= 0 { close(cgroupRootLockFD) }
        cgroupRootLockFD = fd
        let alone = flock(fd, LOCK_EX | LOCK_NB) == 0
        _ = flock(fd, LOCK_SH)
        return alone
    }

    /// Puts the app in the state the kernel says it is in, with a lifecycle that starts there.
    /// What was half done is finished through the loop: a freeze under way becomes a grace that
    /// is over, a thaw is requested again; a grace keeps its recorded deadline.
    func reconcile(_ app: LiveApp, saved: AppRecord) -> String {
        let instant = Instant.read()
        let now = instant.monotonicNanos
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
                become(.background)  // a freeze was under way: complete it now
                record.graceStartNanos = saved.graceStartNanos ?? now
                record.graceDeadlineNanos = now
                record.graceCapNanos = now
                outcome = "a freeze under way: completing it"
            } else if let last = eventLog.lastStep(of: app.name), last.from == saved.state, last.to == .active,
                last.kind == (saved.state == .suspended ? .thaw : .resume), last.monotonicNanos >= saved.sinceMonotonicNanos
            {
                // A daemon thawed or resumed it and logged that, then ended before its registry
                // write: the step is done (back to the grace would freeze an app just resumed).
                become(.active, since: last.monotonicNanos)
                outcome =
                    "\(saved.state == .suspended ? "thawed" : "resumed") and logged by an earlier daemon that ended before recording it; active"
            } else if saved.state == .suspended {
                thaw = true  // a thaw was under way: the app runs; finish the job
                become(.active)
                outcome = "a thaw under way: completing it; active"
            } else {
                let due = saved.graceDeadlineNanos ?? now  // in its grace: runs to the recorded deadline
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
        var lifecycle = AppLifecycle(adopting: record, now: instant)
        lifecycle.freezeTimeout = config.freezeTimeoutNanos
        app.lifecycle = lifecycle
        saveRegistry(app.name)
        if let how = saved.endIntent {
            // A terminate or eviction under way is finished, with its recorded kill deadline.
            apply(.resumeEnding(frozen: frozen || started), to: app, now: instant)
            let kill = how == .evict ? now : saved.killDeadlineNanos ?? now
            return (how == .evict ? "an eviction" : "a terminate") + " under way: "
                + (kill > now ? "SIGTERM again, SIGKILL in \(DurationText.format(kill - now))" : "SIGKILL now")
        }
        if thaw { startOperation(app, .thaw, deadline: now.saturatingAdd(config.freezeTimeoutNanos), aside: .afterRestart) }
        if probe { startProbe(app) }
        return outcome
    }

    // MARK: Notify sockets of recorded apps

    /// The notify socket a recorded app was given: the one its record names, else its own.
    func notifySocketPath(of record: AppRecord) -> String { record.notifySocket ?? config.paths.notifySocket(record.name) }

    /// Removes the notify socket a recorded app was given, unless it is the shared one.
    func removeOwnNotifySocket(of record: AppRecord) {
        let path = notifySocketPath(of: record)
        if path != config.paths.sharedNotifySocket { AppNotifySocket.remove(path) }
    }

    /// This daemon's marks for app `name`: its socket `ownSocket`, or the shared one.
    func appMarks(_ name: String, ownSocket: String) -> AppMarks {
        AppMarks(name: name, ownSocket: ownSocket, sharedSocket: config.paths.sharedNotifySocket)
    }

    /// Records that `main` was given the shared notify socket when its environment says so.
    func noteSharedSocket(of main: pid_t, in record: inout AppRecord) {
        if AppMarks.notifySocket(of: main) == config.paths.sharedNotifySocket { record.notifySocket = config.paths.sharedNotifySocket }
    }
}
