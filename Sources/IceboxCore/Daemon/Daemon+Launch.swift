import Glibc
import IceboxSystem

/// Launching: name, backend, cgroups, notify socket, spawn, then readiness.
extension Daemon {
    func uniqueName(_ base: String) -> String {
        func free(_ name: String) -> Bool { apps[name] == nil && !pendingLaunches.contains(name) && !sweeper.contains(name) }
        if free(base) { return base }
        var i = 2
        while !free("\(base)-\(i)") { i += 1 }
        return "\(base)-\(i)"
    }

    /// Refuses `name` if a running app has it (launch, adopt); `choose`: what the hint says to choose instead.
    func refuseTakenName(_ name: String, choose: String) throws(IceboxError) {
        guard let other = apps[name] else { return }
        throw IceboxError(
            .nameTaken(name: name), "an app named '\(name)' is already running (pid \(other.pid))",
            hint: "choose another \(choose), or terminate it first")
    }

    /// Launches an app for a client (`fd`), or for the daemon itself (nil: a watchdog restart,
    /// with its `restarts` for its start limit), which then logs what a client would be told.
    func launch(_ requested: LaunchOptions, stdio: [Int32], client fd: Int32?, restarts: [UInt64] = []) {
        var options = requested
        var stdioKept = false  // a launch waiting on its stand-in keeps them until it is answered
        defer { if !stdioKept { for extra in stdio { close(extra) } } }
        do {
            if options.nameIsDefault { options.name = uniqueName(options.name) }
            try AppName.validateForLaunch(options.name)
            try refuseTakenName(options.name, choose: "--name")
            if pendingLaunches.contains(options.name) {
                throw IceboxError(
                    .nameTaken(name: options.name), "an app named '\(options.name)' is already launching (its spawn is under way)",
                    hint: "choose another --name, or wait for that launch")
            }
            if sweeper.contains(options.name) {
                // Refused (75), not waited for: the removal may take its whole deadline, and
                // fail, leaving a cgroup no launch could use; the client would wait unseeing.
                throw IceboxError(
                    .other(.tryAgain),
                    "the cgroups of an earlier launch of '\(options.name)' that failed are still being removed",
                    hint: "try again in a moment; icebox log \(options.name) says when they are gone")
            }
            if options.command.isEmpty { throw IceboxError(.usage, "no command to launch") }
            if options.attached && stdio.count != 3 {
                throw IceboxError(.usage, "icebox run must pass its standard input, output and error")
            }
            switch try start(options, stdio: stdio, restarts: restarts) {
            case .started(let app):
                launched(app, client: fd)
            case .spawning(let pending):
                pending.client = fd
                pending.stdio = stdio
                stdioKept = true
                pendingLaunches.add(pending)
                // Its deadline still ends it (LoopTimer.launches): only the answer is lost.
                try? watch(pending.watchDescriptor, .launchSpawn(pending.watchDescriptor))
            }
        } catch {
            launchFailed(options.name, error, client: fd)
        }
    }

    /// The app is made: it joins the apps, its client is told, and its readiness is looked for.
    func launched(_ app: LiveApp, client fd: Int32?) {
        let options = app.record.options
        apps[app.name] = app
        appDeadlines.add(app)
        if let fd { clients[fd]?.attachedApp = options.attached ? app.name : nil }
        if options.attached, let fd {
            app.attachedClient = fd
            send(fd, ControlReply(kind: .line, text: app.name))
        }
        // Logged once the app is registered (an attached client sees it), before what follows.
        if let event = app.spawnEvent { log(event) }
        rebalanceDescriptors(adding: app)
        if app.record.backend == .cgroup1 { updateFreezerKeyHold() }
        if let problem = app.cgroups.memoryV1Problem {
            let text =
                "no v1 memory cgroup: \(problem); the app runs without one (its memory is read from its v2 cgroup, if that has the memory controller)"
            log(.error, app: app.name, pid: app.pid, text)
            if let fd { send(fd, ControlReply(kind: .warning, text: "icebox: warning: \(app.name): \(text)")) }
        }
        if !options.attached, let fd { app.lifecycle.waitForLaunch(waiters.open(client: fd, apps: [app.name])) }
        switch options.ready {
        case .exec: apply(.ready, to: app)
        case .notify: break
        default: startProbe(app)
        }
    }

    /// The launch failed (everything it made undone): its client is told, or the event log.
    func launchFailed(_ name: String, _ error: any Error, client fd: Int32?) {
        let e = error as? IceboxError ?? IceboxError(.failure, "\(error)")
        if let fd { fail(fd, e) } else { log(.error, app: name, pid: nil, "launch failed: \(e)") }
    }

    // MARK: A spawn through a stand-in, as a state of the loop

    /// A pending launch's stand-in socket was readable: its answer (or its end).
    func standInAnswered(_ fd: Int32) {
        guard let pending = pendingLaunches.waiting(on: fd) else { return }
        guard let outcome = pending.standIn.standIn.outcome(of: pending.request) else { return }  // woken early
        completeSpawn(pending, outcome)
    }

    /// Pending launches past their deadline: their stand-in did not answer in time.
    func spawnsOverran(now: UInt64) {
        for pending in pendingLaunches.due(now: now) { completeSpawn(pending, nil) }
    }

    /// The daemon stops: launches still waiting on a stand-in are rolled back, their clients told.
    func rollBackPendingLaunches() {
        for pending in pendingLaunches.all {
            completeSpawn(
                pending, nil,
                failure: IceboxError(
                    .other(.unavailable), "the daemon stopped while \(pending.options.name) was launching; the launch was rolled back"))
        }
    }

    /// Ends a pending launch: the rest of the start with the stand-in's outcome; else the undo.
    private func completeSpawn(_ pending: PendingLaunch, _ outcome: StandInOutcome?, failure: IceboxError? = nil) {
        let name = pending.options.name
        pendingLaunches.remove(name)
        unwatch(pending.watchDescriptor)
        defer {
            pending.release()
            for fd in pending.stdio { close(fd) }
            // Children left unreaped while launches were pending (`reapChildren`) are orphans now.
            if pendingLaunches.isEmpty { reapChildren() }
            replayHeldSharedNotify()
        }
        do {
            if let failure { throw failure }
            if pending.options.attached && pending.client == nil {
                throw IceboxError(.failure, "the attached icebox run went away while \(name) was launching")
            }
            let result: Result<SpawnedProcess, SpawnError>
            switch outcome {
            case nil:
                let pid = pending.standIn.standIn.handle.pid
                throw IceboxError("launch \(name)", SystemError("spawn through the stand-in pid \(pid)", errno: ETIMEDOUT))
            case .spawned(let spawned): result = .success(spawned)
            case .failed(let error): result = .failure(error)
            case .unusable(let why):
                log(.daemon, app: name, pid: nil, "spawn stand-in unusable (\(why)); spawning directly")
                result = directSpawn(pending.request)
            }
            launched(try pending.finish(result), client: pending.client)
        } catch {
            pending.rollBack()
            launchFailed(name, error, client: pending.client)
        }
    }

    /// Records the launch, creates the app's cgroups and notify socket, spawns it and records
    /// its pid. A launch that fails leaves nothing, and its undo waits for nothing: the killed
    /// child is reaped at its SIGCHLD, the cgroups are swept, the stand-in is let go. A spawn
    /// through a stand-in returns `.spawning`; the rest (`finish`) runs when it answers, or the
    /// undo at the deadline (PendingLaunch, `completeSpawn`). A direct spawn returns the app.
    ///
    /// Intent before action: the record (launching, no pid yet, the cgroup paths) is written
    /// synced before the first cgroup is made, and again with the pid right after the spawn,
    /// for a successor to finish from (`finishInterruptedLaunch`); a failed write fails it (74).
    func start(_ options: LaunchOptions, stdio: [Int32], restarts: [UInt64] = []) throws -> LaunchStart {
        if let runAs = options.runAs {
            let missing = DaemonCapabilities.missingForUser()
            if !missing.isEmpty {
                throw IceboxError(
                    .permission,
                    "cannot launch \(options.name) as \(runAs.short): this daemon (uid \(geteuid())) lacks \(missing.joined(separator: ", "))",
                    hint: "--user needs a daemon running as root, or one given CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_CHOWN")
            }
        }
        let initExecutable = try options.pidNamespace ? pidNamespaceInit(for: options) : nil
        let backend = try facts.resolve(options.backend)
        let env = environment(for: options)
        let pathVar = env.last { $0.hasPrefix("PATH=") }.map { String($0.dropFirst(5)) }
        guard let executable = Spawner.resolve(options.command[0], path: pathVar) else {
            throw IceboxError(
                .commandNotFound(command: options.command[0]), "\(options.command[0]): command not found",
                hint: "check the name and PATH, or give a full path")
        }
        var cleanup: [() -> Void] = []
        func undo() { for step in cleanup.reversed() { step() } }
        let wall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        func under(_ root: String?) -> String? { root.map { $0 + "/" + options.name } }
        var record = AppRecord(
            name: options.name, options: options, pid: 0, state: .launching, sinceMonotonicNanos: Clock.monotonicNanos(), sinceWall: wall,
            launchedWall: wall, backend: backend, cgroup: under(facts.cgroup2Usable ? facts.cgroupRoot : nil),
            freezerV1: under(backend == .cgroup1 ? facts.freezerV1Root : nil))
        // The ready deadline of a launch its successor takes over runs from here.
        record.launchStartNanos = record.sinceMonotonicNanos
        // An app run as another user gets a socket of its own under /tmp, named here so that
        // the intent names it: a successor recognises the app by it (AppMarks) or removes it.
        let privateSocket = AppNotifySocket.needsPrivate(options.runAs) ? AppNotifySocket.privatePath() : nil
        record.notifySocket = privateSocket
        record.memoryV1 = under(facts.memoryV1Root)
        record.restartTimesNanos = restarts.isEmpty ? nil : restarts
        try writeRecord(record, intent: true)
        let previous = ended[options.name]

        do {
            cleanup.append { [self] in restoreOrRemoveRecord(options.name, previous: previous) }
            // Fresh cgroups: v2 wherever usable (how the app's processes are found and killed),
            // the v1 freezer for cgroup1, v1 memory on hybrid hosts. With v1 hierarchies a parked
            // stand-in gives its directories and clones the app into them. Not for
            // --pid-namespace: only this process can raise CAP_SYS_ADMIN for its clone3.
            let standIn = options.pidNamespace ? nil : takeStandIn(for: backend)
            let cgroups: AppCgroups
            do {
                cgroups = try AppCgroups.create(
                    name: options.name, v2Root: facts.cgroup2Usable ? facts.cgroupRoot : nil,
                    freezerV1Root: backend == .cgroup1 ? facts.freezerV1Root : nil, memoryV1Root: facts.memoryV1Root,
                    backend: backend, standIn: standIn?.directories)
            } catch {
                if let standIn { dismissStandIn(standIn) }  // its directories have their parked names again
                throw error
            }
            var spawnedPID: pid_t?
            cleanup.append { [self] in
                sweep(cgroups, of: options.name, what: "a launch rolled back", mainPID: spawnedPID)
            }
            cleanup.append { [self] in
                // Before the sweep kills what is in them. Nothing spawned: its directories get
                // their parked names back; else they are swept with it. Either way it is let go.
                guard let standIn else { return }
                if spawnedPID == nil { giveBack(cgroups, to: standIn) }
                dismissStandIn(standIn)
            }
            // The app's own state directory survives eviction and relaunch.
            do { try FileIO.makeDirectories(config.paths.appStateDir(options.name), mode: 0o700) } catch {
                throw IceboxError("launch \(options.name)", error)
            }
            // Its own socket while descriptors are plenty, else the shared one; an app run as
            // another user always gets its own (it cannot reach the runtime directory).
            let notify: NotifyChannel
            if nextAppGetsOwnNotifySocket || privateSocket != nil {
                let (fd, path) = try AppNotifySocket.bind(
                    app: options.name, paths: config.paths, runAs: options.runAs, planned: privateSocket)
                notify = .own(fd: fd, path: path)
                cleanup.append {
                    close(fd); AppNotifySocket.remove(path)
                }
            } else {
                notify = .shared(path: try sharedNotifySocket())
            }
            let notifyPath = notify.path

            var request = SpawnRequest(
                executable: executable, arguments: options.command,
                environment: env + ["NOTIFY_SOCKET=\(notifyPath)"])
            request.workingDirectory = options.workingDirectory
            request.descriptorSoftLimit = descriptors.originalLimit
            request.identity = options.runAs?.identity
            if let initExecutable {
                // The init is pid 1 and its session's leader; the app its child (PIDNamespaceInit).
                request.executable = initExecutable
                request.arguments = PIDNamespaceInit.arguments(program: executable, command: options.command)
                request.newPIDNamespace = true
            }
            var opened: [Int32] = []
            // Ours go once the child has them; a stand-in's spawn keeps them until it answers.
            var keepOpened = false
            defer { if !keepOpened { for fd in opened { close(fd) } } }
            if options.attached {
                request.stdin = stdio[0]; request.stdout = stdio[1]; request.stderr = stdio[2]
            } else {
                // Never through a link (the logs directory is the daemon's, 0700: defence in depth).
                let logFD = open(config.paths.appLog(options.name), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
                if logFD < 0 { throw IceboxError("open the app log", SystemError("open", path: config.paths.appLog(options.name))) }
                opened.append(logFD)
                request.stdout = logFD; request.stderr = logFD
            }
            let descriptors: SpawnDescriptors
            do { descriptors = try cgroups.spawnDescriptors() } catch { throw IceboxError("launch \(options.name)", error) }
            descriptors.apply(to: &request)
            let launchStart = Clock.monotonicNanos()

            // The rest of the start, once the spawn's outcome is known. Its caller undoes.
            func finish(_ outcome: Result<SpawnedProcess, SpawnError>) throws -> LiveApp {
                let spawned: SpawnedProcess
                switch outcome {
                case .success(let s):
                    spawned = s
                    spawnedPID = s.handle.pid
                case .failure(let error):
                    switch error {
                    case .notFound: throw IceboxError(.commandNotFound(command: options.command[0]), error.description)
                    case .execFailed(_, let step, let err):
                        let who = options.runAs.map { " (the app runs as \($0.short))" } ?? ""
                        let hint =
                            step.hasPrefix("chdir")
                            ? "the app's user must be able to enter it\(who): give --cwd" : "check the file's execute permission\(who)"
                        throw IceboxError(
                            err == ENOENT
                                ? .commandNotFound(command: options.command[0]) : .commandNotExecutable(command: options.command[0]),
                            "cannot run \(error.description)", hint: err == EACCES ? hint : nil)
                    case .identityFailed:
                        throw IceboxError(.failure, "cannot launch \(options.name) as \(options.runAs?.short ?? "another user"): \(error)")
                    case .system(let e): throw IceboxError("launch \(options.name)", e)
                    }
                }
                let spawnNanos = spawned.execConfirmedNanos.saturatingSub(launchStart)
                cleanup.append {
                    // Killed, not waited for: the loop reaps it at its SIGCHLD (it is no app's).
                    if cgroups.isEmpty { _ = try? spawned.handle.send(SIGKILL) } else { cgroups.killAll() }
                }
                record.pid = spawned.handle.pid
                record.sinceMonotonicNanos = launchStart
                record.launchStartNanos = launchStart  // the ready deadline counts from here
                record.startTicks = ProcFS.stat(pid: spawned.handle.pid)?.startTimeTicks ?? 0
                record.spawnMethod = spawned.method.rawValue
                record.cgroup = cgroups.v2Path
                record.freezerV1 = cgroups.freezerV1Path
                record.memoryV1 = cgroups.memoryV1Path
                record.runsAs = options.runAs ?? Self.ownIdentity
                record.notifySocket = notifyPath == config.paths.notifySocket(options.name) ? nil : notifyPath
                try writeRecord(record, done: "the app was stopped again")
                var lifecycle = AppLifecycle(record: record, launchStart: launchStart)
                lifecycle.freezeTimeout = config.freezeTimeoutNanos
                let app = LiveApp(lifecycle: lifecycle, handle: spawned.handle, cgroups: cgroups, notify: notify)
                try watch(spawned.handle.pidfd, .pidfd(app.name))
                if let fd = notify.ownFD { try watch(fd, .notify(app.name)) }
                app.spawnEvent = Event(
                    app: app.name, pid: app.pid, kind: .spawn, to: .launching, durationNanos: spawnNanos,
                    detail:
                        "\(options.command.joined(separator: " ")): spawn → exec in \(DurationText.format(spawnNanos)) (\(spawned.method.rawValue), backend \(backend.rawValue), as \(Self.identityText(record)))",
                    at: .read()
                )
                app.spawnEvent?.backend = backend
                ended.removeValue(forKey: app.name)
                // Last, as nothing can fail after it: the stand-in, exiting since the exec, is
                // in the app's v1 cgroups; the app stays launching until its pidfd says it is gone.
                if let standIn { dismissStandIn(standIn, holding: app) }
                return app
            }

            if let standIn {
                do throws(SystemError) {
                    try standIn.standIn.send(request)
                    keepOpened = true
                    let fds = opened + descriptors.handOver()
                    return .spawning(
                        PendingLaunch(
                            options: options, standIn: standIn, request: request,
                            deadline: launchStart.saturatingAdd(config.freezeTimeoutNanos),
                            finish: finish, rollBack: undo,
                            release: { for fd in fds { close(fd) } }))
                } catch {
                    log(.daemon, app: options.name, pid: nil, "spawn stand-in unusable (\(error)); spawning directly")
                }
            }
            let outcome = directSpawn(request)
            descriptors.close()  // the child has them (or has failed): ours go now
            return .started(try finish(outcome))
        } catch {
            undo()
            throw error
        }
    }

    /// After a launch failed with nothing spawned: the stand-in's directories get their parked
    /// names back (its departure removes them). False when that cannot be done, or when more
    /// than the stand-in is in them (a timed-out one may have cloned the app after all).
    @discardableResult
    private func giveBack(_ cgroups: AppCgroups, to standIn: SpawnPool.Entry) -> Bool {
        let pairs = [(cgroups.freezerV1Path, standIn.directories.freezerV1), (cgroups.memoryV1Path, standIn.directories.memoryV1)]
        let others = pairs.compactMap(\.0).flatMap { CgroupTree.processes($0) }.filter { $0 != standIn.standIn.handle.pid }
        if !others.isEmpty { return false }
        for case (let app?, let parked?) in pairs where app != parked {
            if rename(app, parked) < 0 { return false }
        }
        return true
    }

    /// Spawns the direct way (Spawner: returns once the child has run its execve or failed).
    func directSpawn(_ request: SpawnRequest) -> Result<SpawnedProcess, SpawnError> {
        let spawn = { Result { () throws(SpawnError) in try Spawner.spawn(request) } }
        // CAP_SYS_ADMIN is effective only for the clone3 of a --pid-namespace launch.
        return request.newPIDNamespace ? Capabilities.withEffective(DaemonCapabilities.neededForPIDNamespace, spawn) : spawn()
    }

    /// The executable of a --pid-namespace app's init; a refusal (77) if it cannot be made.
    private func pidNamespaceInit(for options: LaunchOptions) throws(IceboxError) -> String {
        guard DaemonCapabilities.canMakePIDNamespaces() else {
            throw IceboxError(
                .permission,
                "cannot launch \(options.name) with --pid-namespace: this daemon (uid \(geteuid())) lacks CAP_SYS_ADMIN, which a new PID namespace needs",
                hint: "run the daemon as root (it keeps CAP_SYS_ADMIN permitted for this), or launch without --pid-namespace")
        }
        guard let path = PIDNamespaceInit.executable(onPath: { IceboxDaemon.executableOnPath() }) else {
            throw IceboxError(
                .commandNotFound(command: "icebox"),
                "cannot launch \(options.name) with --pid-namespace: no icebox executable to run its init with",
                hint: "put icebox on PATH (a program linking the library runs the init from it)")
        }
        return path
    }

    /// The ids the daemon runs as: an app launched without --user gets them.
    static let ownIdentity = RunAs.current

    /// Who an app runs as, for its spawn event.
    static func identityText(_ record: AppRecord) -> String {
        guard let runsAs = record.runsAs else { return "the daemon's user" }
        return runsAs.description + (record.options.runAs == nil ? "" : ", no capabilities, no_new_privs")
    }

    /// The app's environment: the caller's, then --env, then what icebox gives every app.
    func environment(for options: LaunchOptions) -> [String] {
        var order: [String] = []
        var values: [String: String] = [:]
        for entry in options.environment + options.extraEnvironment {
            guard let eq = entry.firstIndex(of: "=") else { continue }
            let key = String(entry[..<eq])
            if values[key] == nil { order.append(key) }
            values[key] = String(entry[entry.index(after: eq)...])
        }
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID"] {
            values.removeValue(forKey: key)
        }
        var given = [
            ("ICEBOX_APP_NAME", options.name), ("ICEBOX_STATE_DIR", config.paths.appStateDir(options.name)),
            ("ICEBOX_LAUNCH_REASON", launchReason(for: options.name)),
        ]
        // sd_watchdog_enabled(3) reads WATCHDOG_USEC (WATCHDOG_PID is optional, and unknown yet).
        if let watchdog = options.watchdogNanos { given.append(("WATCHDOG_USEC", String(max(watchdog / 1000, 1)))) }
        for (key, value) in given {
            values[key] = value
            if !order.contains(key) { order.append(key) }
        }
        return order.compactMap { key in values[key].map { "\(key)=\($0)" } }
    }

    /// `restore` when the last instance of this name was evicted or killed while suspended, else
    /// `fresh`.
    func launchReason(for name: String) -> String {
        guard let last = ended[name] else { return "fresh" }
        return last.state == .evicted || last.killedWhileSuspended ? "restore" : "fresh"
    }

    // MARK: Readiness

    /// Starts the next probe attempt; one in flight has passed its deadline: abandoned, retried.
    func startProbe(_ app: LiveApp) {
        if app.probe == nil { app.probe = ReadinessProbe(mode: app.record.options.ready) }
        guard let probe = app.probe else { return }
        if let fd = probe.watchedFD {
            unwatch(fd)
            probe.cancel()
            probeFailedAttempt(app)
            return
        }
        // A probe cloned into a frozen cgroup stops before the execve the spawn waits for:
        // while the app is frozen or freezing, the attempt waits for the next back-off.
        if case .command = probe.mode, app.freezer.freezeStarted() || app.freezer.isFrozen() || app.cgroups.events()?.frozen == true {
            probeFailedAttempt(app)
            return
        }
        let env = environment(for: app.record.options)
        let step = probe.start(
            environment: env, cwd: app.record.options.workingDirectory, identity: app.record.options.runAs?.identity,
            cgroups: app.cgroups.isEmpty ? nil : app.cgroups, descriptorSoftLimit: descriptors.originalLimit)
        if let problem = probe.takeStartProblem() {
            log(.error, app: app.name, pid: app.pid, "readiness probe cannot start: \(problem); tried again until the ready timeout")
        }
        followProbe(app, step)
    }

    func probeAnswered(_ app: LiveApp, events: UInt32) {
        guard let probe = app.probe, let fd = probe.watchedFD else { return }
        unwatch(fd)
        followProbe(app, probe.resume(events: events))
    }

    func followProbe(_ app: LiveApp, _ step: ProbeStep) {
        guard let probe = app.probe else { return }
        switch step {
        case .ready:
            app.probeAt = nil
            apply(.ready, to: app)
        case .notReady:
            probeFailedAttempt(app)
        case .wait(let fd, let events):
            do {
                try watch(fd, .probe(app.name), events: events)
                app.probeAt = probe.attemptDeadline
            } catch {
                probe.cancel()
                probeFailedAttempt(app)
            }
        }
    }

    func probeFailedAttempt(_ app: LiveApp) {
        guard let probe = app.probe else { return }
        app.probeAt = Clock.monotonicNanos().saturatingAdd(probe.nextDelay())
    }
}
