import Glibc
import IceboxSystem

/// The transitions: Active → Background → (grace) → Suspended, back to Active, and the two
/// ways out (terminate, evict), plus what happens when an app ends on its own.
extension Daemon {
    // MARK: Suspend

    /// The background notice to send, if any. `auto` sends SIGUSR1 only if the app's main
    /// process has a handler for it (SigCgt), so a naive program is never killed by it.
    func backgroundSignal(for app: LiveApp) -> (signal: Int32, why: String)? {
        switch app.record.options.backgroundSignal {
        case .none: return nil
        case .auto:
            return ProcFS.catchesSignal(pid: app.pid, SIGUSR1) ? (SIGUSR1, "the app handles it") : nil
        case .signal(let n):
            return (n, "as configured")
        }
    }

    /// Sends the app to the background and on to Suspended. `grace` cuts the grace period
    /// short (the policy does, for a victim not yet suspended).
    func beginSuspend(_ app: LiveApp, waiter: Int?, grace: UInt64? = nil) {
        switch app.record.state {
        case .suspended:
            settle(waiter ?? -1, app: app.name, line: "\(app.name)  already suspended (nothing to do)")
        case .background:
            if let waiter { app.suspendWaiters.append(waiter) }
        case .launching, .active:
            if app.terminating || app.evicting {
                settle(waiter ?? -1, app: app.name, line: "icebox: \(app.name) is being stopped; not suspending it", failed: .failure)
                return
            }
            let from = app.record.state
            let now = Clock.monotonicNanos()
            if let waiter { app.suspendWaiters.append(waiter) }
            app.readyDeadline = nil
            app.graceStart = now
            app.graceExtensions = 0
            app.setState(.background, now: now)
            if let (sig, why) = backgroundSignal(for: app) {
                do {
                    try app.handle.send(sig)
                } catch {
                    log(Event(app: app.name, pid: app.pid, kind: .error, detail: "background notice: \(error)"))
                }
                app.graceDeadline = now + min(grace ?? .max, app.record.options.graceNanos)
                app.graceCap = now + max(app.record.options.maxGraceNanos, app.record.options.graceNanos)
                let text = "\(Signals.name(of: sig)) sent (\(why)); grace \(DurationText.format(app.record.options.graceNanos))"
                log(Event(app: app.name, pid: app.pid, kind: .notice, from: from, to: .background, detail: text))
                tellSuspendWaiters(app, "\(app.name)  \(from.rawValue) → background  \(text)")
                saveRegistry(app.name)  // the grace deadline survives a daemon crash
            } else {
                let why =
                    app.record.options.backgroundSignal == NoticeSignal.none
                    ? "no notice (--background-signal none)"
                    : "no notice (the app has no SIGUSR1 handler)"
                log(Event(app: app.name, pid: app.pid, kind: .notice, from: from, to: .background, detail: why + "; grace skipped"))
                tellSuspendWaiters(app, "\(app.name)  \(from.rawValue) → background  \(why); grace skipped")
                endGrace(app, reason: "no notice")
            }
        default:
            settle(waiter ?? -1, app: app.name, line: "icebox: \(app.name) is not running", failed: .failure)
        }
    }

    func tellSuspendWaiters(_ app: LiveApp, _ line: String) {
        for id in app.suspendWaiters { if let w = waiters[id] { send(w.client, ControlReply(kind: .line, text: line)) } }
    }

    /// The grace period is over (READY=1, expired, or no notice was sent): freeze now.
    func endGrace(_ app: LiveApp, reason: String) {
        guard app.record.state == .background else { return }
        app.graceDeadline = nil
        let graceUsed = Clock.monotonicNanos() - app.graceStart
        let extended = app.graceExtensions > 0 ? ", extended \(app.graceExtensions)×" : ""
        let deadline = Clock.monotonicNanos() + config.freezeTimeoutNanos
        do {
            let report = try app.freezer.freeze(deadline: deadline)
            app.record.lastFreezeNanos = report.durationNanos
            app.setState(.suspended)
            let text =
                "grace ended after \(DurationText.format(graceUsed)) (\(reason)\(extended)), frozen in \(DurationText.format(report.durationNanos)) (\(report.backend.rawValue), \(report.tasks) process\(report.tasks == 1 ? "" : "es"))"
            log(
                Event(
                    app: app.name, pid: app.pid, kind: .freeze, from: .background, to: .suspended,
                    durationNanos: report.durationNanos, detail: text))
            for id in app.suspendWaiters { settle(id, app: app.name, line: "\(app.name)  background → suspended  \(text)") }
            app.suspendWaiters = []
            saveRegistry(app.name)
            afterFreeze(app)
            return
        } catch {
            // The freezer rolled back: the app runs, and says so.
            app.setState(.active)
            let text = "freeze failed: \(error)"
            log(Event(app: app.name, pid: app.pid, kind: .error, from: .background, to: .active, detail: text))
            for id in app.suspendWaiters { settle(id, app: app.name, line: "icebox: \(app.name): \(text)", failed: .failure) }
            // A policy victim goes even if it could not be frozen: killing needs no freeze.
            if app.pendingEviction { evict(app, waiter: nil) }
        }
        app.suspendWaiters = []
        saveRegistry(app.name)
    }

    // MARK: Resume

    /// Thaws the app. With `waitReady` (and `--ready notify`) the reply waits for the app's
    /// READY=1 after the thaw: the hot start as the app itself reports it.
    func resume(_ app: LiveApp, waiter: Int?, waitReady: Bool = false) {
        switch app.record.state {
        case .active, .launching:
            settle(waiter ?? -1, app: app.name, line: "\(app.name)  already \(app.record.state.rawValue) (nothing to do)")
        case .background:
            // Back before the grace ran out: withdraw the pending freeze.
            app.graceDeadline = nil
            app.setState(.active)
            for id in app.suspendWaiters {
                settle(id, app: app.name, line: "icebox: \(app.name) was resumed before it was frozen", failed: .failure)
            }
            app.suspendWaiters = []
            let fg = sendForegroundSignal(app)
            log(
                Event(
                    app: app.name, pid: app.pid, kind: .resume, from: .background, to: .active,
                    detail: "resumed during its grace period; not frozen\(fg)"))
            settle(waiter ?? -1, app: app.name, line: "\(app.name)  background → active  resumed during its grace period\(fg)")
            saveRegistry(app.name)
        case .suspended:
            let start = Clock.monotonicNanos()
            do {
                let report = try app.freezer.thaw(deadline: start + config.freezeTimeoutNanos)
                app.resumedAt = start
                app.record.lastThawNanos = report.durationNanos
                app.setState(.active)
                let fg = sendForegroundSignal(app)
                let compacted = app.compactedWhileSuspended ? "; first resume after a compaction" : ""
                app.compactedWhileSuspended = false
                let text = "thawed in \(DurationText.format(report.durationNanos)) (\(report.backend.rawValue))\(fg)\(compacted)"
                log(
                    Event(
                        app: app.name, pid: app.pid, kind: .thaw, from: .suspended, to: .active, durationNanos: report.durationNanos,
                        detail: text))
                if waitReady, case .notify = app.record.options.ready {
                    self.report(waiter ?? -1, line: "\(app.name)  suspended → active  \(text)")
                    if let waiter { app.resumeWaiters.append(waiter) }
                    app.resumeReadyDeadline = start + app.record.options.readyTimeoutNanos
                } else {
                    settle(waiter ?? -1, app: app.name, line: "\(app.name)  suspended → active  \(text)")
                }
            } catch {
                let text = "thaw failed: \(error)"
                log(Event(app: app.name, pid: app.pid, kind: .error, detail: text))
                settle(waiter ?? -1, app: app.name, line: "icebox: \(app.name): \(text)", failed: .failure)
            }
            saveRegistry(app.name)
        default:
            settle(waiter ?? -1, app: app.name, line: "icebox: \(app.name) is not running", failed: .failure)
        }
    }

    func sendForegroundSignal(_ app: LiveApp) -> String {
        guard let sig = app.record.options.foregroundSignal else { return "" }
        _ = try? app.handle.send(sig)
        return "; \(Signals.name(of: sig)) sent"
    }

    // MARK: Terminate and evict

    /// SIGTERM to every process of the app (a frozen app is thawed first so it can act on
    /// it), then SIGKILL when the time-out passes.
    func beginTerminate(_ app: LiveApp, timeoutNanos: UInt64, waiter: Int?) {
        if let waiter { app.endWaiters.append(waiter) }
        if app.terminating || app.evicting { return }
        app.terminating = true
        app.endStart = Clock.monotonicNanos()
        app.graceDeadline = nil
        app.readyDeadline = nil
        if app.record.state == .suspended || app.freezer.isFrozen() {
            if let report = try? app.freezer.thaw(deadline: Clock.monotonicNanos() + config.freezeTimeoutNanos) {
                log(
                    Event(
                        app: app.name, pid: app.pid, kind: .thaw,
                        durationNanos: report.durationNanos,
                        detail: "thawed in \(DurationText.format(report.durationNanos)) so it can act on SIGTERM"))
            }
        }
        for pid in app.members() { kill(pid, SIGTERM) }
        _ = try? app.handle.send(SIGTERM)
        app.killDeadline = app.endStart + timeoutNanos
        log(
            Event(
                app: app.name, pid: app.pid, kind: .terminate,
                detail: "SIGTERM sent (willTerminate); SIGKILL after \(DurationText.format(timeoutNanos))"))
    }

    func killAfterTimeout(_ app: LiveApp) {
        app.killDeadline = nil
        log(
            Event(
                app: app.name, pid: app.pid, kind: .terminate, durationNanos: Clock.monotonicNanos() - app.endStart,
                detail: "still running after the time-out; SIGKILL"))
        killAll(app)
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

    /// What memory pressure does: kill without any notice, reap, record the app as evicted.
    func evict(_ app: LiveApp, waiter: Int?) {
        if let waiter { app.endWaiters.append(waiter) }
        if app.evicting { return }
        app.evicting = true
        app.endStart = Clock.monotonicNanos()
        app.graceDeadline = nil
        app.readyDeadline = nil
        app.killDeadline = nil
        killAll(app)
    }

    // MARK: The end of an app

    /// The main process exited: reap it, kill what is left of the app, remove its cgroups
    /// and socket, record how it ended, and tell whoever waits.
    func appExited(_ app: LiveApp) {
        let termination: Termination?
        if app.adopted {
            // Not our child (re-adopted after a daemon restart): the pidfd says it ended, not how.
            guard app.hasExited() else { return }
            termination = app.evicting ? .signaled(SIGKILL) : nil
        } else {
            guard let reaped = try? app.handle.reapIfExited() else { return }
            termination = reaped
        }
        let how = termination?.description ?? "ended (exit status unknown: re-adopted after a daemon restart)"
        let now = Clock.monotonicNanos()
        unwatch(app.handle.pidfd)
        unwatch(app.notifyFD)
        if let fd = app.probe?.watchedFD { unwatch(fd) }
        app.probe?.cancel()

        // The rest of the app goes with its main process (systemd's KillMode=control-group).
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
        var cleanupProblems: [String] = []
        if let cgroup = app.cgroup {
            do { try cgroup.remove() } catch { cleanupProblems.append(error.description) }
        }
        if let v1 = app.freezerV1 {
            if !v1.procs().isEmpty {
                for pid in v1.procs() { kill(pid, SIGKILL) }
                try? FileIO.write(v1.path + "/freezer.state", "THAWED")
            }
            do { try v1.remove() } catch { cleanupProblems.append(error.description) }
        }
        if let mem = app.memoryV1 {
            do { try mem.remove() } catch { cleanupProblems.append(error.description) }
        }
        close(app.notifyFD)
        unlink(app.notifyPath)

        let from = app.record.state
        let final: AppState = app.evicting ? .evicted : app.terminating ? .terminated : .exited
        app.setState(final, now: now)
        app.record.exitStatus = termination?.shellStatus
        app.record.ending = how
        app.record.killedWhileSuspended = from == .suspended && termination == .signaled(SIGKILL)
        var detail: String
        switch final {
        case .evicted:
            detail = "evicted without notice: killed and reaped in \(DurationText.format(now - app.endStart)); \(how)"
        case .terminated:
            detail = "terminated in \(DurationText.format(now - app.endStart)); \(how)"
        default:
            detail = "\(how) after \(DurationText.format(now - app.launchStart))"
        }
        if leftovers > 0 { detail += "; killed \(leftovers) remaining process\(leftovers == 1 ? "" : "es")" }
        if !cleanupProblems.isEmpty { detail += "; cleanup: " + cleanupProblems.joined(separator: "; ") }
        log(
            Event(
                app: app.name, pid: app.pid, kind: final == .evicted ? .evict : .exit, from: from, to: final,
                durationNanos: final == .exited ? now - app.launchStart : now - app.endStart, detail: detail))

        let line = "\(app.name)  \(from.rawValue) → \(final.rawValue)  \(detail)"
        for id in app.endWaiters { settle(id, app: app.name, line: line) }
        for fd in stopRequesters { send(fd, ControlReply(kind: .line, text: line)) }
        for id in app.suspendWaiters {
            settle(id, app: app.name, line: "icebox: \(app.name) ended before it was frozen: \(how)", failed: .failure)
        }
        for id in app.launchWaiters + app.resumeWaiters {
            settle(id, app: app.name, line: "icebox: \(app.name) ended before it was ready: \(how)", failed: .failure)
        }
        app.resumeWaiters = []
        app.endWaiters = []; app.suspendWaiters = []; app.launchWaiters = []
        if let fd = app.attachedClient {
            send(fd, ControlReply(kind: .exit, code: termination?.shellStatus ?? 1))
            app.attachedClient = nil
            clientGone(fd)
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
