import Glibc
import IceboxSystem

/// `icebox adopt`: a running process tree or cgroup becomes an app (fresh cgroups, a pidfd, a
/// record); `icebox release` hands an app back, still running, no longer supervised.
extension Daemon {
    /// The most rounds of "find the tree, move what is outside" an adoption takes, and the
    /// most time: every move is final (the moved task is frozen, its later children born
    /// inside), so a tree converges in two or three rounds even under a fork storm; one still
    /// growing is refused and rolled back. This bounds how long an adoption holds the loop:
    /// a fork storm's 81 processes took 33 ms; one process 0.5 ms, or 15–20 ms for the first
    /// write to cgroup.procs after a quiet spell (likely an RCU grace period; a launch clones
    /// into the cgroup and never pays it).
    static let adoptMoveRounds = 64
    static let adoptMoveLimitNanos: UInt64 = 1_000_000_000
    static let adoptMaxProcesses = 10_000

    /// Checks, moves, records and watches; returns the client's line.
    func adoptNow(_ options: AdoptOptions, client fd: Int32) throws(IceboxError) -> String {
        try AppName.validateForLaunch(options.name)
        try refuseTakenName(options.name, choose: "name")
        let target = try adoptionTarget(options.source)
        let checkedStart = ProcFS.stat(pid: target.main)?.startTimeTicks
        try refuseForeign(target, client: UnixSocket.peerCredentials(fd)?.pid)
        let backend = try facts.resolve(options.backend)
        guard facts.cgroup2Usable || backend == .cgroup1 else {
            throw IceboxError(
                .unavailable, "cannot adopt \(target.what): this host has no cgroup icebox can move it into (backend \(backend.rawValue))",
                hint: "adopt needs a usable cgroup v2 root or the v1 freezer; see icebox doctor")
        }
        let main = target.main
        let origin = place(of: main)
        // What relaunch needs, read before the move (the process may exit at any time).
        var command = AppMarks.commandLine(of: main)
        // Only a label for a relaunch: a process gone meanwhile gets "pid-N" (the move finds it
        // gone).
        if command.isEmpty { command = [(try? FileIO.read("/proc/\(main)/comm"))?.trimmed() ?? "pid-\(main)"] }
        let launchOptions = options.launchOptions(
            command: command, workingDirectory: FileIO.readLink("/proc/\(main)/cwd"),
            environment: (AppMarks.environment(of: main) ?? []).filter { $0.contains("=") })
        // The pidfd holds the process checked above only if its start time is the same.
        guard let handle = try? ProcessHandle(adopting: main), let stat = ProcFS.stat(pid: main), stat.state != "Z",
            stat.startTimeTicks == checkedStart
        else {
            throw IceboxError(.failure, "no process with pid \(main) (it exited)", hint: "give the pid of a running process")
        }
        let notifyPath = try sharedNotifySocket()

        // Intent before action, as a launch: the record names the cgroups and the origins
        // before anything moves, without the move's time (adoptMoveNanos): unfinished, for a
        // successor to undo (`undoInterruptedAdoption`), never tasks frozen in an unnamed cgroup.
        let start = Clock.monotonicNanos()
        let wall = Clock.rfc3339(wallNanos: Clock.wallNanos())
        func under(_ root: String?) -> String? { root.map { $0 + "/" + options.name } }
        var record = AppRecord(
            name: options.name, options: launchOptions, pid: main, state: .active, sinceMonotonicNanos: start, sinceWall: wall,
            launchedWall: wall, backend: backend, cgroup: under(facts.cgroup2Usable ? facts.cgroupRoot : nil),
            freezerV1: under(backend == .cgroup1 ? facts.freezerV1Root : nil))
        record.startTicks = stat.startTimeTicks
        record.launchStartNanos = start
        record.spawnMethod = "adopted"
        record.notifySocket = notifyPath
        record.adoptedFrom = origin.v2 ?? ""
        record.adoptedFromFreezerV1 = origin.freezerV1
        record.adoptedFromMemoryV1 = origin.memoryV1
        let previous = ended[options.name]
        try writeRecord(record, intent: true)
        let cgroups: AppCgroups
        do {
            // No v1 memory cgroup: v1 moves no charge with a task (its memory is its Pss), and a
            // first attach to a new v1 memory cgroup costs ~11 ms the loop would wait for.
            cgroups = try AppCgroups.create(
                name: options.name, v2Root: facts.cgroup2Usable ? facts.cgroupRoot : nil,
                freezerV1Root: backend == .cgroup1 ? facts.freezerV1Root : nil, memoryV1Root: nil, backend: backend)
        } catch {
            restoreOrRemoveRecord(options.name, previous: previous)
            throw error
        }
        // The move's time: what the processes were held for, from the freeze to the thaw.
        let moveStart = Clock.monotonicNanos()
        let moved: Int, rounds: Int, origins: [pid_t: CgroupPlace]
        do {
            (moved, rounds, origins) = try moveTree(target, into: cgroups, start: moveStart)
        } catch {
            _ = cgroups.removeEmptied()
            restoreOrRemoveRecord(options.name, previous: previous)
            throw error
        }
        do { try cgroups.endMoveHold() } catch {
            log(.error, app: options.name, pid: main, "adopt: the move's freeze could not be lifted: \(error)")
        }
        let moveNanos = Clock.monotonicNanos().saturatingSub(moveStart)
        record.cgroup = cgroups.v2Path
        record.freezerV1 = cgroups.freezerV1Path
        record.memoryV1 = cgroups.memoryV1Path
        record.adoptMoveNanos = moveNanos
        do { try writeRecord(record, intent: true) } catch {
            rollBack(cgroups, to: origin, origins: origins)
            restoreOrRemoveRecord(options.name, previous: previous)
            throw error
        }
        var lifecycle = AppLifecycle(adopting: record, now: .read())
        lifecycle.freezeTimeout = config.freezeTimeoutNanos
        let app = LiveApp(lifecycle: lifecycle, handle: handle, cgroups: cgroups, notify: .shared(path: notifyPath))
        do { try watch(handle.pidfd, .pidfd(app.name)) } catch {
            rollBack(cgroups, to: origin, origins: origins)
            restoreOrRemoveRecord(options.name, previous: previous)
            throw IceboxError("adopt \(options.name)", error)
        }
        ended.removeValue(forKey: app.name)
        apps[app.name] = app
        appDeadlines.add(app)
        rebalanceDescriptors(adding: app)
        if backend == .cgroup1 { updateFreezerKeyHold() }
        let commandText = command.joined(separator: " ")
        let who = target.what == "pid \(main)" ? "pid \(main) (\(commandText))" : "\(target.what) (main pid \(main), \(commandText))"
        let detail =
            "adopted \(who): \(moved) process\(moved == 1 ? "" : "es") moved from \(origin.v2 ?? origin.freezerV1 ?? "?") in \(DurationText.format(moveNanos)) (\(rounds) round\(rounds == 1 ? "" : "s"), backend \(backend.rawValue)); its exit status cannot be known (icebox is not its parent), its output is not captured"
        var event = Event(app: app.name, pid: main, kind: .adopted, to: .active, durationNanos: moveNanos, detail: detail, at: .read())
        event.backend = backend
        event.tasks = moved
        log(event)
        if app.hasExited() { appExited(app) }
        return
            "\(app.name)  adopted  pid \(main), \(moved) process\(moved == 1 ? "" : "es") moved into \(cgroups.v2Path ?? cgroups.freezerV1Path ?? "its cgroup") in \(DurationText.format(moveNanos)) (backend \(backend.rawValue))"
    }

    /// The processes `adopt` was given: the main one, what to call them, how to find them all.
    struct AdoptionTarget {
        let main: pid_t
        let what: String
        let members: () -> [pid_t]
    }

    private func adoptionTarget(_ source: AdoptSource) throws(IceboxError) -> AdoptionTarget {
        switch source {
        case .pid(let pid):
            guard pid > 0 else { throw IceboxError(.usage, "invalid pid \(pid)", hint: "give the pid of a running process") }
            if pid == 1 {
                throw IceboxError(
                    .usage, "refusing to adopt pid 1: it is the init process, which every other process depends on",
                    hint: "adopt one of its descendants instead")
            }
            // An unreadable stat is a process gone (or never there): refused below as such.
            guard let statLine = try? FileIO.read("/proc/\(pid)/stat"), let stat = ProcFS.parseStat(statLine), stat.state != "Z" else {
                throw IceboxError(.failure, "no process with pid \(pid)", hint: "give the pid of a running process (see ps)")
            }
            var buf = [CChar](repeating: 0, count: 8)
            let hasExecutable = readlink("/proc/\(pid)/exe", &buf, 8) > 0 || errno == EACCES
            if AdoptionCheck.isKernelThread(statLine: statLine, hasExecutable: hasExecutable) {
                throw IceboxError(
                    .usage, "refusing to adopt pid \(pid): it is a kernel thread, which has no cgroup of its own to move",
                    hint: "give the pid of a user process")
            }
            return AdoptionTarget(main: pid, what: "pid \(pid)") { AdoptionCheck.tree(root: pid, limit: Self.adoptMaxProcesses + 1) }
        case .cgroup(let path):
            let dir = try cgroupDirectory(path)
            let processes = CgroupTree.processes(dir)
            guard !processes.isEmpty else {
                throw IceboxError(.failure, "no process in the cgroup \(dir) (nor its sub-cgroups)", hint: "give a cgroup with processes")
            }
            // The main process: one whose parent is outside the cgroup, the oldest of several.
            let main = AppMarks.mainProcess(among: processes) ?? processes[0]
            return AdoptionTarget(main: main, what: "cgroup \(dir)") { CgroupTree.processes(dir) }
        }
    }

    /// A `--cgroup` path: absolute, a directory of a cgroup mount (v2, or the v1 freezer),
    /// reached through no symbolic link (it could point elsewhere), and not a hierarchy's root.
    private func cgroupDirectory(_ path: String) throws(IceboxError) -> String {
        guard path.hasPrefix("/") else {
            throw IceboxError(.usage, "--cgroup \(path): give an absolute path under a cgroup mount")
        }
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let resolved = realpath(trimmed, nil) else {
            throw IceboxError(.failure, "no cgroup at \(trimmed)", hint: "give an existing cgroup directory")
        }
        let real = String(cString: resolved)
        free(resolved)
        if real != trimmed {
            throw IceboxError(
                .usage, "refusing --cgroup \(trimmed): it goes through a symbolic link (to \(real))",
                hint: "give the cgroup's real path")
        }
        let mounts = [facts.mounts.unified, facts.mounts.freezerV1].compactMap { $0 }
        guard let mount = mounts.first(where: { CgroupMembership.isWithin(real, $0) }) else {
            throw IceboxError(
                .usage, "refusing --cgroup \(real): it is not under a cgroup mount (\(mounts.joined(separator: ", ")))",
                hint: "give a cgroup directory, e.g. \(mounts.first ?? "/sys/fs/cgroup")/NAME")
        }
        if real == mount {
            throw IceboxError(.usage, "refusing --cgroup \(real): it is the root of the hierarchy, which holds every process")
        }
        guard FileIO.exists(real + "/cgroup.procs") else {
            throw IceboxError(.usage, "--cgroup \(real) is not a cgroup directory (no cgroup.procs)")
        }
        return real
    }

    /// The refusals that look at every process: this daemon or the calling client among them,
    /// one already an app's, one another manager keeps, another user's for a daemon unable.
    private func refuseForeign(_ target: AdoptionTarget, client: pid_t?) throws(IceboxError) {
        let members = target.members()
        if members.count > Self.adoptMaxProcesses {
            throw IceboxError(.failure, "refusing to adopt \(target.what): more than \(Self.adoptMaxProcesses) processes")
        }
        let own = getpid()
        if members.contains(own) {
            throw IceboxError(
                .usage, "refusing to adopt \(target.what): it holds this icebox daemon (pid \(own)), which would freeze with it",
                hint: "give a process tree or cgroup that does not hold the daemon")
        }
        if let client, members.contains(client) {
            throw IceboxError(
                .usage, "refusing to adopt \(target.what): it holds this icebox command (pid \(client)), which would freeze with it",
                hint: "run icebox adopt from outside the tree (another shell), not from within it")
        }
        let unified = facts.mounts.unifiedMount
        for pid in members {
            let place = place(of: pid)
            for app in apps.values {
                let inside =
                    [(place.v2, app.cgroups.v2Path), (place.freezerV1, app.cgroups.freezerV1Path)].contains { have, dir in
                        guard let have, let dir else { return false }
                        return CgroupMembership.isWithin(have, dir)
                    }
                if inside || app.pid == pid {
                    throw IceboxError(
                        .failure, "refusing to adopt \(target.what): pid \(pid) is already in the app \(app.name)'s cgroup",
                        hint: "it is supervised already (icebox ps); icebox release \(app.name) first to adopt it under another name")
                }
            }
            // A process gone meanwhile has no owner to check: the move finds it gone.
            if let unified, let text = try? FileIO.read("/proc/\(pid)/cgroup"), let relative = ProcFS.unifiedCgroup(in: text),
                let owner = AdoptionCheck.foreignOwner(ofCgroup: relative)
            {
                let dir = unified.directory(ofCgroup: owner.path)
                if !(dir.map(Self.isDelegated) ?? false) { throw AdoptionCheck.refusal(for: owner, what: target.what) }
            }
            // Likewise: gone meanwhile, no uid to check.
            if geteuid() != 0, let status = try? FileIO.read("/proc/\(pid)/status"), let uid = AdoptionCheck.realUID(inStatus: status),
                uid != geteuid()
            {
                throw IceboxError(
                    .permission,
                    "refusing to adopt \(target.what): pid \(pid) belongs to uid \(uid), and this daemon (uid \(geteuid())) may not move or signal it",
                    hint: "adopt it with a daemon running as root, or as that user's own daemon")
            }
        }
    }

    /// Whether systemd delegated a cgroup (Delegate=yes): xattr trusted.delegate or user.delegate.
    static func isDelegated(_ dir: String) -> Bool {
        ["trusted.delegate", "user.delegate"].contains { ExtendedAttribute.value(of: $0, path: dir)?.first == UInt8(ascii: "1") }
    }

    /// The cgroups `pid` is in now, one per hierarchy icebox uses.
    func place(of pid: pid_t) -> CgroupPlace {
        // A process gone meanwhile is in no cgroup: the empty place, which moves nothing back.
        guard let text = try? FileIO.read("/proc/\(pid)/cgroup") else { return CgroupPlace() }
        let m = facts.mounts
        return CgroupPlace(
            v2: m.unifiedMount.flatMap { CgroupMembership.path(in: text, controller: nil, mount: $0) },
            freezerV1: m.freezerV1Mount.flatMap { CgroupMembership.path(in: text, controller: "freezer", mount: $0) },
            memoryV1: m.memoryV1Mount.flatMap { CgroupMembership.path(in: text, controller: "memory", mount: $0) })
    }

    /// Moves the tree into the app's cgroups, frozen on arrival, until nothing is left outside
    /// (`adoptMoveRounds`); they stay frozen for the caller to thaw. On failure everything
    /// moved goes back, thawed. Returns how many processes were moved, and where each was.
    private func moveTree(_ target: AdoptionTarget, into cgroups: AppCgroups, start: UInt64) throws(IceboxError) -> (
        moved: Int, rounds: Int, origins: [pid_t: CgroupPlace]
    ) {
        do { try cgroups.holdForMove() } catch { throw IceboxError("adopt \(target.what): freeze the new cgroup", error) }
        var origins: [pid_t: CgroupPlace] = [:]
        var moved = Set<pid_t>()
        var rounds = 0
        while true {
            let inside = Set(cgroups.members() ?? [])
            // A zombie is in no cgroup.procs, and a frozen parent does not reap it: skip it.
            let outside = target.members().filter { pid in
                !inside.contains(pid) && ProcFS.stat(pid: pid).map { $0.state != "Z" && $0.state != "X" } ?? false
            }
            if outside.isEmpty { break }
            rounds += 1
            let elapsed = Clock.monotonicNanos().saturatingSub(start)
            if rounds > Self.adoptMoveRounds || elapsed > Self.adoptMoveLimitNanos || moved.count > Self.adoptMaxProcesses {
                rollBack(cgroups, to: origins[target.main] ?? CgroupPlace(), origins: origins)
                throw IceboxError(
                    .failure,
                    "cannot adopt \(target.what): the tree kept growing (\(outside.count) process\(outside.count == 1 ? "" : "es") still outside after \(rounds - 1) rounds, \(DurationText.format(elapsed))); everything moved was put back",
                    hint: "try again, or stop the fork storm first (icebox freeze --pid)")
            }
            for pid in outside {
                let before = origins[pid] ?? place(of: pid)
                do {
                    if try cgroups.moveIn(pid) {
                        origins[pid] = before
                        moved.insert(pid)
                    }
                } catch {
                    rollBack(cgroups, to: origins[target.main] ?? before, origins: origins)
                    throw IceboxError("adopt \(target.what): move pid \(pid)", error)
                }
            }
        }
        return (moved.count, rounds, origins)
    }

    /// Undoes a move: every process back where it came from, the cgroups thawed and removed.
    private func rollBack(_ cgroups: AppCgroups, to place: CgroupPlace, origins: [pid_t: CgroupPlace]) {
        var problems = cgroups.moveOut(to: place) { origins[$0] }
        do { try cgroups.endMoveHold() } catch { problems.append("cannot thaw: \(error)") }
        let left = cgroups.removeEmptied()
        if !problems.isEmpty || !left.isEmpty {
            log(.error, app: cgroups.name, pid: nil, "adopt rolled back: " + (problems + left).joined(separator: "; "))
        }
    }

    /// An adoption recorded but not finished (no move time): undone, as the daemon starts.
    func undoInterruptedAdoption(_ saved: AppRecord) {
        let cgroups = AppCgroups.adopt(v2: saved.cgroup, freezerV1: saved.freezerV1, memoryV1: saved.memoryV1)
        let own = place(of: getpid())
        func existing(_ path: String?, _ fallback: String?) -> String? {
            if let path, !path.isEmpty, FileIO.isDirectory(path) { return path }
            return fallback
        }
        let target = CgroupPlace(
            v2: existing(saved.adoptedFrom, own.v2), freezerV1: existing(saved.adoptedFromFreezerV1, own.freezerV1),
            memoryV1: existing(saved.adoptedFromMemoryV1, own.memoryV1))
        let count = cgroups.processCount()
        let problems = cgroups.moveAllOut(to: target, backend: saved.backend, keepFrozen: false)
        // Moved out, the thaw changes nothing; else moveAllOut thawed what stayed and said so.
        try? cgroups.endMoveHold()
        let left = problems.isEmpty ? cgroups.removeEmptied() : []
        cgroups.close()
        if problems.isEmpty { removeRecord(saved.name) }
        let outcome = (problems + left).isEmpty ? "" : "; " + (problems + left).joined(separator: "; ")
        log(
            .error, app: saved.name, pid: saved.pid,
            "the adoption of pid \(saved.pid) was cut short by the daemon's end: \(count) process\(count == 1 ? "" : "es") moved back to \(target.v2 ?? target.freezerV1 ?? "?"), thawed; not adopted\(outcome)"
        )
        if !problems.isEmpty { leaveUnadopted(saved, why: "its interrupted adoption could not be undone") }
    }

    // MARK: Release

    func releaseRequested(_ name: String, client fd: Int32) {
        guard let app = liveApps([name], for: .release(name: name), client: fd)?.first else { return }
        guard app.record.state == .active || app.record.state == .suspended else {
            return fail(
                fd,
                IceboxError(
                    .busy(name: name, state: app.record.state),
                    "\(name) is \(app.record.state.rawValue): release hands back an app that is active or suspended",
                    hint: "try again once it is (icebox ps)"))
        }
        if app.attachedClient != nil {
            // Its `icebox run` waits for its exit status, which a released app never gives it.
            return fail(
                fd,
                IceboxError(
                    .failure, "\(name) runs attached to an icebox run in a terminal: it cannot be handed back",
                    hint: "end it from that terminal, or icebox terminate \(name)"))
        }
        if app.freeze != nil || app.removal != nil || app.lifecycle.isEnding {
            return fail(
                fd,
                IceboxError(
                    .busy(name: name, state: app.record.state), "\(name) has a freeze, thaw or end under way", hint: "try again in a moment"
                ))
        }
        let start = Clock.monotonicNanos()
        let record = app.record
        let own = place(of: getpid())
        var target = own
        var whereText: [String] = []
        if record.isAdopted {
            // Where it came from, hierarchy by hierarchy, while that cgroup still exists.
            func pick(_ origin: String?, _ fallback: String?, _ what: String) -> String? {
                if let origin, !origin.isEmpty, FileIO.isDirectory(origin) {
                    whereText.append("\(what) \(origin) (where it came from)")
                    return origin
                }
                if let fallback { whereText.append("\(what) \(fallback) (the daemon's own: \(origin ?? "its origin") is gone)") }
                return fallback
            }
            let cgroups = app.cgroups
            target = CgroupPlace(
                v2: cgroups.v2 == nil ? nil : pick(record.adoptedFrom, own.v2, "cgroup"),
                freezerV1: cgroups.freezerV1 == nil ? nil : pick(record.adoptedFromFreezerV1, own.freezerV1, "v1 freezer cgroup"),
                memoryV1: cgroups.memoryV1 == nil ? nil : pick(record.adoptedFromMemoryV1, own.memoryV1, "v1 memory cgroup"))
        } else {
            // A launched app has no origin: it goes where the daemon runs.
            for (have, dir, what) in [
                (app.cgroups.v2 != nil, own.v2, "cgroup"), (app.cgroups.freezerV1 != nil, own.freezerV1, "v1 freezer cgroup"),
                (app.cgroups.memoryV1 != nil, own.memoryV1, "v1 memory cgroup"),
            ] where have {
                if let dir { whereText.append("\(what) \(dir) (the daemon's own: it was launched, not adopted)") }
            }
        }
        let processes = app.cgroups.processCount()
        let problems = app.cgroups.moveAllOut(to: target, backend: record.backend, keepFrozen: record.state == .suspended)
        if !problems.isEmpty {
            return fail(
                fd,
                IceboxError(
                    .failure, "cannot release \(name): " + problems.joined(separator: "; ") + "; it stays supervised",
                    hint: "see icebox doctor; icebox terminate \(name) ends it"))
        }
        unwatch(app.handle.pidfd)
        watchCgroupEvents(app, nil)
        if let notifyFD = app.notify.ownFD {
            unwatch(notifyFD)
            close(notifyFD)
            AppNotifySocket.remove(app.notify.path)
        }
        if let probeFD = app.probe?.watchedFD { unwatch(probeFD) }
        app.probe?.cancel()
        app.compactAt = nil
        app.lockCheckAt = nil
        apps.removeValue(forKey: name)
        appDeadlines.remove(app)
        let left = app.cgroups.removeEmptied()
        rebalanceDescriptors()
        if record.backend == .cgroup1 { updateFreezerKeyHold() }
        victimGone(app)
        ended.removeValue(forKey: name)
        registryWriter.unmark(name)
        removeRecord(name)
        let nanos = Clock.monotonicNanos().saturatingSub(start)
        var detail =
            "released (pid \(app.pid), was \(record.state.rawValue)): \(processes) process\(processes == 1 ? "" : "es") thawed and moved to \(whereText.joined(separator: ", ")) in \(DurationText.format(nanos)); no longer supervised"
        if !left.isEmpty { detail += "; its cgroups: " + left.joined(separator: "; ") }
        log(Event(app: name, pid: app.pid, kind: .released, from: record.state, durationNanos: nanos, detail: detail, at: .read()))
        finish(fd, .success, "\(name)  released  \(detail)")
    }
}
