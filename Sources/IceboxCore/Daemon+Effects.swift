import Glibc
import IceboxSystem

/// How the daemon carries out what an app's lifecycle decides. `apply` feeds one input to
/// the app's `AppLifecycle` and performs the effects it returns, in order; outcomes that
/// come later (the kernel confirming a freeze, the app's exit, its cgroups removed) come back
/// as inputs the same way. Nothing here decides a transition.
extension Daemon {
    func apply(_ input: LifecycleInput, to app: LiveApp, now: UInt64 = Clock.monotonicNanos()) {
        let effects = app.lifecycle.handle(input, now: now)
        for effect in effects { perform(effect, for: app) }
    }

    func perform(_ effect: LifecycleEffect, for app: LiveApp) {
        switch effect {
        case .signal(let sig):
            do { try app.handle.send(sig) } catch {
                log(Event(app: app.name, pid: app.pid, kind: .error, detail: "\(Signals.name(of: sig)) not sent: \(error)"))
            }
        case .signalMembers(let sig):
            for pid in app.members() { kill(pid, sig) }
            _ = try? app.handle.send(sig)
        case .freeze(let deadline):
            freeze(app, deadline: deadline)
        case .cancelFreeze:
            _ = try? app.freezer.thaw(deadline: Clock.monotonicNanos().saturatingAdd(config.freezeTimeoutNanos))
        case .thaw(let deadline):
            thaw(app, deadline: deadline)
        case .thawForTermination:
            if let report = try? app.freezer.thaw(deadline: Clock.monotonicNanos().saturatingAdd(config.freezeTimeoutNanos)) {
                log(
                    Event(
                        app: app.name, pid: app.pid, kind: .thaw, durationNanos: report.durationNanos,
                        detail: "thawed in \(DurationText.format(report.durationNanos)) so it can act on SIGTERM"))
            }
        case .killAll:
            killAll(app)
        case .stopProbe:
            if let fd = app.probe?.watchedFD { unwatch(fd) }
            app.probe?.cancel()
            app.probe = nil
            app.probeAt = nil
        case .log(let event):
            log(event)
        case .report(let waiter, let line, let failed):
            report(waiter, line: line, failed: failed ? .failure : nil)
        case .settle(let waiter, let line, let failed):
            settle(waiter, app: app.name, line: line, failed: failed ? .failure : nil)
        case .persist:
            saveRegistry(app.name)
        case .launched:
            schedulePolicyCheck(after: 100_000_000)  // a new app's memory counts against the budget
        case .frozen:
            afterFreeze(app)
        case .destroy:
            destroy(app)
        case .ended(let line):
            appEnded(app, line: line)
        }
    }

    /// The background notice to send, if any. `auto` sends SIGUSR1 only if the app's main
    /// process has a handler for it (SigCgt), so a naive program is never killed by it.
    func notice(for app: LiveApp) -> LifecycleInput.Notice? {
        switch app.record.options.backgroundSignal {
        case .none: return nil
        case .auto:
            return ProcFS.catchesSignal(pid: app.pid, SIGUSR1) ? .init(signal: SIGUSR1, why: "the app handles it") : nil
        case .signal(let n): return .init(signal: n, why: "as configured")
        }
    }

    // MARK: Freeze and thaw

    func freeze(_ app: LiveApp, deadline: UInt64) {
        do {
            let report = try app.freezer.freeze(deadline: deadline)
            apply(.freezeConfirmed(FreezeOutcome(report)), to: app)
        } catch {
            apply(.freezeFailed(error.description), to: app)
        }
    }

    func thaw(_ app: LiveApp, deadline: UInt64) {
        do {
            let report = try app.freezer.thaw(deadline: deadline)
            apply(.thawConfirmed(FreezeOutcome(report)), to: app)
        } catch {
            apply(.thawFailed(error.description), to: app)
        }
    }

    /// Kills every process of the app: cgroup.kill where the kernel has it (frozen tasks die
    /// too), else SIGKILL to each member and through the pidfd. A v1-frozen task only acts
    /// on the kill once thawed, so the v1 freezer is thawed after the signal is queued.
    func killAll(_ app: LiveApp) {
        if let cgroup = app.cgroup, cgroup.supportsKill, (try? cgroup.kill()) != nil {
        } else {
            for pid in app.members() { kill(pid, SIGKILL) }
        }
        _ = try? app.handle.send(SIGKILL)
        if let v1 = app.freezerV1, v1.isFrozen() { try? FileIO.write(v1.path + "/freezer.state", "THAWED") }
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
            guard let reaped = try? app.handle.reapIfExited() else { return }
            termination = reaped
        }
        unwatch(app.handle.pidfd)
        apply(.exited(termination), to: app)
    }

    /// The rest of the app goes with its main process (systemd's KillMode=control-group):
    /// kill what is left, remove its cgroups and its notify socket.
    func destroy(_ app: LiveApp) {
        unwatch(app.notifyFD)
        var leftovers = 0
        if let cgroup = app.cgroup {
            if (try? cgroup.events().populated) == true {
                leftovers = cgroup.procs().count
                killAll(app)
                _ = try? cgroup.waitForEvents(until: Clock.monotonicNanos() + 5_000_000_000) { !$0.populated }
            }
        } else {
            let rest = app.members()
            leftovers = rest.count
            for pid in rest { kill(pid, SIGKILL) }
            if let v1 = app.freezerV1 { try? FileIO.write(v1.path + "/freezer.state", "THAWED") }
        }
        reapChildrenQuietly()
        var problems: [String] = []
        if let cgroup = app.cgroup {
            do { try cgroup.remove() } catch { problems.append(error.description) }
        }
        if let v1 = app.freezerV1 {
            if !v1.procs().isEmpty {
                for pid in v1.procs() { kill(pid, SIGKILL) }
                try? FileIO.write(v1.path + "/freezer.state", "THAWED")
            }
            do { try v1.remove() } catch { problems.append(error.description) }
        }
        if let mem = app.memoryV1 {
            do { try mem.remove() } catch { problems.append(error.description) }
        }
        close(app.notifyFD)
        unlink(app.notifyPath)
        apply(.cleanedUp(leftovers: leftovers, problems: problems), to: app)
    }

    /// The lifecycle has recorded the end: tell whoever listens and forget the live app.
    func appEnded(_ app: LiveApp, line: String) {
        for fd in stopRequesters { send(fd, ControlReply(kind: .line, text: line)) }
        if let fd = app.attachedClient {
            send(fd, ControlReply(kind: .exit, code: app.record.exitStatus ?? 1))
            app.attachedClient = nil
            clientGone(fd, drain: true)
        }
        apps.removeValue(forKey: app.name)
        ended[app.name] = app.record
        saveRegistry(app.name)
        victimGone(app)
    }

    /// Reaps orphans that landed on the daemon, leaving apps' main processes to their pidfds.
    func reapChildrenQuietly() {
        while let pid = Reaper.peekExitedChild() {
            if apps.values.contains(where: { $0.pid == pid }) { return }
            Reaper.reap(pid: pid)
        }
    }
}

extension FreezeOutcome {
    init(_ report: FreezeReport) {
        self.init(backend: report.backend, durationNanos: report.durationNanos, tasks: report.tasks)
    }
}
