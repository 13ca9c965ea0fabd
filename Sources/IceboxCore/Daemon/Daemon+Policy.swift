import Glibc
import IceboxSystem

/// The memory policy: when to evict, whom (EvictionOrder), and compaction and lock checks.
extension Daemon {
    /// The app being evicted by the policy right now: one victim at a time.
    struct Victim {
        var name: String
        var reason: EvictionReason
        /// The apps' memory when the victim was chosen; nil when no trigger needed it (no total).
        var memoryBefore: UInt64?
        var victimMemory: AppMemoryReading
        var decisionNanos: UInt64
        var start: UInt64
    }

    /// The starting policy: the daemon's own flags, else policy.json's (with what was wrong).
    func startingPolicy() -> (policy: EvictionPolicy, problem: String?) {
        config.policy.map { ($0, nil) } ?? EvictionPolicy.loadReporting(from: config.paths.policyFile)
    }

    /// The last policy (policy.json), with the daemon's own flags on top.
    func loadPolicy() {
        let (policy, problem) = startingPolicy()
        policyEngine.policy = policy
        if let problem { log(.error, app: "-", pid: getpid(), "policy: \(problem); defaults used") }
        do { try applyPolicy() } catch {
            log(.error, app: "-", pid: getpid(), "policy: \(error); pressure trigger off")
            policyEngine.policy.pressure = nil
        }
        // A failed write is logged, but must not stop a daemon whose policy is in memory.
        do { try FileIO.writeAtomically(config.paths.policyFile, JSONLines.encode(policyEngine.policy)) } catch {
            log(.error, app: "-", pid: getpid(), "policy: cannot save it: \(error)")
        }
    }

    /// Arms what the policy needs: the PSI trigger and the periodic budget check.
    func applyPolicy() throws(IceboxError) {
        if let old = policyEngine.pressureTrigger {
            unwatch(old.fd)
            policyEngine.pressureTrigger = nil
        }
        if let text = policyEngine.policy.pressure {
            let spec = try PressureSpec.parse(text)
            var path = PressureTrigger.systemMemory
            if policyEngine.policy.pressureScope == .apps {
                guard let root = facts.cgroupRoot else {
                    throw IceboxError(.unavailable, "--pressure-scope apps needs a cgroup v2 root", hint: "use --pressure-scope system")
                }
                path = root + "/memory.pressure"
            }
            do {
                let trigger = try PressureTrigger(spec: spec, path: path)
                try watch(trigger.fd, .pressure, events: PressureTrigger.epollEvents)
                policyEngine.pressureTrigger = trigger
            } catch {
                throw IceboxError("set the PSI trigger \(spec) on \(path)", error)
            }
        }
        schedulePolicyCheck()
    }

    /// The budget has no kernel event on every host, so while one is set and apps run it is
    /// checked once a second (and right after launches and resumes): a few file reads.
    func schedulePolicyCheck(after nanos: UInt64 = 1_000_000_000) {
        guard policyEngine.policy.memoryBudgetBytes != nil, !apps.isEmpty else {
            policyEngine.checkAt = nil
            return
        }
        let due = Clock.monotonicNanos().saturatingAdd(nanos)
        policyEngine.checkAt = min(policyEngine.checkAt ?? due, due)
    }

    /// The PSI trigger's descriptor woke the loop. The kernel hands out each crossing once, and
    /// epoll has just seen it: its events are the answer (polling again would find nothing).
    func pressureFired(events: UInt32) {
        guard let trigger = policyEngine.pressureTrigger else { return }
        let state: PressureTrigger.State =
            events & EpollEvents.error != 0 ? .gone : events & EpollEvents.priority != 0 ? .crossed : .quiet
        switch state {
        case .crossed:
            // Only adds figures to the line: the trigger fired either way.
            let stats = (try? trigger.stats()).map { " (some avg10 \($0.some.avg10)%)" } ?? ""
            log(.pressure, app: "-", pid: getpid(), "PSI trigger \(trigger.spec) crossed\(stats)")
            enforcePolicy(pressure: true)
        case .gone:
            unwatch(trigger.fd)
            policyEngine.pressureTrigger = nil
            log(.error, app: "-", pid: getpid(), "the PSI trigger's file \(trigger.path) is gone; pressure trigger off")
        case .quiet:
            break
        }
    }

    func totalMemory() -> UInt64 {
        let memory = memoryReader()
        return apps.values.reduce(0) { $0 + memory($1).bytes }
    }

    /// Reads an app's memory (its counter kept open while plenty, else opened below a kept root).
    func memoryReader() -> (LiveApp) -> AppMemoryReading {
        let wanted = [facts.memoryV1Root, facts.cgroupRoot].compactMap { $0 }
        if counterRootHandles.count < wanted.count { counterRootHandles = wanted.compactMap { DirectoryHandle($0) } }
        let roots = counterRootHandles, keep = descriptors.keepingAppFiles
        return { app in
            let reading = app.memory(roots: roots, keepOpen: keep)
            // The Pss sum may have opened cgroup.procs again: short of descriptors, let go.
            if !keep { self.shedDescriptors(app) }
            return reading
        }
    }

    /// Evicts one victim if a trigger holds. The next one is chosen only after this one is
    /// gone, measured afresh. A pressure event evicts one app; the kernel signals again.
    func enforcePolicy(pressure: Bool = false) {
        let policy = policyEngine.policy
        if policy.memoryBudgetBytes != nil { schedulePolicyCheck() }
        withdrawResumedVictim()
        guard policyEngine.victim == nil, !stopping,
            pressure || policy.memoryBudgetBytes != nil || policy.maxSuspended != nil
        else { return }
        let start = Clock.monotonicNanos()
        // Measured only for the triggers that are set: a thousand apps' memory is a thousand reads.
        let before: UInt64? = policy.memoryBudgetBytes != nil || pressure ? totalMemory() : nil
        let reason: EvictionReason
        var onlySuspended = false
        if pressure {
            reason = .pressure(trigger: policy.pressure ?? "")
        } else if let budget = policy.memoryBudgetBytes, let total = before, total > budget {
            reason = .budget(limitBytes: budget, usedBytes: total)
        } else if let cap = policy.maxSuspended,
            case let suspendedCount = apps.values.filter({ $0.record.state == .suspended }).count,
            suspendedCount > cap
        {
            reason = .tooManySuspended(cap: cap, count: suspendedCount)
            onlySuspended = true
        } else {
            return
        }
        let candidates = apps.values.filter { !$0.lifecycle.isEnding && !$0.lifecycle.pendingEviction }.map {
            EvictionCandidate(
                name: $0.name, band: $0.record.options.priority, state: $0.record.state, sinceNanos: $0.record.sinceMonotonicNanos)
        }
        let ordered = EvictionOrder.order(candidates, protectActive: policy.protectActive).filter {
            !onlySuspended || $0.state == .suspended
        }
        guard let choice = ordered.first, let app = apps[choice.name] else {
            var event = Event(
                app: "-", pid: getpid(), kind: .policy, detail: "\(reason), but no app may be evicted (critical, or active and protected)",
                at: .read())
            event.reason = reason.description
            return log(event)
        }
        let decision = Clock.monotonicNanos() - start
        policyEngine.victim = Victim(
            name: app.name, reason: reason, memoryBefore: before, victimMemory: memoryReader()(app), decisionNanos: decision,
            start: Clock.monotonicNanos())
        var chosen = Event(
            app: app.name, pid: app.pid, kind: .policy, durationNanos: decision,
            detail:
                "chosen for eviction (\(reason)): \(app.record.options.priority.rawValue) band, \(app.record.state.rawValue) for \(DurationText.format(start.saturatingSub(app.record.sinceMonotonicNanos))); decided in \(DurationText.format(decision))",
            at: .read()
        )
        chosen.reason = reason.description
        chosen.band = app.record.options.priority
        chosen.memoryBeforeBytes = before
        log(chosen)
        // AppLifecycle suspends (its grace cut to --eviction-grace) and then kills or, with
        // --evict-to disk (the app's own, else the policy's), checkpoints when it can.
        var toDisk = (app.record.options.evictTo ?? policy.evictTo) == .disk
        if toDisk, case .failure(let refusal) = checkpointCriu(for: app) {
            log(.policy, app: app.name, pid: app.pid, "not checkpointed to disk: \(refusal.why); killed instead")
            toDisk = false
        }
        apply(.policyVictim(grace: policy.evictionGraceNanos, notice: notice(for: app), toDisk: toDisk), to: app)
    }

    /// A victim resumed during its eviction grace is no longer on its way out: withdrawn, or
    /// the policy (one victim at a time) would wait for its end for good.
    func withdrawResumedVictim() {
        guard let v = policyEngine.victim, let app = apps[v.name], !app.lifecycle.pendingEviction, !app.lifecycle.isEnding else { return }
        policyEngine.victim = nil
        var event = Event(
            app: app.name, pid: app.pid, kind: .policy,
            detail: "eviction withdrawn: resumed before it was frozen (\(v.reason)); the policy measures again", at: .read())
        event.reason = v.reason.description
        log(event)
    }

    /// The victim has gone: log the eviction with its figures, then look again (not after
    /// a pressure event: the kernel signals again if the pressure goes on).
    func victimGone(_ app: LiveApp) {
        guard let v = policyEngine.victim, v.name == app.name else { return }
        policyEngine.victim = nil
        let after = v.memoryBefore.map { _ in totalMemory() }
        let apps = v.memoryBefore.map { "apps \(SizeText.format($0)) → \(SizeText.format(after ?? 0)), " } ?? ""
        let killTime = Clock.monotonicNanos().saturatingSub(app.lifecycle.endStart > 0 ? app.lifecycle.endStart : v.start)
        var event = Event(
            app: app.name, pid: app.pid, kind: .policy, durationNanos: killTime,
            detail:
                "evicted for \(v.reason): \(apps)the app had \(SizeText.format(v.victimMemory.bytes)) (\(v.victimMemory.source.rawValue)); decision \(DurationText.format(v.decisionNanos)), \(app.record.state == .onDisk ? "checkpoint to disk" : "kill → reaped") \(DurationText.format(killTime))",
            at: .read()
        )
        event.reason = v.reason.description
        event.band = app.record.options.priority
        event.memoryBeforeBytes = v.memoryBefore
        event.memoryAfterBytes = after
        event.victimMemoryBytes = v.victimMemory.bytes
        event.evictedFor = v.reason.kind
        log(event)
        if case .pressure = v.reason {} else { enforcePolicy() }
    }

    // MARK: Frozen apps: compaction and the file-lock check

    /// An app is frozen: arms its compaction and its lock check.
    func afterFreeze(_ app: LiveApp) {
        armFrozenAppTimers(app, now: Clock.monotonicNanos())
        enforcePolicy()
    }

    /// A frozen app's timers live in the daemon's memory only: a daemon that re-adopts it
    /// suspended arms them again, from now, or a lock it holds could be waited on for good.
    func rearmFrozenAppTimers() {
        let now = Clock.monotonicNanos()
        for app in apps.values where app.lifecycle.adopted && app.record.state == .suspended { armFrozenAppTimers(app, now: now) }
    }

    /// A frozen app's lock check, a second from `now`, and its compaction, if one is set.
    private func armFrozenAppTimers(_ app: LiveApp, now: UInt64) {
        app.lockCheckAt = now.saturatingAdd(1_000_000_000)
        if let after = app.record.options.compactAfterNanos ?? policyEngine.policy.compactAfterNanos {
            app.compactAt = now.saturatingAdd(after)
        }
    }

    /// Android's check, one second after freezing: does the frozen app hold a file lock that
    /// another process waits on? Then thaw it (or evict it) before that becomes a deadlock.
    func checkLocks(_ app: LiveApp) {
        app.lockCheckAt = nil
        // No lock table (no /proc/locks): no contention seen.
        guard app.record.state == .suspended, let locks = try? FileLocks.read() else { return }
        let contended = FileLocks.contended(heldBy: Set(app.members()), in: locks)
        guard let first = contended.first else { return }
        let waiterPIDs = Set(contended.flatMap { $0.waiters.map(\.pid) }).sorted()
        let waiting = waiterPIDs.map(String.init).joined(separator: ", ")
        let what = "holds a \(first.holder.kind.rawValue) lock on inode \(first.holder.inode) that pid \(waiting) waits on"
        let evict = policyEngine.policy.onLockContention == .evict
        let outcome = evict ? "evicting it (--on-lock-contention evict)" : "thawing it"
        var event = Event(app: app.name, pid: app.pid, kind: .lock, detail: "frozen but \(what): \(outcome)", at: .read())
        event.pids = waiterPIDs
        log(event)
        apply(evict ? .evict(waiter: nil) : .resume(waiter: nil), to: app)
    }

    /// Reclaims a frozen app's memory without killing it.
    func compact(_ app: LiveApp, mode: CompactionMode) -> Result<CompactionReport, IceboxError> {
        app.compactAt = nil
        do {
            let report = try app.cgroups.compact(mode: mode, fallbackMembers: app.members())
            let summary = report.summary
            let swapNote =
                mode == .pageout && !SystemMemory.hasSwap() ? "; no swap on this host: anonymous pages stay, file-backed pages go" : ""
            app.lifecycle.update { $0.lastCompaction = summary }
            apply(.compacted, to: app)
            log(
                Event(
                    app: app.name, pid: app.pid, kind: .compact, durationNanos: report.durationNanos,
                    detail:
                        "compacted (\(mode.rawValue), \(report.method.rawValue)) in \(DurationText.format(report.durationNanos)): \(summary)\(swapNote)",
                    at: .read()
                ))
            saveRegistry(app.name)
            return .success(report)
        } catch {
            let e = IceboxError("compact \(app.name)", error)
            log(.error, app: app.name, pid: app.pid, e.description)
            return .failure(e)
        }
    }
}
