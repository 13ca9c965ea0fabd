import CIceboxShim
import Glibc
import IceboxSystem
import Synchronization

/// The processes that were already stopped by someone else (a shell's Ctrl-Z, a debugger)
/// when a SIGSTOP freeze began: the thaw leaves them stopped, as the cgroup freezers do (the
/// kernel's freezer selftest `stopped` asks exactly this). Sendable: a Mutex around the set.
package final class StoppedByOthers: Sendable {
    package init() {}
    private let pids = Mutex<Set<pid_t>>([])
    func set(_ value: Set<pid_t>) { pids.withLock { $0 = value } }
    var current: Set<pid_t> { pids.withLock { $0 } }
}

/// Freezing with SIGSTOP, where no freezer cgroup is usable: every process of the app gets SIGSTOP,
/// and the freeze is confirmed when every thread reads `T` in /proc (no event tells it: a back-off,
/// 20 µs to 5 ms); processes appearing meanwhile are stopped too. A thaw sends SIGCONT, confirmed
/// when no thread is stopped.
///
/// What it cannot do: a process that left the app's process group and has no cgroup to find it by
/// escapes; a parent or a tracer sees the stop (waitpid WUNTRACED, SIGCHLD), and a program that
/// handles SIGCONT notices the resume.
package struct SignalFreezer: Freezer {
    /// Lists the app's processes now (its cgroup's procs, its session, or a process tree).
    package let members: @Sendable () -> [pid_t]
    package var kind: BackendKind { .signal }
    let stoppedByOthers = StoppedByOthers()

    package init(members: @escaping @Sendable () -> [pid_t]) { self.members = members }

    static func stoppedState(_ c: Character) -> Bool { c == "T" || c == "t" }

    /// A task that has exited: a zombie (Z) or one being reaped (X), nothing left to stop.
    static func exited(_ c: Character) -> Bool { c == "Z" || c == "X" }

    /// Whether a thread of ours is held: stopped, or a vfork parent (glibc's posix_spawn, dash) in
    /// D in kernel_clone, waiting for its child's exec, with our SIGSTOP pending. The child,
    /// stopped before its exec, never execs, so the parent never returns to its program (and the
    /// pending stop takes it first if it does); waiting for its T timed every such freeze out. The
    /// cgroup freezers count it frozen too. Any other D wait (OOM, I/O) is not held: as with cgroup
    /// v2, the freeze waits for it and names it if it does not end.
    static func held(pid: pid_t, tid: pid_t, state: Character) -> Bool {
        if stoppedState(state) { return true }
        guard state == "D", ProcFS.stopPending(pid: pid, tid: tid) else { return false }
        // Unreadable: not held. (wait_for_vfork_done where the kernel does not inline it.)
        let wchan = ProcFS.wchan(pid: pid, tid: tid)
        return wchan == "kernel_clone" || wchan == "wait_for_vfork_done"
    }

    /// SIGCONT to the processes a freeze stopped: all but those someone else had. One in a tracer's
    /// stop (t) gets it anyway: the freeze's SIGSTOP, queued behind the trace stop, would stop the
    /// app once the tracer detaches, long after the resume; SIGCONT discards it and leaves the
    /// trace stop (the kernel's freezer selftest `ptraced` detaches after the thaw).
    static func continueOurs(_ pids: some Sequence<pid_t>, keeping keep: Set<pid_t>) {
        for pid in pids where !keep.contains(pid) || ProcFS.state(pid: pid) == "t" { kill(pid, SIGCONT) }
    }

    package func beginFreeze(now: UInt64, deadline: UInt64) -> FreezeOperation {
        // The SIGSTOPs go first, each to a process's leader alone (tgkill): one stopped already by
        // someone else keeps it queued there, which the look that finds it stopped reads
        // (`SignalFreezeSteps.keepStopped`), so nothing is read before them (1000 busy processes
        // froze in 0.87-0.93x bare, 1.18-1.33x with reads first: benchmarks/RESULTS.md, session
        // 50).
        let pids = members()
        stoppedByOthers.set([])
        var steps = SignalFreezeSteps(members: members, stoppedByOthers: stoppedByOthers)
        steps.begin(with: pids)
        steps.files = ProcessStatFiles(pids)
        return FreezeOperation(backend: .signal, direction: .freeze, startedAt: now, deadline: deadline, steps: steps)
    }

    package func beginThaw(now: UInt64, deadline: UInt64) -> FreezeOperation {
        let keep = stoppedByOthers.current
        stoppedByOthers.set([])
        let pids = members()
        Self.continueOurs(pids, keeping: keep)
        return FreezeOperation(
            backend: .signal, direction: .thaw, startedAt: now, deadline: deadline,
            steps: SignalThawSteps(members: members, keepStopped: keep, continued: pids))
    }

    package func isFrozen() -> Bool {
        let pids = members()
        return !pids.isEmpty
            && pids.allSatisfy { pid in
                ProcFS.threads(of: pid).allSatisfy { tid in Self.held(pid: pid, tid: tid, state: ProcFS.state(pid: pid, tid: tid) ?? "T") }
            }
    }

    /// Any process stopped: a SIGSTOP round was under way.
    package func freezeStarted() -> Bool {
        members().contains { pid in Self.stoppedState(ProcFS.state(pid: pid) ?? " ") }
    }

    /// A process and all its descendants (for `icebox freeze --pid`), found through ppid links
    /// (an adoption's fallback walk, unbounded).
    package static func processTree(root: pid_t) -> [pid_t] {
        AdoptionCheck.treeByParent(root: root, procRoot: "/proc", limit: .max)
    }
}

/// A SIGSTOP round in steps. A process seen with every thread stopped stays so (a stopped thread
/// starts none) and is not read again; a step ends at the first process still running, so it costs
/// only what is left to confirm. The members are read again once every process read before is
/// stopped: one forked before its parent stopped shows up then (and none later).
package struct SignalFreezeSteps: FreezeSteps {
    let members: @Sendable () -> [pid_t]
    /// Found stopped by someone else (a SIGSTOP of ours still queued on its leader at the look
    /// that found it stopped): not ours to continue, on a rollback or at the thaw.
    var keepStopped = Set<pid_t>()
    /// Where `keepStopped` goes once the freeze is confirmed: the freezer's, for its thaw.
    let stoppedByOthers: StoppedByOthers
    var signaled = Set<pid_t>()
    /// Those whose leader had exited, sent a SIGSTOP for the whole process (kill) as well: one
    /// sent to the exited leader alone is never taken.
    var signaledWhole = Set<pid_t>()
    var done: [pid_t: Int] = [:]  // pid → its thread count, once seen fully stopped
    /// The members at the last read, and those of them not yet seen stopped, in that order: the
    /// ones before `next` have been since.
    var lastMembers: [pid_t] = []
    var queue: [pid_t] = []
    var next = 0
    /// The threads of `queue[next]` as listed, and how many of them have been seen stopped (or
    /// gone): a thread seen stopped is not read again, as in bare.c, so confirming a process of
    /// 10,000 spinning threads reads each stopped one once, not at every step.
    var threads: [pid_t] = []
    /// The /proc/PID/task of `queue[next]`, open while its threads are read (nil in between).
    var taskDirectory: TaskDirectory?
    var threadsSeen = 0
    var threadsAlive = 0
    var backoff = Backoff(cap: 5_000_000)
    /// The members' stat files, kept open until the freeze ends (nil then: closed).
    var files: ProcessStatFiles?
    var failedAtStart: FreezeFailure? { nil }
    /// The members this process is the parent of: the kernel tells it when one has stopped
    /// (SIGCHLD, CLD_STOPPED, from the last of its threads to stop).
    var children = Set<pid_t>()
    /// Whether those SIGCHLDs reach the loop that steps this freeze (`expectPromptNotification`).
    var hearsStops = false
    /// This process, the parent its children name (read once: getpid is a system call, and a freeze
    /// looks at every member).
    private let ownPID = getpid()

    /// Whether every member not yet seen stopped is a child whose stop the loop will hear of: the
    /// freeze then waits for that, and its re-reads only guard against a SIGCHLD that does not come
    /// (a child stopped under a tracer notifies the tracer instead).
    var waitsOnAnnouncement: Bool { hearsStops && next < queue.count && queue[next...].allSatisfy { children.contains($0) } }

    package init(members: @escaping @Sendable () -> [pid_t], stoppedByOthers: StoppedByOthers = StoppedByOthers()) {
        self.members = members
        self.stoppedByOthers = stoppedByOthers
    }

    /// One process's `StopStat`, through its kept file if it has one (nil once that process is
    /// gone: not a path read that could find another with its pid).
    private func stopStat(of pid: pid_t) -> ProcFS.StopStat? {
        if let files { return files.stopStat(of: pid) }
        return ProcFS.stopStat(pid: pid)
    }

    /// SIGSTOP at the leader of each of `pids` not yet signalled (`beginFreeze`); returns `pids`.
    private mutating func stop(_ pids: [pid_t]) -> [pid_t] {
        for pid in pids where !signaled.contains(pid) {
            if icebox_tgkill(pid, pid, SIGSTOP) == 0 { signaled.insert(pid) }
        }
        return pids
    }

    /// Those of `pids` stopped by someone else: stopped, with the SIGSTOP sent to their leader
    /// still queued there. Read for a rollback, which may come before the look at each.
    private func othersStopped(_ pids: some Sequence<pid_t>) -> Set<pid_t> {
        Set(
            pids.filter { pid in
                keepStopped.contains(pid)
                    || stopStat(of: pid)?.stoppedBySomeoneElse ?? false
            })
    }

    package mutating func step(now: UInt64, startedAt: UInt64, deadline: UInt64) -> FreezeProgress {
        let took = now.saturatingSub(startedAt)
        if next >= queue.count && !refill() {
            cancel()
            return .failed(.gone("no processes left to stop"))
        }
        confirmQueued()
        if next >= queue.count {
            guard refill() else {
                cancel()
                return .failed(.gone("no processes left to stop"))
            }
            if queue.isEmpty && rejectContinued() {
                // Until the reads that saw it ended (10,000 threads: tens of ms), as bare.c counts:
                // not the count, nor the closing of the kept files after (1000 processes: ~1 ms).
                let seen = Clock.monotonicNanos().saturatingSub(startedAt)
                let tasks = lastMembers.reduce(0) { $0 + (done[$1] ?? 0) }
                stoppedByOthers.set(keepStopped)
                files = nil
                return .confirmed(FreezeReport(backend: .signal, durationNanos: seen, tasks: tasks))
            }
        }
        if now >= deadline {
            let stuck = StuckTask.describe(pids: lastMembers, skippingStopped: true)
            SignalFreezer.continueOurs(lastMembers, keeping: othersStopped(lastMembers))
            cancel()
            return .failed(.timeout(FreezeTimeout(backend: .signal, waitedNanos: took, stuck: stuck)))
        }
        // Re-reads would take the CPU from tasks that must run to stop (`Backoff.safetyNet`).
        if waitsOnAnnouncement { backoff.raiseFloor(to: Backoff.safetyNet) }
        return .waiting(recheckAt: backoff.next(afterLookAt: now, deadline: deadline), watch: nil)
    }

    /// The loop that steps this freeze hears its children's SIGCHLDs.
    mutating func expectPromptNotification() { hearsStops = true }

    /// SIGSTOP to `pids` (the members, just read), queued for the first step.
    package mutating func begin(with pids: [pid_t]) { _ = refill(pids) }

    /// Reads the members (unless given), stops any new one and queues those not seen stopped
    /// yet; false when there is no member at all.
    private mutating func refill(_ given: [pid_t]? = nil) -> Bool {
        lastMembers = stop(given ?? members())
        queue = lastMembers.filter { done[$0] == nil }
        next = 0
        startThreadCursor()
        return !lastMembers.isEmpty
    }

    /// Reads the queue up to the first process still running, as bare.c does: reading on would tell
    /// nothing the next step does not, and take CPU from tasks that must run to stop.
    private mutating func confirmQueued() {
        while next < queue.count {
            let pid = queue[next]
            if threads.isEmpty {
                // A process of one thread is told by its stat line alone: its state, and that it
                // has no other thread (one stopped cannot make another, and a clone that races
                // the SIGSTOP is restarted after the stop). Gone, or a zombie: nothing to stop.
                let process = stopStat(of: pid)
                if let process {
                    if process.ppid == ownPID { children.insert(pid) }
                    // Stopped with our SIGSTOP still queued: someone else's stop (again at each
                    // look: one continued and stopped anew by this freeze is ours).
                    if process.stoppedBySomeoneElse {
                        keepStopped.insert(pid)
                    } else {
                        keepStopped.remove(pid)
                    }
                    if SignalFreezer.exited(process.state) && process.threads > 1 && signaled.contains(pid)
                        && signaledWhole.insert(pid).inserted
                    {
                        kill(pid, SIGSTOP)
                    }
                }
                if let process, process.threads > 1 {
                    let directory = TaskDirectory(pid: pid)
                    taskDirectory = directory
                    threads = directory.threads()
                } else {
                    if let state = process?.state, !SignalFreezer.exited(state) {
                        guard SignalFreezer.held(pid: pid, tid: pid, state: state) else { return }
                        threadsAlive = 1
                    }
                    done[pid] = threadsAlive
                    next += 1
                    startThreadCursor()
                    continue
                }
            }
            let directory = taskDirectory ?? TaskDirectory(pid: pid)  // set where `threads` was listed
            while true {
                while threadsSeen < threads.count {
                    let tid = threads[threadsSeen]
                    if let state = directory.state(of: tid), !SignalFreezer.exited(state) {
                        if !SignalFreezer.held(pid: pid, tid: tid, state: state) { return }
                        threadsAlive += 1
                    }
                    threadsSeen += 1
                }
                // Every thread listed is stopped: any made since (by one not yet stopped then)? The
                // link count of /proc/PID/task counts the threads in one call (a zombie leader
                // among them); the listing is read again only when it shows more.
                if (directory.count() ?? 0) <= threadsAlive { break }
                let listed = Set(threads)
                let made = directory.threads().filter { !listed.contains($0) }
                if made.isEmpty { break }
                threads += made
            }
            done[pid] = threadsAlive
            next += 1
            startThreadCursor()
        }
    }

    /// The last look before a confirmation: is every member seen stopped still stopped? One seen
    /// early may since have been continued by one stopped later (processes that SIGCONT each
    /// other); found running, it is stopped and confirmed anew (to the deadline, if it will not
    /// stay). A pass finding all stopped, with no signal sent during it, is a snapshot: a member
    /// continued during it was continued by one running, which the pass would have seen, unless
    /// stopped again meanwhile, which only this freezer does. True when all are. A lone member has
    /// no other to continue it (a SIGCONT from outside the app is out of reach, as for the cgroup
    /// freezers): the pass, 10,000 reads for one process of 10,000 threads, is skipped.
    private mutating func rejectContinued() -> Bool {
        guard lastMembers.count > 1 else { return true }
        let continued = lastMembers.filter { !Self.stillHeld($0, leader: stopStat(of: $0)?.state) }
        for pid in continued {
            done[pid] = nil
            signaled.remove(pid)
        }
        return continued.isEmpty
    }

    /// Whether `pid` is still stopped, told by one live thread: a SIGCONT ends every thread's stop
    /// at once (inside kill(), flushing a pending SIGSTOP), so 10,000 threads cost one read. The
    /// leader (`leader`: its state as read), unless it exited (Z) leaving the others.
    static func stillHeld(_ pid: pid_t, leader: Character?) -> Bool {
        func live(_ state: Character?) -> Character? { state.flatMap { SignalFreezer.exited($0) ? nil : $0 } }
        if let state = live(leader) { return SignalFreezer.held(pid: pid, tid: pid, state: state) }
        for tid in ProcFS.threads(of: pid) where tid != pid {
            if let state = live(ProcFS.state(pid: pid, tid: tid)) { return SignalFreezer.held(pid: pid, tid: tid, state: state) }
        }
        return true  // no live thread left (or the process is gone): nothing to continue
    }

    private mutating func startThreadCursor() {
        threads = []
        taskDirectory = nil
        threadsSeen = 0
        threadsAlive = 0
    }

    /// SIGCONT to every process this round stopped (and any member now): the app runs.
    package mutating func cancel() {
        SignalFreezer.continueOurs(signaled, keeping: othersStopped(signaled))
        files = nil
        startThreadCursor()
    }
}

/// A SIGCONT round in steps: SIGCONT again to whatever shows a stopped thread, until none does.
struct SignalThawSteps: FreezeSteps {
    let members: @Sendable () -> [pid_t]
    /// Stopped by someone else before the freeze: left stopped, and not waited for.
    let keepStopped: Set<pid_t>
    /// The members the thaw's SIGCONT went to, for the first look: none could fork while
    /// stopped, so reading them again and signalling them again would only double the work.
    var continued: [pid_t]?
    var running: [pid_t: Int] = [:]  // pids confirmed running → their thread count
    var backoff = Backoff(cap: 5_000_000)
    var failedAtStart: FreezeFailure? { nil }

    mutating func step(now: UInt64, startedAt: UInt64, deadline: UInt64) -> FreezeProgress {
        let took = now.saturatingSub(startedAt)
        let again = continued == nil
        let pids = continued ?? members()
        continued = nil
        var stillStopped: [pid_t] = []
        for pid in pids where running[pid] == nil && !keepStopped.contains(pid) {
            if again { kill(pid, SIGCONT) }
            if let threads = Self.runningThreads(of: pid) { running[pid] = threads } else { stillStopped.append(pid) }
        }
        if stillStopped.isEmpty {
            // Until the reads that saw it ended, as bare.c counts.
            let seen = Clock.monotonicNanos().saturatingSub(startedAt)
            return .confirmed(FreezeReport(backend: .signal, durationNanos: seen, tasks: pids.reduce(0) { $0 + (running[$1] ?? 0) }))
        }
        if now >= deadline {
            let stuck = StuckTask.describe(pids: stillStopped, skippingStopped: false).filter { SignalFreezer.stoppedState($0.state) }
            return .failed(.timeout(FreezeTimeout(backend: .signal, waitedNanos: took, stuck: stuck, direction: .thaw)))
        }
        return .waiting(recheckAt: backoff.next(afterLookAt: now, deadline: deadline), watch: nil)
    }

    func cancel() {}

    /// How many threads the process has once none is stopped; nil while one is; 0 once gone.
    static func runningThreads(of pid: pid_t) -> Int? {
        // The stat line is the leader's: its state (no further read while it is stopped) and
        // the thread count; the other threads are read through the task directory.
        guard let process = ProcFS.stopStat(pid: pid) else { return 0 }
        if SignalFreezer.stoppedState(process.state) { return nil }
        var threads = SignalFreezer.exited(process.state) ? 0 : 1
        if process.threads <= 1 { return threads }
        let directory = TaskDirectory(pid: pid)
        for tid in directory.threads() where tid != pid {
            guard let state = directory.state(of: tid) else { continue }
            if SignalFreezer.stoppedState(state) { return nil }
            threads += 1
        }
        return threads
    }
}

extension ProcFS.StopStat {
    /// Stopped with the SIGSTOP a freeze sent its leader still queued there: someone else
    /// stopped the process first (`SignalFreezer.beginFreeze`).
    var stoppedBySomeoneElse: Bool { SignalFreezer.stoppedState(state) && stopQueued }
}
