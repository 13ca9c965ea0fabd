import Glibc
import IceboxSystem

/// The supervisor: one thread runs one epoll loop over the control socket, every app's pidfd
/// and notify socket, probes and a signalfd; deadlines set its time-out, so an idle daemon
/// uses no CPU. One thread rather than actors: every transition is ordered, with no locks. A
/// freeze or thaw is a `FreezeOperation` stepped within its deadline, delaying no other app.
package final class Daemon {
    package struct Configuration: Sendable {
        package var paths: IceboxPaths
        package var cgroupRootOverride: String?
        /// Whether the user asked for the override (--cgroup-root, ICEBOX_CGROUP_ROOT): then an
        /// unusable one is an error; an embedding's own root (Supervisor) falls back instead.
        package var cgroupRootIsExplicit = true
        package var readyFD: Int32?  // write "ready" here once listening (autostart)
        /// The listening control socket from socket activation; nil: the daemon makes its own.
        package var listenerFD: Int32?
        /// Where the daemon's own READY=1/STOPPING=1 go (NOTIFY_SOCKET of a Type=notify unit).
        package var serviceNotifier: ServiceNotifier?
        package var freezeTimeoutNanos: UInt64 = 10_000_000_000
        /// How long the daemon lingers with no app and no client; nil: until stopped.
        package var idleExitNanos: UInt64? = 1_000_000_000
        /// Whether the engine owns the process: takes SIGTERM/SIGINT/SIGHUP as "stop, leaving
        /// the apps" and becomes the child subreaper. An embedded engine (a test) leaves both.
        package var ownsProcess = true
        package var policy: EvictionPolicy?  // from the daemon's flags; nil: the last saved one
        /// The node_exporter textfile kept fresh with the metrics (Daemon+Metrics); nil: none.
        package var metricsFile: String?
        /// When the event log and the apps' output logs rotate (Daemon+Logs).
        package var logRotation = LogRotation()
        /// The speed mechanisms left out (ICEBOX_WITHOUT; SpeedMechanism says why one would).
        package var without: Set<SpeedMechanism> = []

        package init(paths: IceboxPaths, cgroupRootOverride: String?) {
            self.paths = paths
            self.cgroupRootOverride = cgroupRootOverride
        }
    }

    enum Source {
        case listener
        case signals
        case client(Int32)
        case pidfd(String)
        case notify(String)
        case sharedNotify
        case probe(String)
        case cgroupEvents(String)
        case pressure
        case appLogs
        case standIn(Int32)
        case standInExit(Int32)  // a let-go stand-in's pidfd (StandInDepartures)
        case criu(String)  // the criu (or sync) of an app's checkpoint or restore
        case sweep(String)  // the cgroup.events of cgroups the sweeper removes, by app name
        case launchSpawn(Int32)  // a stand-in's socket, spawning a pending launch's app
    }

    struct Waiter {
        var client: Int32
        var remaining: Set<String>
        var failure: IceboxError.Reason?  // the first app's failure (its code is the request's)
        var held: [ControlReply] = []  // lines held while one of its apps waits on the kernel
    }

    let config: Configuration
    let facts: HostFacts
    var watches: LoopWatches
    let eventLog: EventLog
    var appLogs: AppLogRotator?
    var listener: Int32 = -1
    var signalFD: Int32 = -1
    var lockFD: Int32 = -1
    var clients = ClientTable()
    /// The cgroup roots (v1 memory, v2) kept open once they exist: memory counters open below.
    var counterRootHandles: [DirectoryHandle] = []
    var apps: [String: LiveApp] = [:]
    let appDeadlines = AppDeadlines()  // added and removed with `apps`
    /// Apps without a process: ended ones, and those on disk (state on-disk), by name.
    var ended: [String: AppRecord] = [:]
    var restores: [String: RestoreJob] = [:]  // by app name (Daemon+Restore)
    var waiters = WaiterTable()
    var inputs = LifecycleInputQueue()
    var idleExit: IdleExit
    var stop: DaemonStop?  // nil while it serves
    var stopping: Bool { stop != nil }
    var policyEngine = PolicyEngine()
    var registryWriter = RegistryWriter()
    /// Keeps the apps a thaw wakes from preempting the daemon before it reads the thaw back;
    /// off in an embedded engine (`ownsProcess` false), as is `freezeAside`.
    var thawGuard: PreemptionGuard
    /// Keeps the daemon's re-reads off the CPU the app's tasks must run on while a freeze waits.
    let freezeAside: CPUStepAside
    var descriptors = DescriptorShedding()
    /// The cgroup root, locked shared for the daemon's life (Daemon+TakeOver `holdCgroupRoot`).
    var cgroupRootLockFD: Int32 = -1
    var metricsFile: MetricsFile
    var acceptGate = AcceptGate()
    /// Stand-ins parked in v1 cgroups, so launches need no write to cgroup.procs.
    let spawnPool: SpawnPool
    let sweeper = CgroupSweeper()
    let pendingLaunches = PendingLaunches()
    /// Held while an app is on the v1 freezer (FreezerKeyHold says why); nil without one.
    let freezerKeyHold: FreezerKeyHold?

    package init(config: Configuration) throws(IceboxError) {
        self.config = config
        self.facts = HostFacts.discover(cgroupRootOverride: config.cgroupRootOverride, explicit: config.cgroupRootIsExplicit)
        idleExit = IdleExit(afterNanos: config.idleExitNanos)
        metricsFile = MetricsFile(path: config.metricsFile)
        eventLog = EventLog(path: config.paths.eventLog, rotation: config.logRotation)
        // Without stand-ins the pool has no v1 directory: it parks none, as on a pure v2 host.
        let standIns = !config.without.contains(.standIns)
        spawnPool = SpawnPool(
            freezerRoot: standIns ? facts.freezerV1Root : nil, memoryRoot: standIns ? facts.memoryV1Root : nil)
        freezerKeyHold =
            config.without.contains(.freezerKeyHold) ? nil : facts.freezerV1Root.map { FreezerKeyHold(root: $0) }
        thawGuard = PreemptionGuard(enabled: config.ownsProcess && !config.without.contains(.thawPriority))
        freezeAside = CPUStepAside(enabled: config.ownsProcess && !config.without.contains(.freezeAside))
        do { watches = try LoopWatches() } catch { throw IceboxError("start the daemon", error) }
    }

    /// Runs until idle or stopped; false if another daemon already serves this runtime directory.
    package func run() throws(IceboxError) -> Bool {
        try config.paths.prepare()
        lockFD = try config.paths.openLockFile()
        if !Self.takeLock(lockFD, path: config.paths.lockFile, socket: config.paths.controlSocket) {
            close(lockFD)
            lockFD = -1
            signalReady(busy: true)
            return false
        }
        defer {
            releaseLocks()
            acceptGate.releaseReserve()
        }
        // The holder's pid, so a client that finds the lock held but no socket can say who.
        _ = ftruncate(lockFD, 0)
        _ = "\(getpid())\n".withCString { pwrite(lockFD, $0, strlen($0), 0) }
        do {
            // Orphans of our apps (double-forked daemons) land here instead of on PID 1.
            if config.ownsProcess { try Reaper.becomeSubreaper() }
            raiseDescriptorLimit()  // every app holds at least its pidfd: 1024 would cap ~1000 apps
            acceptGate.holdReserve()
            // SIGPIPE is blocked in any case: a client that goes away must not kill the engine.
            let handled = config.ownsProcess ? [SIGCHLD, SIGTERM, SIGINT, SIGHUP] : [SIGCHLD]
            Signals.block(handled + [SIGPIPE])
            signalFD = try Signals.signalFD(handled)
            try watch(signalFD, .signals)
            if let inherited = config.listenerFD {
                listener = inherited
            } else {
                listener = try UnixSocket.listen(path: config.paths.controlSocket)
            }
            try watch(listener, .listener)
        } catch {
            throw IceboxError("start the daemon", error)
        }
        loadRegistry()
        // After the leftovers are cleared (a hold is an empty cgroup no app claims).
        updateFreezerKeyHold()
        loadPolicy()
        rearmFrozenAppTimers()
        startAppLogRotation()
        startSpawnPool()
        signalReady()
        let without = SpeedMechanism.allCases.filter(config.without.contains)
        logDaemon(
            "daemon started (pid \(getpid()), cgroup root \(facts.cgroupRoot ?? "none")), auto backend \(facts.autoBackendChoice)"
                + (without.isEmpty ? "" : ", without " + without.map(\.rawValue).joined(separator: ", ")))
        if config.ownsProcess && !config.without.contains(.imageLock) { lockProgramImage() }
        _ = idleExit.deadline(idle: isIdle, now: Clock.monotonicNanos())
        loop()
        config.serviceNotifier?.notify("STOPPING=1")
        // Before the stand-ins go: a rolled-back launch's stand-in may be in what is swept.
        rollBackPendingLaunches()
        drainSweeps()
        flushRegistry()
        // A socket passed by socket activation belongs to the service manager, path and all.
        if config.listenerFD == nil { unlink(config.paths.controlSocket) }
        close(listener)
        drainSpawnPool()
        closeSharedNotify()
        freezerKeyHold?.release()
        if apps.isEmpty { removeEmptyRoots() }
        logDaemon("daemon stopped")
        writeMetricsFile(now: Clock.monotonicNanos())
        // Everything is written: the locks go before the stop requesters hear "done", or a
        // command run right after `daemon --stop` starts a daemon that finds them held while
        // this one drains its last replies (up to a second), and says "busy".
        releaseLocks()
        for fd in clients.stopRequesters { finish(fd, .success) }
        drainClients(until: Clock.monotonicNanos().saturatingAdd(1_000_000_000))
        if case .loopFailed(let failure)? = stop { throw failure }
        return true
    }

    /// Keeps the daemon's own code and data in memory (ProgramImage.lockInMemory says why),
    /// after it said it is ready; a daemon that may not lock that much says so and runs on.
    func lockProgramImage() {
        let start = Clock.monotonicNanos()
        do throws(SystemError) {
            let bytes = try ProgramImage.lockInMemory()
            let took = DurationText.format(Clock.monotonicNanos().saturatingSub(start))
            logDaemon("program image locked in memory: \(bytes / 1024) KiB, in \(took)")
        } catch {
            logDaemon(
                "could not lock the program image in memory (\(error)); under memory pressure the daemon's code may be paged out, and commands start slower after an idle spell; CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK (ulimit -l) allows it"
            )
        }
    }

    /// How long a starting daemon waits for the lock of one on its way out (its control socket
    /// already removed), which lets go within milliseconds; one that holds on longer is stuck.
    package static let lockHandOverNanos: UInt64 = 2_000_000_000

    /// Takes the runtime directory's lock (flock on `fd`), at once or, when its holder has
    /// already removed its control socket (as one exiting idle does just before), once it lets
    /// go (within `wait`); a holder whose socket is in place serves. The wait is on inotify (the
    /// holder's close of the lock file), each close followed by a try; without it, 10 ms apart.
    static func takeLock(_ fd: Int32, path: String, socket: String, wait: UInt64 = lockHandOverNanos) -> Bool {
        func tryLock() -> Int32 { flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno }
        let first = tryLock()
        if first == 0 { return true }
        guard first == EWOULDBLOCK, !FileIO.exists(socket) else { return false }
        let deadline = Clock.monotonicNanos().saturatingAdd(wait)
        // Refused (out of instances or watches, say): the tries are paced instead (above).
        var watcher = try? Inotify()
        // Same: without the watch a close could be missed.
        if let w = watcher, (try? w.addWatch(path, mask: UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_DELETE_SELF))) == nil {
            watcher = nil
        }
        while true {
            // Tried after the watch is in place, so a close in between is not missed.
            let failed = tryLock()
            if failed == 0 { return true }
            let now = Clock.monotonicNanos()
            guard failed == EWOULDBLOCK, now < deadline else { return false }
            Poll.nap(
                on: watcher?.fd ?? -1, events: Int16(POLLIN),
                timeoutNanos: watcher == nil ? min(deadline - now, 10_000_000) : deadline - now)
            // Only drains the queue: every wake-up is followed by a try of the lock, which decides.
            _ = try? watcher?.read()
        }
    }

    /// Lets go of the runtime directory's lock and the cgroup root's: another daemon may start.
    func releaseLocks() {
        if lockFD >= 0 { close(lockFD) }
        lockFD = -1
        if cgroupRootLockFD >= 0 { close(cgroupRootLockFD) }
        cgroupRootLockFD = -1
    }

    /// The loop has ended: the last replies (daemon --stop's) go out, for at most a second.
    func drainClients(until deadline: UInt64) {
        flushReplies()
        while clients.connections.contains(where: { $0.pendingOutput > 0 }) {
            let now = Clock.monotonicNanos()
            if now >= deadline { break }
            // The loop's own failure (DaemonStop.loopFailed) ends the drain: its replies cannot be waited for.
            guard let ready = try? watches.epoll.wait(timeoutNanos: min(deadline - now, 1_000_000_000)) else { break }
            for (token, events) in ready {
                if case .client(let fd) = watches.source(token), events & EpollEvents.writable != 0 { flushClient(fd) }
            }
        }
        for fd in Array(clients.descriptors) { closeClient(fd) }
    }

    /// Keeps the v1 freezer's static key on while an app uses the v1 freezer (FreezerKeyHold).
    /// A failure costs only speed: logged once, and tried again at the next such app.
    func updateFreezerKeyHold() {
        guard let hold = freezerKeyHold else { return }
        guard apps.values.contains(where: { $0.lifecycle.record.backend == .cgroup1 }) else { return hold.release() }
        guard let error = hold.acquire(), !hold.failureLogged else { return }
        hold.failureLogged = true
        log(
            .daemon, app: "-", pid: nil,
            "cannot keep an empty v1 freezer cgroup frozen (\(error)): each freeze and thaw flips the kernel's freezer key")
    }

    /// With no app left, the roots this daemon's apps lived under go too, if empty (else rmdir
    /// fails).
    func removeEmptyRoots() {
        for root in [facts.memoryV1Root, facts.freezerV1Root, facts.cgroupRoot].compactMap({ $0 })
        where config.cgroupRootOverride != nil || root != facts.cgroupRoot {
            rmdir(root)
        }
    }

    /// Raises the soft limit on open descriptors to the hard limit. Apps are spawned with the
    /// original one (programs using select() rely on staying below 1024).
    func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        descriptors.budget.limit = UInt64(limit.rlim_cur)
        guard limit.rlim_cur < limit.rlim_max else { return }
        descriptors.originalLimit = UInt64(limit.rlim_cur)
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { descriptors.budget.limit = UInt64(limit.rlim_max) }
    }

    /// Tells the client that started this daemon "ready", or "busy" (another holds the lock).
    func signalReady(busy: Bool = false) {
        if !busy {
            config.serviceNotifier?.notify(
                "READY=1\nMAINPID=\(getpid())\nSTATUS=listening on \(config.listenerFD == nil ? config.paths.controlSocket : "the socket-activated control socket")"
            )
        }
        guard let fd = config.readyFD else { return }
        let word = busy ? "busy\n" : "ready\n"
        _ = word.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    // MARK: The loop

    func loop() {
        // The short slice lets the loop's wake-ups preempt an app's busy start (EEVDF runs a
        // task to its slice otherwise); apps do not get it (the spawn puts it back).
        SchedulerLatency.makeLatencySensitive(sliceNanos: 1_000_000)
        while true {
            let now = Clock.monotonicNanos()
            fireDeadlines(now: now)
            flushRegistry()
            flushReplies()
            flushRecordsAfterReplies()
            // After the flushes: a client just closed may have left the daemon idle (or done).
            if shouldExit(now: Clock.monotonicNanos()) { return }
            // Not for a freeze that waits only for its app's SIGCHLD: stepped aside, the wake-up
            // must rouse an idle CPU first (1 busy process froze in 104–134 µs against 53–70 µs,
            // benchmarks/RESULTS.md, session 50).
            freezeAside.settle(
                freezeWaits: apps.values.contains { app in
                    app.freeze.map { $0.operation.direction == .freeze && !$0.operation.waitsOnAnnouncement } ?? false
                })
            let timeout = nextTimeoutNanos(now: Clock.monotonicNanos())
            let ready: [(token: UInt64, events: UInt32)]
            do { ready = try watches.epoll.wait(timeoutNanos: timeout) } catch {
                // A bug of ours (Epoll.wait): stop as on SIGTERM, leaving the apps; `run` fails.
                stop = .loopFailed(IceboxError("wait for the daemon's events", error))
                log(.error, app: "-", pid: getpid(), "the event loop failed: \(error); stopping, leaving the apps")
                return
            }
            for (token, events) in ready {
                guard let source = watches.source(token) else { continue }
                dispatch(source, events: events)
            }
        }
    }

    func shouldExit(now: UInt64) -> Bool {
        switch stop {
        case .leavingApps?, .loopFailed?: return true
        case .endingApps?: return isIdle
        case nil: return idleExit.isDue(idle: isIdle, now: now)
        }
    }

    /// No app, and no client but those waiting for the daemon's stop.
    var isIdle: Bool {
        apps.isEmpty && restores.isEmpty && pendingLaunches.isEmpty && sweeper.isEmpty && clients.onlyStopRequesters
    }

    func dispatch(_ source: Source, events: UInt32) {
        switch source {
        case .listener: acceptClients()
        case .signals: handleSignals()
        case .client(let fd): clientReady(fd, events: events)
        case .pidfd(let name): if let app = apps[name] { appExited(app) }
        case .notify(let name): if let app = apps[name] { receiveNotify(app) }
        case .sharedNotify: receiveSharedNotify()
        case .cgroupEvents(let name): if let app = apps[name] { cgroupChanged(app) }
        case .probe(let name): if let app = apps[name] { probeAnswered(app, events: events) }
        case .pressure: pressureFired(events: events)
        case .appLogs: appLogsChanged()
        case .standIn(let fd): standInReadable(fd)
        case .standInExit(let fd): standInExited(fd)
        case .criu(let name): criuExited(name)
        case .sweep(let name): sweepChanged(name)
        case .launchSpawn(let fd): standInAnswered(fd)
        }
    }

    func watch(_ fd: Int32, _ source: Source, events: UInt32 = EpollEvents.readable) throws(SystemError) {
        try watches.watch(fd, source, events: events)
    }

    func unwatch(_ fd: Int32) { watches.unwatch(fd) }

    func handleSignals() {
        for sig in Signals.drain(signalFD: signalFD) {
            if sig == SIGCHLD {
                reapChildren()
                stepFreezesEndedByStop()
            } else {
                // As `icebox daemon --stop`: the apps stay, for the next daemon to re-adopt.
                logDaemon("\(Signals.name(of: sig)) received: stopping; apps left as they are")
                leaveAppsAndStop()
            }
        }
    }

    /// Reaps every exited child: each owner's through its own path (with its status), orphans
    /// here. Except while a launch waits on a stand-in: an app it cloned as our child that ends
    /// at once (`sh -c 'exit 7'`) can end before its answer is read; reaped as an orphan, its
    /// status would be lost. So answers already in are taken first, and an unclaimed child is
    /// left a zombie until no launch is pending (`completeSpawn` reaps again).
    func reapChildren() {
        for pending in pendingLaunches.all { standInAnswered(pending.watchDescriptor) }
        while let pid = Reaper.peekExitedChild() {
            switch exitedChild(pid) {
            case .app(let app): appExited(app)
            case .criu(let name): criuExited(name)  // as its pidfd would report: reaped there, with its status
            case .probe(let app): probeAnswered(app, events: EpollEvents.readable)  // as its pidfd would report
            case .standIn(let fd): standInExited(fd)  // as its pidfd would report
            case .perhapsPendingLaunch: return  // see above
            case .orphan: Reaper.reap(pid: pid)
            }
        }
    }

    /// A SIGSTOP freeze is done when the last of the app's tasks stops, and the kernel tells the
    /// parent just then (SIGCHLD, CLD_STOPPED): so a waiting one is read again at once, not at
    /// its next re-read (up to 5 ms away; benchmarks/RESULTS.md, session 50). SIGCHLDs do not
    /// queue: each waiting SIGSTOP freeze is read.
    func stepFreezesEndedByStop() {
        for app in apps.values where app.freeze?.operation.endsWithChildStop == true { stepOperation(app) }
    }

    /// Whose an exited child is: all but an orphan are reaped by their owner, with the status.
    enum ExitedChild {
        case app(LiveApp), criu(String), probe(LiveApp), standIn(Int32)
        /// Unclaimed while a launch waits on a stand-in: it may be that launch's app.
        case perhapsPendingLaunch
        case orphan
    }

    func exitedChild(_ pid: pid_t) -> ExitedChild {
        if let app = apps.values.first(where: { $0.pid == pid }) { return .app(app) }
        if let name = criuRunning(pid: pid) { return .criu(name) }
        if let app = apps.values.first(where: { $0.probe?.childPID == pid }) { return .probe(app) }
        if let fd = spawnPool.departures.pidfd(of: pid) { return .standIn(fd) }
        return pendingLaunches.isEmpty ? .orphan : .perhapsPendingLaunch
    }

    /// Terminates every app the graceful way; the loop exits once they have all ended.
    func stopAll(timeoutNanos: UInt64) {
        // A stop that leaves the apps, asked first, still ends the loop at once.
        if stop == nil { stop = .endingApps }
        rollBackPendingLaunches()
        for app in Array(apps.values) { apply(.terminate(waiter: nil, timeout: timeoutNanos), to: app) }
    }

    /// Stops without touching the apps: each stays running or frozen, its cgroup and record in
    /// place, for the next daemon to re-adopt (a grace under way keeps its deadline).
    func leaveAppsAndStop() {
        stop = .leavingApps
        // A launch whose spawn has not been answered has no app to leave: undone.
        rollBackPendingLaunches()
        for app in apps.values {
            app.probe?.cancel()
            // A launch client would otherwise hear only that the connection closed.
            for id in app.lifecycle.launchWaiters {
                let line =
                    "icebox: the daemon stopped while \(app.name) was launching; it is left launching, its --ready-timeout deadline kept, for the next daemon (icebox ps shows it)"
                settle(id, app: app.name, line: line, failed: .other(.unavailable))
            }
            if let fd = app.attachedClient {
                send(fd, .warning, "icebox: the daemon stopped; \(app.name) keeps running (icebox ps shows it once a daemon runs again)")
            }
        }
        saveRegistry()
    }

    // MARK: Events and registry

    func log(_ event: Event) {
        eventLog.appendOrComplain(JSONLines.encode(event))
        metricsFile.record(event, now: Clock.monotonicNanos())
        if let app = apps[event.app], let fd = app.attachedClient {
            var reply = ControlReply(kind: .event)
            reply.event = event
            send(fd, reply)
        }
    }

    /// An event of only a kind, an app, a pid and a detail, stamped now.
    func log(_ kind: EventKind, app: String, pid: pid_t?, _ detail: String) {
        log(Event(app: app, pid: pid, kind: kind, detail: detail, at: .read()))
    }

    /// An event of the daemon's own (`daemon`, app "-").
    func logDaemon(_ detail: String) { log(.daemon, app: "-", pid: getpid(), detail) }

    /// Marks an app's record (nil: every record) for this turn's write (flushRegistry).
    func saveRegistry(_ name: String? = nil) { registryWriter.mark(name) }

    /// A record that cannot be written stays marked for the next turn; logged once.
    func flushRegistry() {
        writeRecords(registryWriter.takeDirty { Set(apps.keys).union(ended.keys) })
    }

    /// The records no reply waits for (a confirmed freeze's), written after the turn's replies.
    func flushRecordsAfterReplies() { writeRecords(registryWriter.takeAfterReplies()) }

    /// Writes the current record of each app named; one that fails is marked for the next turn.
    private func writeRecords(_ names: Set<String>) {
        for name in names {
            guard let record = apps[name]?.lifecycle.persistentRecord ?? ended[name] else { continue }
            do throws(IceboxError) { try writeRecord(record) } catch { registryWriter.mark(name) }
        }
    }

    /// Writes one record now (`intent`: before the step it records, so synced), logging a failure
    /// (once) or its end. `done`: what holds all the same if it fails after the kernel acted.
    func writeRecord(_ record: AppRecord, intent: Bool = false, done: String? = nil) throws(IceboxError) {
        do {
            try Registry.write(record, directory: config.paths.registryDir, durable: intent, done: done)
            if registryWriter.written(record.name) {
                log(.daemon, app: record.name, pid: nil, "registry record written again")
            }
        } catch {
            if registryWriter.failed(record.name, error.message) {
                log(.error, app: record.name, pid: nil, error.description)
            }
            throw error
        }
    }

    /// Removes app `name`'s record, or says in the event log why it could not: a record left
    /// behind shows the app in `icebox ps` and brings it back at the next start.
    func removeRecord(_ name: String) {
        do { try Registry.remove(name, directory: config.paths.registryDir) } catch {
            log(.error, app: name, pid: nil, "registry: \(error)")
        }
    }

    /// Writes back the record of before an undone operation, or logs why it could not.
    func restoreRecord(_ record: AppRecord) {
        do { try writeRecord(record) } catch { log(.error, app: record.name, pid: nil, "registry: \(error)") }
    }

    /// Undoes the record of intent of a failed launch or adoption: back to `previous`, or none.
    func restoreOrRemoveRecord(_ name: String, previous: AppRecord?) {
        if let previous { restoreRecord(previous) } else { removeRecord(name) }
    }

    /// Reads the registry a previous daemon left: ended apps are kept for `ps --all` and
    /// relaunch; live ones are re-adopted if they still run (Daemon+TakeOver).
    func loadRegistry() {
        for record in Registry.load(directory: config.paths.registryDir) {
            if record.state.isEnded {
                ended[record.name] = record
            } else if record.state == .onDisk || record.diskIntent != nil {
                recoverDisk(record)
            } else if record.pid == 0 {
                finishInterruptedLaunch(record)
            } else {
                takeOver(record)
            }
        }
        adoptUnrecordedCgroups()
        saveRegistry()
    }
}
