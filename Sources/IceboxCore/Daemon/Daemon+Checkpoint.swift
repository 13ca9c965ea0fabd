import Glibc
import IceboxSystem

/// Evicting to disk (docs/criu.md), as states of the loop: criu's dump, then `sync` on the
/// images, each a child watched through its pidfd, fed back as `.checkpointEnded`.
extension Daemon {
    /// The criu this daemon runs (ICEBOX_CRIU, icebox's prefix, PATH), or nil.
    func criuBinary() -> CriuBinary? {
        var environment: [String: String] = [:]
        for key in ["ICEBOX_CRIU", "PATH"] { if let value = getenv(key) { environment[key] = String(cString: value) } }
        return CriuBinary.find(environment: environment)
    }

    /// Why a checkpoint is refused before criu runs.
    struct CheckpointRefusal: Error { var why: String }

    /// The criu that checkpoints this app, or why it cannot be checkpointed now.
    func checkpointCriu(for app: LiveApp) -> Result<CriuBinary, CheckpointRefusal> {
        if let why = appRefusal(app) { return .failure(CheckpointRefusal(why: why)) }
        guard let criu = criuBinary() else {
            return .failure(CheckpointRefusal(why: "no criu found (ICEBOX_CRIU, \(CriuBinary.installed), PATH): scripts/criu builds one"))
        }
        if let identity = CriuProbe.cacheIdentity(criu),
            let verdict = CriuProbeCache.load(
                stateDir: config.paths.stateDir, kernel: CriuProbe.kernelRelease(), binary: criu.path, identity: identity),
            !verdict.works
        {
            return .failure(CheckpointRefusal(why: "criu at \(criu.path) failed its probe: \(verdict.reason ?? "see icebox doctor")"))
        }
        let obstacles: [CheckpointObstacle]
        do { obstacles = try CheckpointObstacle.find(pids: app.members()) } catch {
            return .failure(CheckpointRefusal(why: "its sockets could not be read (\(error))"))
        }
        if !obstacles.isEmpty {
            return .failure(
                CheckpointRefusal(why: "criu cannot dump it: " + obstacles.prefix(3).map(\.description).joined(separator: "; ")))
        }
        return .success(criu)
    }

    /// What in the app itself keeps criu from taking it; nil when nothing does.
    private func appRefusal(_ app: LiveApp) -> String? {
        if !app.record.options.pidNamespace {
            return "it was launched without --pid-namespace (its pids could not be had back at a restore)"
        }
        if app.freezer.kind == .signal {
            return "it is frozen by SIGSTOP (no cgroup freezer here), which criu would restore stopped"
        }
        if app.record.options.attached { return "it is attached to a terminal (icebox run), which criu cannot take" }
        if let user = app.record.options.runAs, user.uid != geteuid() {
            // criu's parasite, as the app's user, cannot mount its PID namespace's /proc.
            return "it runs as another user (--user), and criu's parasite could not mount the /proc of its PID namespace"
        }
        return nil
    }

    /// `.checkpoint`: starts criu's dump of the frozen app (kept frozen by --freeze-cgroup;
    /// --skip-in-flight: a connection tried while frozen does not fail it), or says why not.
    func startCheckpoint(_ app: LiveApp) {
        let criu: CriuBinary
        switch checkpointCriu(for: app) {
        case .success(let found): criu = found
        case .failure(let refusal): return apply(.checkpointEnded(.failed(refusal.why)), to: app)
        }
        let images: CheckpointImages
        do { images = try CheckpointImages.prepare(stateDir: config.paths.stateDir, app: app.name) } catch {
            return apply(.checkpointEnded(.failed(error.message)), to: app)
        }
        let memory = memoryReader()(app).bytes
        var arguments = [
            "dump", "--tree", String(app.pid), "--images-dir", images.directory, "--log-file", "dump.log", "-v3", "--skip-in-flight",
            // No cgroup in the images: for a controller where the app has none of its own,
            // criu's default dumps the whole host's tree; the restore uses fresh cgroups.
            "--manage-cgroups=ignore",
        ]
        if let frozen = app.freezer.kind == .cgroup1 ? app.cgroups.freezerV1Path : app.cgroups.v2Path {
            arguments += ["--freeze-cgroup", frozen]
        }
        let run: CriuRun
        do {
            // One deadline for the dump and the sync of its images (`--criu-timeout`).
            run = try CriuRun.start(
                criu.path, arguments, output: images.directory + "/dump.out", timeoutNanos: policyEngine.policy.criuTimeoutNanos)
            try watch(run.handle.pidfd, .criu(app.name))
        } catch {
            try? images.discard()  // never written: nothing to keep
            return apply(.checkpointEnded(.failed("\(error)")), to: app)
        }
        app.checkpoint = CheckpointWork(stage: .dump, run: run, images: images, memoryBytes: memory)
        // Who is dumping it, durably, for a successor to wait for (Daemon+DiskRecovery).
        app.lifecycle.update {
            $0.diskWorker = run.pid
            $0.diskWorkerStartTicks = ProcFS.stat(pid: run.pid)?.startTimeTicks
            $0.images = images.directory
        }
        do throws(IceboxError) { try writeRecord(app.lifecycle.persistentRecord, intent: true) } catch {
            saveRegistry(app.name)  // said in the log; tried again next turn
        }
        log(
            .checkpoint, app: app.name, pid: app.pid,
            "criu dump started (pid \(run.pid)) into \(images.directory); the app had \(SizeText.format(memory))")
    }

    /// The criu (or sync) run of an app's checkpoint or restore has ended, or may have.
    func criuExited(_ name: String) {
        if let app = apps[name], let work = app.checkpoint {
            guard let termination = work.run.ended() else { return }
            unwatch(work.run.handle.pidfd)
            checkpointStepEnded(app, work, termination)
        } else if let job = restores[name] {
            guard let termination = job.run.ended() else { return }
            unwatch(job.run.handle.pidfd)
            restoreEnded(job, termination)
        }
    }

    /// Which app's criu (or sync) `pid` is, if it is one.
    func criuRunning(pid: pid_t) -> String? {
        apps.values.first { $0.checkpoint?.run.pid == pid }?.name ?? restores.values.first { $0.run.pid == pid }?.name
    }

    private func checkpointStepEnded(_ app: LiveApp, _ work: CheckpointWork, _ termination: Termination) {
        if let why = work.run.killedBecause { return checkpointFailed(app, work, why) }
        let now = Clock.monotonicNanos()
        var work = work
        switch work.stage {
        case .dump:
            work.dumpNanos = now.saturatingSub(work.run.started)
            guard termination == .exited(0) else {
                let why = work.images.firstError(in: work.images.dumpLog) ?? "criu dump \(termination)"
                return checkpointFailed(app, work, why)
            }
            // Durable before it counts: the memory is gone, the images are all that is left.
            do {
                guard let sync = work.images.syncCommand() else {
                    throw IceboxError(.unavailable, "no sync program (coreutils) in /usr/bin or /bin")
                }
                // Within the checkpoint's one deadline, the dump's.
                work.run = try CriuRun.start(
                    sync.executable, sync.arguments, output: work.images.directory + "/sync.out",
                    timeoutNanos: work.run.timeoutNanos, countedFrom: work.run.started)
                try watch(work.run.handle.pidfd, .criu(app.name))
            } catch {
                // The tree is gone already (criu killed it): the images are what there is.
                log(.error, app: app.name, pid: app.pid, "cannot sync the images: \(error)")
                return checkpointWritten(app, work, syncNanos: 0)
            }
            work.stage = .sync
            app.checkpoint = work
        case .sync:
            if termination != .exited(0) {
                log(.error, app: app.name, pid: app.pid, "sync of the images \(termination): they may not survive a crash of the host")
            }
            checkpointWritten(app, work, syncNanos: now.saturatingSub(work.run.started))
        }
    }

    private func checkpointWritten(_ app: LiveApp, _ work: CheckpointWork, syncNanos: UInt64) {
        app.checkpoint = nil
        do { try work.images.markComplete() } catch {
            log(.error, app: app.name, pid: app.pid, "cannot mark the images complete: \(error)")
        }
        let written = DiskCheckpoint(
            images: work.images.directory, dumpNanos: work.dumpNanos, syncNanos: syncNanos, imageBytes: work.images.bytes(),
            memoryBytes: work.memoryBytes)
        apply(.checkpointEnded(.written(written)), to: app)
    }

    private func checkpointFailed(_ app: LiveApp, _ work: CheckpointWork, _ why: String) {
        app.checkpoint = nil
        discardImages(work.images, of: app.name)
        apply(.checkpointEnded(.failed(why)), to: app)
    }

    /// The checkpoint's deadline passed: its criu (or sync) is killed, and the checkpoint fails.
    func checkpointOverran(_ app: LiveApp) {
        guard let work = app.checkpoint else { return }
        let what = work.stage == .dump ? "criu dump" : "the sync of the images"
        guard let why = work.run.overran(what, now: Clock.monotonicNanos()) else { return }
        unwatch(work.run.handle.pidfd)  // reapChildren reaps it when it ends
        checkpointFailed(app, work, why)
    }

    /// Removes an app's images, saying so if that fails (they hold its heap).
    func discardImages(_ images: CheckpointImages, of name: String) {
        do { try images.discard() } catch {
            log(.error, app: name, pid: nil, "cannot remove the images \(images.directory): \(error)")
        }
    }
}
