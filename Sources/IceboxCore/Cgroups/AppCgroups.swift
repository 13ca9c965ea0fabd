import Glibc
import IceboxSystem
import Synchronization

/// What `AppCgroups.beginDestroy` and `stepDestroy` say.
package enum DestroyProgress: Sendable, Equatable {
    /// Every directory is gone and every descriptor closed; `leftovers` processes had to be
    /// killed (found inside when the destroy began, the main process not counted).
    case done(leftovers: Int)
    /// Killed, not yet empty (or a directory still busy): step again at `recheckAt` (monotonic
    /// ns) or when `watch` (cgroup.events, for EPOLLPRI; owned here, never close it) fires.
    case waiting(recheckAt: UInt64, watch: Int32?)
    /// Past the deadline, or at once for an rmdir failure waiting will not fix (EACCES): what
    /// stays, each naming path and errno, or the stuck tasks; the descriptors are closed anyway.
    case failed([String])
}

/// The one owner of an app's cgroups: v2 (how the app's processes are found and killed, whatever
/// the backend), the v1 freezer (backend cgroup1) and v1 memory (hybrid hosts, for memory
/// accounting). It makes them fresh, hands out the spawn descriptors and the freezer, lists and
/// kills the members, and removes everything bottom-up without blocking. Nothing else writes an
/// app's cgroup files.
///
/// The descriptors it keeps are shared with the freezer it hands out and stay open until the
/// destroy finishes, `close()`, or `release()` (then they open again at their next use).
///
/// Sendable: constant paths, the descriptors in CgroupFile's Mutex, the destroy state in its own.
package final class AppCgroups: Sendable {
    package let name: String
    package let v2: Cgroup2?
    package let freezerV1: Cgroup1Freezer?
    package let memoryV1: MemoryCgroupV1?
    /// Why the v1 memory cgroup could not be made at launch (then the app runs without one:
    /// its memory is read from the v2 cgroup), for the daemon to report; nil otherwise.
    package let memoryV1Problem: String?
    private let eventsFile: CgroupFile?
    private let freezeFile: CgroupFile?
    /// The v2 cgroup.procs: what a confirmed freeze counts and how the members are found (v2
    /// lists the tasks afresh at every read from offset 0; see Cgroup1Freezer for v1).
    private let procsFile: CgroupFile?
    /// The v2 cgroup's directory, for its link count (sub-cgroups or none).
    private let directoryFile: CgroupFile?
    /// The memory counter: its v1 cgroup's memory.usage_in_bytes, else its v2 memory.current; kept
    /// open only while the daemon has descriptors to spare (`memoryReading(keepOpen:)`).
    private let memoryFile: (file: CgroupFile, source: MemorySource)?
    private let destroyState = Mutex<Destroy?>(nil)
    private let v2IDCache = Mutex<UInt64?>(nil)

    package var v2Path: String? { v2?.path }
    package var freezerV1Path: String? { freezerV1?.path }
    package var memoryV1Path: String? { memoryV1?.path }

    /// The v2 directory's inode number, which is the id the kernel gives the cgroup (what
    /// `ProcessHandle.cgroupID` reports); read once, nil while there is no directory.
    package var v2DirectoryID: UInt64? {
        v2IDCache.withLock { id in
            if id == nil, let path = v2?.path {
                var st = stat()
                if lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR { id = UInt64(st.st_ino) }
            }
            return id
        }
    }

    private init(name: String, v2: String?, freezerV1: String?, memoryV1: String?, memoryV1Problem: String? = nil) {
        self.name = name
        self.memoryV1Problem = memoryV1Problem
        self.v2 = v2.map { Cgroup2(path: $0) }
        self.freezerV1 = freezerV1.map { Cgroup1Freezer(path: $0) }
        self.memoryV1 = memoryV1.map { MemoryCgroupV1(path: $0) }
        eventsFile = self.v2.map { CgroupFile(path: $0.eventsPath, writable: false) }
        freezeFile = self.v2.map { CgroupFile(path: $0.freezePath, writable: true) }
        procsFile = self.v2.map { CgroupFile(path: $0.procsPath, writable: false) }
        directoryFile = self.v2.map { CgroupFile(path: $0.path, writable: false) }
        memoryFile = AppMemory.counters(v2Cgroup: v2, v1MemoryCgroup: memoryV1).first.map {
            (CgroupFile(path: $0.path, writable: false), $0.source)
        }
    }

    /// The app's memory by one pread of the kept counter (`keepOpen`: open it if need be); nil if
    /// not open (and may not be) or unreadable: the caller reads by path (`AppMemory.read`). `ps`
    /// reads every app's (1000 apps: ~13 ms of the daemon's ~17 went to opening and closing each).
    package func memoryReading(keepOpen: Bool) -> AppMemoryReading? {
        guard let memoryFile, let bytes = memoryFile.file.readCounter(opening: keepOpen) else { return nil }
        return AppMemoryReading(bytes: bytes, source: memoryFile.source)
    }

    // MARK: Making and adopting

    /// Makes the roots if missing and the app's directories under them, each fresh:
    /// `<v2Root>/<name>` (any backend, if there is a v2 root), `<freezerV1Root>/<name>` (cgroup1),
    /// `<memoryV1Root>/<name>` (best effort: without it only memory precision is lost). A leftover
    /// of that name with processes in its subtree is an error (another daemon with the same root
    /// runs that app); an empty one is removed, sub-cgroups first, never reused: a cgroup that has
    /// seen cgroup.kill kills every task later cloned into it, and a v1 freezer left FROZEN would
    /// freeze the new app at once. On any failure, all made so far is removed.
    ///
    /// `standIn`: a spawn stand-in's v1 directories (SpawnPool), renamed to the app's instead of
    /// made (a v1 directory keeps its members across a rename, so the app the stand-in clones lands
    /// in them); on a failure they get their parked names back.
    package static func create(
        name: String, v2Root: String?, freezerV1Root: String?, memoryV1Root: String?, backend: BackendKind,
        standIn: StandInDirectories? = nil
    ) throws(IceboxError) -> AppCgroups {
        try AppName.validateForLaunch(name)
        let context = "set up the cgroups of \(name)"
        if backend == .cgroup2 && v2Root == nil {
            throw IceboxError(.unavailable, "\(context): backend cgroup2 needs a cgroup v2 root", hint: "see icebox doctor")
        }
        if backend == .cgroup1 && freezerV1Root == nil {
            throw IceboxError(.unavailable, "\(context): backend cgroup1 needs a v1 freezer hierarchy", hint: "see icebox doctor")
        }
        var made: [String] = []
        var renamed: [(from: String, to: String)] = []
        do throws(IceboxError) {
            var v2: String?
            if let v2Root {
                let path = v2Root + "/" + name
                try makeFresh(path, root: v2Root, .v2, app: name, context: context)
                made.append(path)
                v2 = path
            }
            var freezerV1: String?
            if backend == .cgroup1, let freezerV1Root {
                let path = freezerV1Root + "/" + name
                let parked = standIn?.freezerV1
                try makeFresh(path, root: freezerV1Root, .freezerV1, app: name, context: context, from: parked)
                if let parked { renamed.append((parked, path)) } else { made.append(path) }
                freezerV1 = path
            }
            var memoryV1: String?
            var memoryV1Problem: String?
            if let memoryV1Root {
                let path = memoryV1Root + "/" + name
                let parked = standIn?.memoryV1
                do throws(IceboxError) {
                    try makeFresh(path, root: memoryV1Root, .memoryV1, app: name, context: context, from: parked)
                    if let parked { renamed.append((parked, path)) } else { made.append(path) }
                    memoryV1 = path
                } catch {
                    // Best effort (the app runs; only memory precision is lost), but said: the
                    // daemon reports it to the launching client and in the event log.
                    memoryV1Problem = error.description
                    // The stand-in's directory stays tracked as the app's, under its parked name.
                    if let parked { memoryV1 = parked }
                }
            }
            let cgroups = AppCgroups(name: name, v2: v2, freezerV1: freezerV1, memoryV1: memoryV1, memoryV1Problem: memoryV1Problem)
            // Opened now, so that a problem shows at launch rather than at the first freeze.
            do {
                try cgroups.eventsFile?.open()
                if backend == .cgroup2 { try cgroups.freezeFile?.open() }
                try cgroups.freezerV1?.stateControl.open()
            } catch {
                cgroups.close()
                throw IceboxError(context, error)
            }
            return cgroups
        } catch {
            for path in made.reversed() { _ = CgroupTree.remove(path) }
            for (from, to) in renamed.reversed() { rename(to, from) }
            throw error
        }
    }

    /// Takes the cgroups of an app that runs already (re-adoption after a daemon restart: the
    /// paths come from the registry). Nothing is made or checked; descriptors open on first use.
    package static func adopt(v2: String?, freezerV1: String?, memoryV1: String?) -> AppCgroups {
        let path = v2 ?? freezerV1 ?? memoryV1 ?? ""
        return AppCgroups(
            name: path.split(separator: "/").last.map(String.init) ?? "", v2: v2, freezerV1: freezerV1, memoryV1: memoryV1)
    }

    /// Which of an app's cgroups `makeFresh` makes; the raw value names it in errors.
    private enum Hierarchy: String {
        case v2 = "cgroup"
        case freezerV1 = "v1 freezer cgroup"
        case memoryV1 = "v1 memory cgroup"
    }

    /// Makes `path` under `root` (made too if missing), removing a leftover first; with
    /// `from`, renames that directory (under the same root) to `path` instead of a mkdir.
    private static func makeFresh(
        _ path: String, root: String, _ hierarchy: Hierarchy, app: String, context: String, from: String? = nil
    ) throws(IceboxError) {
        let what = hierarchy.rawValue
        // The root may have been removed by a daemon that shared it and stopped.
        do { try FileIO.makeDirectories(root) } catch { throw IceboxError(context, error) }
        if FileIO.isDirectory(path) {
            let inside = CgroupTree.processes(path)
            if !inside.isEmpty {
                let pids = inside.prefix(8).map(String.init).joined(separator: ", ")
                throw IceboxError(
                    .failure,
                    "\(context): \(what) \(path) already has \(inside.count) process\(inside.count == 1 ? "" : "es") in it (pid \(pids))",
                    hint: "another icebox daemon with the same cgroup root runs an app named \(app); use another --name or --cgroup-root")
            }
            // A leftover v1 freezer may still be FROZEN; thawed, nothing in it can be left behind.
            if hierarchy == .freezerV1 { thawV1Subtree(path) }
            let problems = CgroupTree.remove(path, what: what)
            if !problems.isEmpty {
                throw IceboxError(
                    .failure,
                    "\(context): the leftover \(what) \(path) cannot be removed (\(problems.map(\.description).joined(separator: "; ")))",
                    hint: "remove it by hand (rmdir, deepest sub-cgroup first) or use another --name; it is never reused")
            }
        }
        if let from {
            if rename(from, path) < 0 { throw IceboxError(context, SystemError("rename \(from) to", path: path)) }
        } else if mkdir(path, 0o755) < 0 {
            throw IceboxError(context, SystemError("mkdir \(what)", path: path))
        }
    }

    // MARK: Spawning

    /// The descriptors the spawner needs to start the app inside these cgroups.
    package func spawnDescriptors() throws(SystemError) -> SpawnDescriptors {
        var opened: [Int32] = []
        do throws(SystemError) {
            var dir: Int32 = -1, procs: Int32 = -1, v1: Int32 = -1, memory: Int32 = -1
            if let v2 {
                dir = try FileIO.openDescriptor(v2.path, flags: O_RDONLY | O_DIRECTORY)
                opened.append(dir)
                procs = try FileIO.openDescriptor(v2.file("cgroup.procs"), flags: O_WRONLY)
                opened.append(procs)
            }
            if let freezerV1 {
                v1 = try freezerV1.openProcsForWriting()
                opened.append(v1)
            }
            // Best effort, as the cgroup is (memoryV1Problem): without it the child runs outside
            // it, and only memory precision is lost; the spawn must not fail for it.
            if let memoryV1, let fd = try? memoryV1.openProcsForWriting() { memory = fd }
            return SpawnDescriptors(cgroupDirFD: dir, cgroupProcsFD: procs, v1ProcsFD: v1, v1MemoryProcsFD: memory)
        } catch {
            for fd in opened { Glibc.close(fd) }
            throw error
        }
    }

    // MARK: Members, events, freezer

    /// Every process of the app, sub-cgroups included: from the v2 subtree, else v1 freezer, else
    /// v1 memory; nil without any (the caller falls back to the session).
    package func members() -> [pid_t]? {
        if let v2 { return CgroupTree.processes(v2.path, rootProcs: procsFile, rootDirectory: directoryFile) }
        if let freezerV1 { return freezerV1.subtreeProcs() }
        if let memoryV1 { return memoryV1.subtreeProcs() }
        return nil
    }

    /// Whether the app has any cgroup to find its processes by (else its session is used).
    package var isEmpty: Bool { v2 == nil && freezerV1 == nil && memoryV1 == nil }

    /// How many processes the app has, sub-cgroups included (0 without a cgroup).
    package func processCount() -> Int { members()?.count ?? 0 }

    /// The v2 cgroup.events (populated, frozen), read with pread on the kept descriptor; nil
    /// without a v2 cgroup or when it cannot be read (removed).
    package func events() -> CgroupEvents? {
        // Unreadable: removed meanwhile; its callers take nil as "no events" (the app is ending).
        guard let eventsFile, let text = try? eventsFile.read() else { return nil }
        return CgroupEvents.parse(text)
    }

    /// The kept cgroup.events descriptor, for the loop to watch (EPOLLPRI) while the app is
    /// suspended; owned here, never close it. nil without a v2 cgroup.
    package var eventsWatchDescriptor: Int32? { eventsFile?.watchDescriptor }

    /// The app's freezer, sharing the descriptors kept here: cgroup2 freezes the v2 directory,
    /// cgroup1 the v1 freezer one, signal SIGSTOPs the members (through the cgroups, else
    /// `fallbackMembers`, e.g. the session). A backend whose directory the app lacks falls back to
    /// signal (`create` makes it, so only an inconsistent registry record gets there).
    package func freezer(backend: BackendKind, fallbackMembers: @escaping @Sendable () -> [pid_t]) -> any Freezer {
        switch backend {
        case .cgroup2:
            if let v2, let freezeFile, let eventsFile, let procsFile, let directoryFile {
                return Cgroup2Freezer(
                    cgroup: v2, freezeFile: freezeFile, eventsFile: eventsFile, procsFile: procsFile, directory: directoryFile)
            }
        case .cgroup1:
            if let freezerV1 { return freezerV1 }
        case .signal:
            break
        }
        return SignalFreezer { [self] in self.members() ?? fallbackMembers() }
    }

    // MARK: Killing and removing

    /// Kills every process of the app at once: cgroup.kill where the kernel has it (Linux 5.14;
    /// frozen tasks die too, and the whole subtree), else SIGKILL to each member. A v1-frozen task
    /// acts on SIGKILL only once thawed, so the v1 freezer is thawed after the kill is queued.
    /// Returns what failed (each naming the syscall and path); what could be done was done.
    @discardableResult
    package func killAll() -> [SystemError] {
        var problems: [SystemError] = []
        var signalled = Set<pid_t>()
        func sigkill(_ pids: [pid_t]) {
            for pid in pids where !signalled.contains(pid) {
                signalled.insert(pid)
                kill(pid, SIGKILL)
            }
        }
        if let v2 {
            if v2.supportsKill {
                do { try v2.kill() } catch {
                    if v2.exists { problems.append(error) }
                    sigkill(v2.subtreeProcs())
                }
            } else {
                sigkill(v2.subtreeProcs())
            }
        }
        // The same processes in the v1 hierarchies, unless one escaped the v2 cgroup.
        if let freezerV1 { sigkill(freezerV1.subtreeProcs()) }
        if let memoryV1 { sigkill(memoryV1.subtreeProcs()) }
        if let freezerV1 {
            do { try freezerV1.setThawed() } catch { if FileIO.isDirectory(freezerV1.path) { problems.append(error) } }
            Self.thawV1Subtree(freezerV1.path)
        }
        return problems
    }

    /// Kills what is still inside, then (without blocking) waits until every cgroup is empty and
    /// removes every directory bottom-up, sub-cgroups first, and closes every descriptor. Step with
    /// `stepDestroy(now:)` while it says `.waiting`. `mainPID`: the app's main process, not counted
    /// among the leftovers. Calling it again (after a failure) starts over.
    package func beginDestroy(now: UInt64, deadline: UInt64, mainPID: pid_t? = nil) -> DestroyProgress {
        let inside = members() ?? []
        if !inside.isEmpty { killAll() }
        let leftovers = inside.filter { $0 != mainPID }.count
        destroyState.withLock { $0 = Destroy(startedAt: now, deadline: deadline, leftovers: leftovers) }
        return stepDestroy(now: now)
    }

    /// One look: still inside → kill again (a fork that raced the kill) and wait; empty →
    /// rmdir bottom-up; past the deadline → `.failed` naming what stays. Never sleeps.
    package func stepDestroy(now: UInt64) -> DestroyProgress {
        destroyState.withLock { state in
            guard var destroy = state else { preconditionFailure("stepDestroy(now:) called before beginDestroy(now:deadline:)") }
            if let outcome = destroy.outcome { return outcome }
            let progress = step(&destroy, now: now)
            switch progress {
            case .done, .failed:
                destroy.outcome = progress
                close()
            case .waiting: break
            }
            state = destroy
            return progress
        }
    }

    /// Every file whose descriptor is kept here, the freezer's too.
    private var keptFiles: [CgroupFile] {
        [eventsFile, freezeFile, procsFile, directoryFile, memoryFile?.file, freezerV1?.stateControl].compactMap { $0 }
    }

    /// Closes every descriptor kept here. Later reads open the files per call; a daemon that
    /// stops and leaves its apps running calls this.
    package func close() { for file in keptFiles { file.close() } }

    /// Closes every descriptor kept here until its next use (a daemon short of descriptors
    /// keeps none for an app between operations). The caller must not be polling cgroup.events.
    package func release() { for file in keptFiles { file.release() } }

    private struct Destroy {
        let startedAt: UInt64
        let deadline: UInt64
        let leftovers: Int
        var backoff = Backoff(cap: 10_000_000)
        var outcome: DestroyProgress?
    }

    private func step(_ destroy: inout Destroy, now: UInt64) -> DestroyProgress {
        let inside = stillInside()
        if !inside.isEmpty {
            if now >= destroy.deadline {
                let waited = DurationText.format(now.saturatingSub(destroy.startedAt))
                let stuck = StuckTask.describe(pids: members() ?? [], skippingStopped: false).prefix(8).map(\.description)
                return .failed(
                    removeAll().map(\.description) + inside.map { "\($0) still has processes after \(waited)" }
                        + (stuck.isEmpty ? [] : ["tasks that did not die: " + stuck.joined(separator: "; ")]))
            }
            killAll()
            let recheck = destroy.backoff.next(afterLookAt: now, deadline: destroy.deadline)
            return .waiting(recheckAt: recheck, watch: eventsFile?.watchDescriptor)
        }
        let problems = removeAll()
        if problems.isEmpty { return .done(leftovers: destroy.leftovers) }
        // EBUSY right after the last task left is a race with the kernel's own teardown: retry.
        if now < destroy.deadline && problems.allSatisfy({ $0.errno == EBUSY }) {
            return .waiting(recheckAt: destroy.backoff.next(afterLookAt: now, deadline: destroy.deadline), watch: nil)
        }
        return .failed(problems.map(\.description))
    }

    /// The directories that still hold processes: the v2 one by its `populated` key (which
    /// covers the subtree), the v1 ones by their subtrees' cgroup.procs.
    private func stillInside() -> [String] {
        var out: [String] = []
        if let v2, v2.exists {
            if let events = events() {
                if events.populated { out.append(v2.path) }
            } else if !v2.subtreeProcs().isEmpty {
                out.append(v2.path)
            }
        }
        if let freezerV1, !freezerV1.subtreeProcs().isEmpty { out.append(freezerV1.path) }
        if let memoryV1, !memoryV1.subtreeProcs().isEmpty { out.append(memoryV1.path) }
        return out
    }

    /// rmdir of every directory, bottom-up, each hierarchy on its own; what stays.
    private func removeAll() -> [SystemError] {
        var problems: [SystemError] = []
        if let v2 { problems += CgroupTree.remove(v2.path, what: "cgroup") }
        if let freezerV1 {
            Self.thawV1Subtree(freezerV1.path)
            problems += CgroupTree.remove(freezerV1.path, what: "v1 freezer cgroup")
        }
        if let memoryV1 { problems += CgroupTree.remove(memoryV1.path, what: "v1 memory cgroup") }
        return problems
    }

    /// THAWED into every freezer.state of a v1 subtree, parents first: a sub-cgroup frozen on
    /// its own (self_freezing) stays frozen when only its parent is thawed.
    private static func thawV1Subtree(_ root: String) {
        for dir in CgroupTree.directoriesBottomUp(root).reversed() {
            let state = dir + "/freezer.state"
            // Either fails only for a sub-cgroup removed meanwhile; the removal reports what stays.
            if ((try? FileIO.read(state)) ?? "THAWED").trimmed() != "THAWED" { try? FileIO.write(state, "THAWED") }
        }
    }
}

extension AppCgroups {
    /// Reclaims the app's memory without killing it (meant for a frozen app): one write to its v2
    /// cgroup's memory.reclaim where the v2 memory controller is, else process_madvise on each of
    /// its processes (`Compactor`). Here so that the app's cgroup files keep one writer.
    package func compact(mode: CompactionMode, fallbackMembers: [pid_t]) throws(SystemError) -> CompactionReport {
        try Compactor.compact(pids: members() ?? fallbackMembers, mode: mode, cgroup: v2)
    }
}
