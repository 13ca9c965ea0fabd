import Glibc
import IceboxSystem

/// Carrying out what an app's lifecycle decides (later outcomes come back as inputs).
extension Daemon {
    /// Feeds one input to the app's lifecycle and carries out the effects it returns.
    ///
    /// Intent before action: a transition that changes the record or starts a freeze writes
    /// it (atomically) before any effect runs, so a daemon killed at any point leaves its
    /// successor a record at least as far along as the kernel. Not synced: a killed daemon
    /// leaves the page cache to its successor, a power loss ends every app, and the fsync cost
    /// ~1 ms of every suspend. If that write fails, a client's suspend (or a resume in the
    /// grace) is refused with nothing done (the old lifecycle value is kept); anything else
    /// goes on (the kernel acted already, or a thaw or kill, which the next daemon reads back
    /// from the kernel), and its waiting clients are told the record could not be written
    /// (exit 74).
    ///
    /// An input produced while effects run is queued (LifecycleInputQueue): this never nests.
    /// `now`: when the input happened, if not when it is taken. `settlingWatch`: the app's
    /// watch is settled after its effects, if the app is still there.
    func apply(_ input: LifecycleInput, to app: LiveApp, now: Instant? = nil, settlingWatch: Bool = false) {
        guard inputs.beginDraining() else {
            inputs.enqueue(.init(app: app, input: input, now: now, settlingWatch: settlingWatch))
            return
        }
        applyNow(input, to: app, now: now ?? .read(), settlingWatch: settlingWatch)
        while let next = inputs.take() {
            applyNow(next.input, to: next.app, now: next.now ?? .read(), settlingWatch: next.settlingWatch)
        }
        releaseHeldLines()
    }

    private func applyNow(_ input: LifecycleInput, to app: LiveApp, now: Instant, settlingWatch: Bool) {
        defer { if settlingWatch, apps[app.name] === app { settleWatch(app) } }
        if app.heldForStandIn != nil, input.waitsForStandIn {
            app.heldForStandIn?.append(input)
            return
        }
        var next = app.lifecycle
        var effects = next.handle(input, now: now)
        // A confirmed freeze's record waits for the end of the turn, after the replies: the
        // record of intent before the freeze is already as far along as the kernel. (A thaw
        // writes no record first: its confirmation's is the first, and its client hears.)
        if case .freezeConfirmed = input, !effects.contains(where: \.startsFreeze), effects.contains(.persist) {
            effects.removeAll { $0 == .persist }
            registryWriter.markAfterReplies(app.name)
        }
        if effects.contains(where: { $0 == .persist || $0.startsFreeze }) {
            let request = Self.refusable(input)
            do throws(IceboxError) {
                // Before a request is acted on or a freeze begins: a record of intent.
                try writeRecord(
                    next.persistentRecord, done: request == nil ? "\(app.name) is \(next.record.state.rawValue) all the same" : nil)
                effects.removeAll { $0 == .persist }
            } catch {
                if let request {
                    if let waiter = request.waiter {
                        report(waiter, line: "icebox: \(error)", failed: error.reason)
                        settle(waiter, app: app.name, line: nil)
                    }
                    return
                }
                saveRegistry(app.name)  // tried again on the next turn
                var told = Set<Int>()
                for effect in effects {
                    switch effect {
                    case .settle(let waiter, _, _, _), .report(let waiter, _, _, _), .refuse(let waiter, _, _):
                        if told.insert(waiter).inserted { report(waiter, line: "icebox: \(error)", failed: error.reason) }
                    default: break
                    }
                }
            }
        }
        app.lifecycle = next
        inputs.beginPerforming()
        for effect in effects { perform(effect, for: app) }
        inputs.endPerforming()
    }

    /// A client's suspend or resume, refused (nothing done) when its record cannot be written.
    static func refusable(_ input: LifecycleInput) -> Refusable? {
        switch input {
        case .suspend(let waiter, _, _), .resume(let waiter, _), .evictToDisk(let waiter): return Refusable(waiter: waiter)
        default: return nil
        }
    }

    struct Refusable {
        var waiter: Int?
    }

    func perform(_ effect: LifecycleEffect, for app: LiveApp) {
        switch effect {
        case .signal(let sig):
            do { try app.handle.send(sig) } catch {
                log(.error, app: app.name, pid: app.pid, "\(Signals.name(of: sig)) not sent: \(error)")
            }
        case .signalMembers(let sig):
            for pid in app.members() { kill(pid, sig) }
            // ESRCH only: the main process exited meanwhile, and its pidfd's event ends the app.
            _ = try? app.handle.send(sig)
        case .freeze(let deadline):
            // A main process moved out of the app's cgroup would keep running: the freeze fails.
            if let outside = mainProcessOutside(app) {
                apply(.leftCgroup(to: outside), to: app)
            } else {
                startOperation(app, .freeze, deadline: deadline)
            }
        case .cancelFreeze:
            // Rolled back at once (a write); the app runs again.
            app.freeze?.operation.cancel()
            app.freeze = nil
            settleWatch(app)
        case .thaw(let deadline):
            startOperation(app, .thaw, deadline: deadline)
        case .thawAside(let why):
            // Only the request matters (the tasks must run to act on SIGTERM): confirmation only
            // logged.
            startOperation(app, .thaw, deadline: Clock.monotonicNanos().saturatingAdd(config.freezeTimeoutNanos), aside: why)
        case .killAll:
            killAll(app)
        case .checkpoint:
            startCheckpoint(app)
        case .discardImages(let directory):
            discardImages(CheckpointImages(directory: directory), of: app.name)
        case .stopProbe:
            if let fd = app.probe?.watchedFD { unwatch(fd) }
            app.probe?.cancel()
            app.probe = nil
            app.probeAt = nil
        case .log(let event):
            log(event)
        case .report(let waiter, let line, let failed, let event):
            report(waiter, line: line, failed: failed ? .other(.failure) : nil, event: event)
        case .settle(let waiter, let line, let failed, let event):
            settle(waiter, app: app.name, line: line, failed: failed ? .other(.failure) : nil, event: event)
        case .refuse(let waiter, let line, let code):
            // Refused for now (75): the app is launching.
            let reason: IceboxError.Reason =
                code == .tryAgain
                ? .busy(name: app.name, state: app.record.state)
                : code == .failure ? .wrongState(name: app.name, state: app.record.state) : .other(code)
            settle(waiter, app: app.name, line: line, failed: reason)
        case .persist:
            saveRegistry(app.name)
        case .launched:
            schedulePolicyCheck(after: 100_000_000)  // a new app's memory counts against the budget
            settleWatch(app)
        case .frozen:
            afterFreeze(app)
            settleWatch(app)
        case .destroy:
            destroy(app)
        case .ended(let line):
            appEnded(app, line: line)
        }
    }

    /// The background notice to send, if any. `auto` sends SIGUSR1 only if the app's main
    /// process has a handler for it (sigcatch), so a naive program is never killed by it.
    func notice(for app: LiveApp) -> LifecycleInput.Notice? {
        switch app.record.options.backgroundSignal {
        case .none: return nil
        case .auto:
            // Through the kept descriptor (it stays that process); by the pid if it cannot be kept.
            let handles =
                app.statFile.withDescriptor { ProcFS.catchesSignal(statFD: $0, SIGUSR1) }
                ?? ProcFS.catchesSignal(pid: app.pid, SIGUSR1)
            return handles ? .init(signal: SIGUSR1, why: "the app handles it") : nil
        case .signal(let n): return .init(signal: n, why: "as configured")
        }
    }

    // MARK: Freeze and thaw: states of the loop

    /// Where the app's main process is, when someone moved it outside the cgroup that freezes
    /// the app; nil while it is inside (or in a sub-cgroup), once it is gone, and for SIGSTOP.
    func mainProcessOutside(_ app: LiveApp) -> String? {
        let dir: String?, mount: CgroupMount?, controller: String?
        switch app.record.backend {
        case .cgroup2: (dir, mount, controller) = (app.cgroups.v2Path, facts.mounts.unifiedMount, nil)
        case .cgroup1: (dir, mount, controller) = (app.cgroups.freezerV1Path, facts.mounts.freezerV1Mount, "freezer")
        case .signal: return nil
        }
        guard let dir, let mount else { return nil }
        // The common case in one ioctl: the main process (alive or a zombie) is in the v2 cgroup.
        if controller == nil, let id = app.cgroups.v2DirectoryID, app.handle.cgroupID() == id { return nil }
        // An exited process's end is news for appExited, not a departure. Anything else (a
        // sub-cgroup, an older kernel, the v1 freezer) reads /proc/PID/cgroup.
        guard !app.hasExited() else { return nil }
        guard let now = CgroupMembership.path(of: app.pid, controller: controller, mount: mount) else { return nil }
        return CgroupMembership.isWithin(now, dir) ? nil : now
    }

    /// Tells the lifecycle if a suspended app's main process has left its cgroup (it runs).
    func noticeDeparture(_ app: LiveApp) {
        guard case .suspended = app.lifecycle.phase, app.freeze == nil, let outside = mainProcessOutside(app) else { return }
        apply(.leftCgroup(to: outside), to: app)
    }

    /// A suspended app whose freezer shows undone, with no operation of ours under way, was
    /// thawed by someone else: it becomes active. Asked on cgroup.events and before a suspend.
    func noticeOutsideThaw(_ app: LiveApp) {
        guard case .suspended = app.lifecycle.phase, app.freeze == nil, app.removal == nil else { return }
        // The request, not the frozen state: a task moved into a frozen cgroup makes it read
        // "frozen 0" until the kernel has frozen that task too.
        guard !app.freezer.freezeStarted() else { return }
        // An app whose main process has just ended shows no freeze either: it ends instead.
        guard !app.hasExited() else { return }
        let how: String
        switch app.freezer.kind {
        case .cgroup2: how = "its cgroup.freeze reads 0"
        case .cgroup1: how = "its v1 freezer.state reads THAWED"
        case .signal: how = "none of its processes is stopped any more"
        }
        apply(.thawedOutside(how: how), to: app)
    }

    /// An active app whose own freezer the kernel shows asked for and done, with no operation
    /// of ours under way, was frozen by someone else: it becomes suspended. Asked only before
    /// a resume, not on every change of cgroup.events: a tool freezing the cgroup itself (the
    /// benchmark's bare.c, between icebox's rounds) would have the daemon log, persist and run
    /// the policy mid-freeze. Not for
    /// SIGSTOP: a process stopped by someone else (^Z) is theirs to continue (SignalFreezer).
    func noticeOutsideFreeze(_ app: LiveApp) {
        guard case .active = app.lifecycle.phase, app.freeze == nil, app.removal == nil, app.freezer.kind != .signal else { return }
        // Both: the request (not only an ancestor's freeze, which no resume of ours undoes)
        // and the kernel's confirmation (not a freeze still under way).
        guard app.freezer.freezeStarted(), app.freezer.isFrozen() else { return }
        let how = app.freezer.kind == .cgroup2 ? "its cgroup.freeze reads 1" : "its v1 freezer.state reads FROZEN"
        apply(.frozenOutside(how: how), to: app)
    }

    /// Writes the request to the kernel and looks once; later turns look again, so a freeze
    /// stuck in D state holds up no one. `aside`: one the lifecycle does not wait for (why).
    func startOperation(_ app: LiveApp, _ direction: FreezeDirection, deadline: UInt64, aside: AsideThaw? = nil) {
        app.freeze?.operation.cancel()
        let freezer = app.freezer
        func begin() -> (FreezeOperation, FreezeProgress) {
            let now = Clock.monotonicNanos()
            var op =
                direction == .freeze ? freezer.beginFreeze(now: now, deadline: deadline) : freezer.beginThaw(now: now, deadline: deadline)
            if direction == .freeze, notificationWillBePrompt(app, now: now) { op.expectPromptNotification() }
            // Stepped before it is returned, so the copy keeps what the first look learnt.
            let progress = op.step(now: Clock.monotonicNanos())
            return (op, progress)
        }
        // A cgroup thaw is one write and one read with no preemption between (PreemptionGuard).
        // Not a freeze: the tasks on the daemon's CPU must run to freeze. A SIGCONT thaw only of
        // a few tasks (~10 µs a task on the CPU), and not a thaw that wakes a single task.
        let guarded =
            direction == .thaw && thawGuard.acts && wakesSeveral(app)
            && (freezer.kind != .signal || (app.frozenProcesses ?? .max) <= Self.guardedSignalTasks)
        let (op, progress) = guarded ? thawGuard.run(begin) : begin()
        app.freeze = FreezeInFlight(operation: op, aside: aside)
        advance(app, op, progress)
    }

    /// The most tasks a SIGCONT thaw runs at SCHED_FIFO for (its last freeze's count): a woken
    /// thread preempted the daemon for 50 µs in most thaws of 10; at 64 the reads take < 1 ms.
    static let guardedSignalTasks = 64

    /// Whether a thaw of the app will wake more than one task, as far as the daemon knows (its
    /// last freeze's count; one process, its threads). Waking one task from SCHED_FIFO costs
    /// more than it saves: one process thawed in 38 µs guarded, 12-15 µs not; ten, `resume`
    /// 71 µs faster guarded (scripts/bench/oneshot-tight, scripts/bench/budget).
    func wakesSeveral(_ app: LiveApp) -> Bool {
        app.frozenProcesses != 1 || ProcFS.threadCount(pid: app.pid) != 1
    }

    /// Whether the kernel will announce the end of the app's freeze as soon as it happens:
    /// cgroup.events unchanged for longer than the kernel's rate limit; for SIGSTOP, a daemon
    /// owning its process (embedded, another thread may take the SIGCHLDs).
    func notificationWillBePrompt(_ app: LiveApp, now: UInt64) -> Bool {
        if app.freezer.kind == .signal { return config.ownsProcess }
        guard app.watchedEvents != nil, let changed = app.eventsChangedAt else { return false }
        return now.saturatingSub(changed) >= FreezeOperation.notificationQuietNanos
    }

    func stepOperation(_ app: LiveApp) {
        guard var op = app.freeze?.operation else { return }
        let progress = op.step(now: Clock.monotonicNanos())
        app.freeze?.operation = op
        advance(app, op, progress)
    }

    /// What a step of an operation leads to: a wait for the kernel, or its outcome fed back.
    func advance(_ app: LiveApp, _ op: FreezeOperation, _ progress: FreezeProgress) {
        switch progress {
        case .waiting(let at, let watch):
            app.freeze?.recheckAt = at
            watchCgroupEvents(app, watch)
        case .confirmed(let report):
            if op.direction == .freeze { app.frozenProcesses = report.tasks }
            // The kernel announces the change now, or when its rate limit lets it.
            app.eventsChangedAt = Clock.monotonicNanos()
            let aside = app.freeze?.aside
            // The watch is settled after the lifecycle took the confirmation (it may end the app).
            app.freeze = nil
            guard let aside else {
                apply(
                    op.direction == .freeze ? .freezeConfirmed(FreezeOutcome(report)) : .thawConfirmed(FreezeOutcome(report)), to: app,
                    settlingWatch: true)
                return
            }
            let step = aside.isResumeStep
            log(
                Event(
                    app: app.name, pid: app.pid, kind: .thaw, from: step ? .suspended : nil, to: step ? .active : nil,
                    durationNanos: report.durationNanos, detail: "thawed in \(DurationText.format(report.durationNanos)) \(aside.why)",
                    at: .read()))
            if apps[app.name] === app { settleWatch(app) }
        case .failed(let failure):
            let aside = app.freeze?.aside
            app.freeze = nil
            settleWatch(app)
            if let aside { return log(.error, app: app.name, pid: app.pid, "thaw \(aside.why) failed: \(failure)") }
            if op.direction == .freeze {
                // Typed for the clients waiting on this suspend: the stuck tasks' processes.
                var timedOut = false, pids: [Int32] = []
                if case .timeout(let t) = failure {
                    timedOut = true
                    for task in t.stuck where !pids.contains(task.pid) { pids.append(task.pid) }
                }
                let reason = IceboxError.Reason.freezeFailed(name: app.name, timedOut: timedOut, stuckPIDs: pids)
                for id in app.lifecycle.suspendWaiters { failed(id, because: reason) }
            }
            apply(op.direction == .freeze ? .freezeFailed(failure.description) : .thawFailed(failure.description), to: app)
        }
    }

    /// What an app keeps watched between operations: its cgroup.events, whose changes say a
    /// suspended app may have left (noticeDeparture) or been thawed (noticeOutsideThaw), and
    /// whether the next freeze's notification will be prompt (`eventsChangedAt`). Short of
    /// descriptors, nothing (Daemon+Descriptors). An operation or removal keeps its own watch.
    func settleWatch(_ app: LiveApp) {
        guard app.freeze == nil, app.removal == nil else { return }
        if descriptors.keepingAppFiles {
            watchCgroupEvents(app, app.cgroups.eventsWatchDescriptor)
        } else {
            shedDescriptors(app)
        }
    }

    /// Registers the app's cgroup.events descriptor with epoll (EPOLLPRI); the cgroups own it.
    func watchCgroupEvents(_ app: LiveApp, _ fd: Int32?) {
        guard app.watchedEvents != fd else { return }
        if let old = app.watchedEvents { unwatch(old) }
        app.watchedEvents = nil
        guard let fd else { return }
        do {
            try watch(fd, .cgroupEvents(app.name), events: EpollEvents.priority)
            app.watchedEvents = fd
            // A change just before the watch went unseen: count from now.
            app.eventsChangedAt = Clock.monotonicNanos()
        } catch {
            // The re-check time still brings the loop back: only the early wake-up is lost.
        }
    }

    /// The app's cgroup.events changed: look again at what waits.
    func cgroupChanged(_ app: LiveApp) {
        app.eventsChangedAt = Clock.monotonicNanos()
        let stepped = app.freeze != nil
        if stepped { stepOperation(app) }
        if app.removal != nil { stepDestroy(app) }
        if app.freeze == nil && app.removal == nil {
            // Read on the watched descriptor: that is what re-arms the kernel's notification.
            _ = app.cgroups.events()
            noticeDeparture(app)
            // Not when this change ended an operation of ours: the step has just read the kernel.
            if !stepped { noticeOutsideThaw(app) }
        }
    }

    /// Kills every process of the app (its cgroups', else its session's) and its main process.
    func killAll(_ app: LiveApp) {
        if !app.cgroups.isEmpty {
            for problem in app.cgroups.killAll() {
                log(.error, app: app.name, pid: app.pid, "kill: \(problem)")
            }
        } else {
            for pid in ProcFS.pids(inSession: app.pid) { kill(pid, SIGKILL) }
        }
        // ESRCH only: the main process exited meanwhile, and its pidfd's event ends the app.
        _ = try? app.handle.send(SIGKILL)
    }

    // MARK: The end of an app

    /// The main process's pidfd fired: reap it and tell the lifecycle how it ended.
    func appExited(_ app: LiveApp) {
        let termination: Termination?
        if app.lifecycle.adopted {
            // Not our child (re-adopted after a daemon restart): the pidfd says it ended, not how.
            guard app.hasExited() else { return }
            termination = nil
        } else {
            do {
                guard let reaped = try app.handle.reapIfExited() else { return }  // woken early
                termination = reaped
            } catch {
                // ECHILD: reaped by someone else (a host program, under Supervisor): how is
                // unknown.
                termination = nil
            }
        }
        unwatch(app.handle.pidfd)
        apply(.exited(termination), to: app)
    }

    /// The rest of the app goes with its main process (KillMode=control-group): kill what is
    /// left and remove its cgroups, bottom-up, waiting through cgroup.events, never inline.
    func destroy(_ app: LiveApp) {
        if let fd = app.notify.ownFD { unwatch(fd) }
        app.freeze?.operation.cancel()
        app.freeze = nil
        var sessionLeftovers = 0
        if app.cgroups.isEmpty {
            // No cgroup: what is left of the app is found through its session.
            let rest = ProcFS.pids(inSession: app.pid)
            sessionLeftovers = rest.count
            for pid in rest { kill(pid, SIGKILL) }
        }
        let (removal, end) = CgroupRemoval.begin(app.cgroups, mainPID: app.pid, now: Clock.monotonicNanos())
        app.removal = removal
        followDestroy(app, end, extra: sessionLeftovers)
    }

    func stepDestroy(_ app: LiveApp) {
        guard var removal = app.removal else { return }
        let end = removal.step(now: Clock.monotonicNanos())
        app.removal = removal
        followDestroy(app, end, extra: 0)
    }

    /// After a step of the app's removal: wait on its cgroup.events and re-check time, or end it.
    func followDestroy(_ app: LiveApp, _ end: CgroupRemoval.End?, extra: Int) {
        switch end {
        case nil: watchCgroupEvents(app, app.removal?.watch)
        case .removed(let leftovers): finishDestroy(app, leftovers: leftovers + extra, problems: [])
        case .failed(let problems): finishDestroy(app, leftovers: extra, problems: problems)
        }
    }

    func finishDestroy(_ app: LiveApp, leftovers: Int, problems: [String]) {
        app.removal = nil
        watchCgroupEvents(app, nil)
        reapChildrenQuietly()
        if let fd = app.notify.ownFD {
            close(fd)
            AppNotifySocket.remove(app.notify.path)
        }
        apply(.cleanedUp(leftovers: leftovers, problems: problems), to: app)
    }

    /// The lifecycle has recorded the end: tell whoever listens and forget the live app.
    func appEnded(_ app: LiveApp, line: String) {
        for fd in clients.stopRequesters { send(fd, ControlReply(kind: .line, text: line)) }
        if let fd = app.attachedClient {
            send(fd, ControlReply(kind: .exit, code: app.record.exitStatus ?? 1))
            app.attachedClient = nil
            clientGone(fd, drain: true)
        }
        apps.removeValue(forKey: app.name)
        appDeadlines.remove(app)
        rebalanceDescriptors()
        if app.record.backend == .cgroup1 { updateFreezerKeyHold() }
        ended[app.name] = app.record
        saveRegistry(app.name)
        victimGone(app)
        if app.lifecycle.restartWhenEnded && !stopping && !app.record.options.attached {
            // --watchdog-action restart, the same options (an attached run ended with its app).
            var options = app.record.options
            options.attached = false
            options.nameIsDefault = false
            launch(options, stdio: [], client: nil, restarts: app.lifecycle.restartTimes)
        }
    }

    /// Reaps orphans, leaving every child someone owns to its owner (`exitedChild`).
    func reapChildrenQuietly() {
        while let pid = Reaper.peekExitedChild() {
            guard case .orphan = exitedChild(pid) else { return }
            Reaper.reap(pid: pid)
        }
    }
}

extension FreezeOutcome {
    init(_ report: FreezeReport) {
        self.init(backend: report.backend, durationNanos: report.durationNanos, tasks: report.tasks)
    }
}

extension LifecycleEffect {
    /// A freeze begins: the record says so first, for a successor to complete, not thaw.
    var startsFreeze: Bool {
        if case .freeze = self { return true }
        return false
    }
}
