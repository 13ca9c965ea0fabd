import Glibc
import IceboxSystem

/// Resuming an app that is on disk: CRIU restores its tree, as this daemon's child, into fresh
/// cgroups at the paths it had, and it becomes the app again (`attach`); a failed restore
/// relaunches it cold (ICEBOX_LAUNCH_REASON=restore). Either way the images go.
extension Daemon {
    /// Whether `name` is on disk (or being restored): no live app, a record that says so.
    func isOnDisk(_ name: String) -> Bool {
        apps[name] == nil && (restores[name] != nil || ended[name]?.state == .onDisk)
    }

    /// `icebox resume` of an app on disk: starts its restore (or joins the one under way).
    func restoreRequested(_ name: String, waiter id: Int) {
        if restores[name] != nil {
            restores[name]?.waiters.append(id)
            return
        }
        guard var record = ended[name], record.state == .onDisk else { return }
        let images = CheckpointImages.of(record, stateDir: config.paths.stateDir)
        guard images.isComplete else {
            return restoreFailed(record, images, cgroups: nil, waiters: [id], why: "its images in \(images.directory) are not complete")
        }
        guard let criu = criuBinary() else {
            return restoreFailed(
                record, images, cgroups: nil, waiters: [id], why: "no criu found (ICEBOX_CRIU, \(CriuBinary.installed), PATH)")
        }
        // Fresh and thawed (a frozen one would hang the restore), where the dump found it.
        let cgroups: AppCgroups
        do {
            cgroups = try AppCgroups.create(
                name: name, v2Root: record.cgroup == nil ? nil : facts.cgroupRoot,
                freezerV1Root: record.freezerV1 == nil ? nil : facts.freezerV1Root,
                memoryV1Root: record.memoryV1 == nil ? nil : facts.memoryV1Root, backend: record.backend)
        } catch {
            return restoreFailed(record, images, cgroups: nil, waiters: [id], why: error.message)
        }
        if cgroups.v2Path != record.cgroup || cgroups.freezerV1Path != record.freezerV1 || cgroups.memoryV1Path != record.memoryV1 {
            return restoreFailed(
                record, images, cgroups: cgroups, waiters: [id],
                why: "this daemon's cgroups for it (\(cgroups.v2Path ?? "none")) are not where it was dumped (\(record.cgroup ?? "none"))")
        }
        let run: CriuRun
        do {
            run = try CriuRun.start(
                criu.path, CriuCommand.restoreArguments(images: images.directory), output: images.directory + "/restore.out",
                timeoutNanos: policyEngine.policy.criuTimeoutNanos, cgroups: cgroups)
            try watch(run.handle.pidfd, .criu(name))
        } catch {
            return restoreFailed(record, images, cgroups: cgroups, waiters: [id], why: "\(error)")
        }
        // Durably, before it goes on: a successor waits for the criu (Daemon+DiskRecovery).
        record.diskIntent = .restore
        record.diskIntentStartNanos = run.started
        record.diskWorker = run.pid
        record.diskWorkerStartTicks = ProcFS.stat(pid: run.pid)?.startTimeTicks
        ended[name] = record
        do throws(IceboxError) { try writeRecord(record, intent: true) } catch { saveRegistry(name) }
        restores[name] = RestoreJob(record: record, run: run, images: images, cgroups: cgroups, waiters: [id])
    }

    func restoreEnded(_ job: RestoreJob, _ termination: Termination) {
        restores[job.name] = nil
        if let why = job.run.killedBecause {
            return restoreFailed(job.record, job.images, cgroups: job.cgroups, waiters: job.waiters, why: why)
        }
        let nanos = Clock.monotonicNanos().saturatingSub(job.run.started)
        let pid = pid_t(((try? FileIO.read(job.images.restoredPIDFile)) ?? "").trimmed())  // none: nothing restored
        guard termination == .exited(0), let pid, let handle = try? ProcessHandle(adopting: pid),  // gone already: failed
            ProcFS.stat(pid: pid)?.ppid == getpid()
        else {
            let why = job.images.firstError(in: job.images.restoreLog) ?? "criu restore \(termination)"
            return restoreFailed(job.record, job.images, cgroups: job.cgroups, waiters: job.waiters, why: why)
        }
        var record = job.record
        record.pid = pid
        record.startTicks = ProcFS.stat(pid: pid)?.startTimeTicks ?? 0
        record.clearDiskWork()
        record.exitStatus = nil
        record.ending = nil
        let now = Instant.read()
        var lifecycle = AppLifecycle(restored: record, now: now)
        lifecycle.freezeTimeout = config.freezeTimeoutNanos
        let effects = lifecycle.restoredFromDisk(
            restoreNanos: nanos, imageBytes: record.imageBytes, waiters: job.waiters, now: now)
        switch attach(record, lifecycle: lifecycle, handle: handle, cgroups: job.cgroups) {
        case .success(let app):
            ended[job.name] = nil
            for effect in effects { perform(effect, for: app) }
            discardImages(job.images, of: job.name)
        case .failure(let why):
            // Not left running unsupervised; reaped at its SIGCHLD, and swept if it lingers.
            _ = try? handle.send(SIGKILL)  // gone already: nothing to kill
            restoreFailed(job.record, job.images, cgroups: job.cgroups, waiters: job.waiters, why: "restored, but \(why.message)")
        }
    }

    /// The restore's deadline passed: its criu is killed, and the restore fails.
    func restoreOverran(_ job: RestoreJob) {
        guard let why = job.run.overran("criu restore", now: Clock.monotonicNanos()) else { return }
        restores[job.name] = nil
        unwatch(job.run.handle.pidfd)  // reapChildren reaps it when it ends
        restoreFailed(job.record, job.images, cgroups: job.cgroups, waiters: job.waiters, why: why)
    }

    /// The restore failed: what it left is swept, the images discarded, the app recorded as
    /// evicted and launched again cold, told to restore its own state.
    func restoreFailed(_ saved: AppRecord, _ images: CheckpointImages, cgroups: AppCgroups?, waiters: [Int], why: String) {
        let now = Instant.read()
        let record = retireFromDisk(saved, images, as: .evicted, ending: "its restore from disk failed: \(why)", now: now)
        var e = Event(
            app: record.name, pid: nil, kind: .restore, from: .onDisk, to: .evicted,
            detail: "restore from disk failed: \(why); relaunching it cold (ICEBOX_LAUNCH_REASON=restore)",
            at: now)
        e.reason = "failed"
        log(e)
        let line = "icebox: \(record.name) could not be restored from disk (\(why)); relaunched cold, told to restore its state"
        for id in waiters { settle(id, app: record.name, line: line, failed: .other(.failure)) }
        var options = record.options
        options.attached = false
        options.nameIsDefault = false
        // The cold launch after the sweep (it needs the name's cgroups fresh); not while stopping.
        if let cgroups {
            sweep(cgroups, of: record.name, what: "a restore that failed", then: stopping ? nil : options)
        } else if !stopping {
            launch(options, stdio: [], client: nil)
        }
    }

    /// `icebox terminate` or `evict` (kill) of an app on disk: only its images go.
    func endOnDisk(_ name: String, as state: AppState, waiter id: Int) {
        guard let record = ended[name], record.state == .onDisk else { return }
        let images = CheckpointImages.of(record, stateDir: config.paths.stateDir)
        let now = Instant.read()
        _ = retireFromDisk(record, images, as: state, ending: "ended while on disk: its images discarded", now: now)
        let e = Event(
            app: name, pid: nil, kind: state == .evicted ? .evict : .terminate, from: .onDisk, to: state,
            detail: "ended while on disk: its images discarded", at: now)
        log(e)
        settle(id, app: name, line: LifecycleText.step(name, from: .onDisk, to: state, e.detail), event: e)
    }

    /// An app that leaves the disk without a process: its images discarded, recorded ended as
    /// `state` (an eviction as killed while suspended: its next launch is told to restore), now.
    private func retireFromDisk(
        _ saved: AppRecord, _ images: CheckpointImages, as state: AppState, ending: String, now: Instant
    ) -> AppRecord {
        discardImages(images, of: saved.name)
        var record = saved
        record.state = state
        record.killedWhileSuspended = state == .evicted
        record.ending = ending
        record.clearDiskWork()
        record.images = nil
        record.imageBytes = nil
        record.sinceMonotonicNanos = now.monotonicNanos
        record.sinceWall = now.rfc3339
        ended[record.name] = record
        do throws(IceboxError) { try writeRecord(record) } catch { saveRegistry(record.name) }
        return record
    }
}
