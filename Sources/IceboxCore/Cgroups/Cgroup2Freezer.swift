import Glibc
import IceboxSystem

/// Freezing through cgroup v2: write `cgroup.freeze`, then read `cgroup.events` until it says
/// `frozen 1` (or `populated 0`: nothing left to freeze). Sub-cgroups freeze too, and the report
/// counts their processes. A freeze that misses its deadline or fails half-way is rolled back to
/// `cgroup.freeze` 0 (else runc#5325: an app left frozen after its freeze was reported failed).
///
/// The files stay open for the freezer's life (shared with the app's `AppCgroups`, if made there),
/// used with pread/pwrite; an event loop polls `cgroup.events` for POLLPRI.
package struct Cgroup2Freezer: Freezer {
    package let cgroup: Cgroup2
    let freezeFile: CgroupFile
    let eventsFile: CgroupFile
    let procsFile: CgroupFile
    /// The cgroup's directory, for the link count that says whether it has sub-cgroups.
    let directory: CgroupFile
    package var kind: BackendKind { .cgroup2 }

    package init(cgroup: Cgroup2) {
        self.init(
            cgroup: cgroup, freezeFile: CgroupFile(path: cgroup.freezePath, writable: true),
            eventsFile: CgroupFile(path: cgroup.eventsPath, writable: false),
            procsFile: CgroupFile(path: cgroup.procsPath, writable: false),
            directory: CgroupFile(path: cgroup.path, writable: false))
    }

    init(cgroup: Cgroup2, freezeFile: CgroupFile, eventsFile: CgroupFile, procsFile: CgroupFile, directory: CgroupFile) {
        self.cgroup = cgroup
        self.freezeFile = freezeFile
        self.eventsFile = eventsFile
        self.procsFile = procsFile
        self.directory = directory
    }

    /// The subtree's processes, read through the kept cgroup.procs and directory.
    func subtreeProcs() -> [pid_t] { CgroupTree.processes(cgroup.path, rootProcs: procsFile, rootDirectory: directory) }

    package func beginFreeze(now: UInt64, deadline: UInt64) -> FreezeOperation { begin(.freeze, now: now, deadline: deadline) }
    package func beginThaw(now: UInt64, deadline: UInt64) -> FreezeOperation { begin(.thaw, now: now, deadline: deadline) }

    private func begin(_ direction: FreezeDirection, now: UInt64, deadline: UInt64) -> FreezeOperation {
        var steps = Steps(freezer: self, direction: direction, failedAtStart: nil)
        do { try freezeFile.write(direction == .freeze ? "1" : "0") } catch {
            // The write's error is reported; a freeze is still rolled back (safe: see `cancel`).
            steps.cancel()
            steps.failedAtStart = .system(error)
        }
        return FreezeOperation(backend: .cgroup2, direction: direction, startedAt: now, deadline: deadline, steps: steps)
    }

    // Unreadable cgroup.events is a cgroup removed meanwhile, which holds nothing frozen.
    package func isFrozen() -> Bool { (try? events().frozen) ?? false }

    /// Whether cgroup.freeze reads 1 (the request, not the confirmed state).
    // Unreadable cgroup.freeze is a cgroup removed meanwhile, where no freeze was requested.
    package func freezeStarted() -> Bool { ((try? freezeFile.read()) ?? "0").trimmed() == "1" }

    /// cgroup.events, read from the kept descriptor.
    package func events() throws(SystemError) -> CgroupEvents { CgroupEvents.parse(try eventsFile.read()) }

    struct Steps: FreezeSteps {
        let freezer: Cgroup2Freezer
        let direction: FreezeDirection
        var failedAtStart: FreezeFailure?
        var backoff = Backoff(cap: 10_000_000)

        mutating func step(now: UInt64, startedAt: UInt64, deadline: UInt64) -> FreezeProgress {
            let took = now.saturatingSub(startedAt)
            let events: CgroupEvents
            // The look alone, for the back-off: what the loop did before it (a turn with other
            // work, or time given to the app's busy tasks) is not what a re-read costs.
            let lookStart = Clock.monotonicNanos()
            do { events = try freezer.events() } catch {
                cancel()
                return .failed(.system(error))
            }
            let lookCost = Clock.monotonicNanos().saturatingSub(lookStart)
            let done = direction == .freeze ? events.frozen || !events.populated : !events.frozen
            if done {
                // Until the look that saw it ended, as bare.c counts; not the count after it.
                let seen = lookStart.saturatingAdd(lookCost).saturatingSub(startedAt)
                return .confirmed(FreezeReport(backend: .cgroup2, durationNanos: seen, tasks: freezer.subtreeProcs().count))
            }
            // A frozen ancestor keeps it frozen for good: fail now rather than at the deadline.
            if direction == .thaw, let ancestor = Self.frozenAncestor(of: freezer.cgroup.path) {
                return .failed(.frozenByAncestor(ancestor))
            }
            if now >= deadline {
                guard direction == .freeze else {
                    return .failed(.timeout(FreezeTimeout(backend: .cgroup2, waitedNanos: took, stuck: [], direction: .thaw)))
                }
                // Named before the rollback: once thawed, every task looks alike again.
                let stuck = StuckTask.describe(pids: freezer.subtreeProcs(), skippingStopped: false, skippingFrozen: true)
                cancel()
                return .failed(.timeout(FreezeTimeout(backend: .cgroup2, waitedNanos: took, stuck: stuck)))
            }
            return .waiting(
                recheckAt: backoff.next(now: now, deadline: deadline, lookCost: lookCost), watch: freezer.eventsFile.watchDescriptor)
        }

        func cancel() {
            // The failure's error stands; only a removed cgroup (nothing frozen) refuses the 0.
            if direction == .freeze { try? freezer.freezeFile.write("0") }
        }

        mutating func expectPromptNotification() { backoff.raiseFloor(to: Backoff.safetyNet) }

        /// The nearest ancestor whose cgroup.freeze reads 1, walking up.
        static func frozenAncestor(of path: String) -> String? {
            var dir = path
            while let slash = dir.lastIndex(of: "/"), slash > dir.startIndex {
                dir = String(dir[..<slash])
                // The root cgroup has none, and one we may not read cannot be named: none found.
                guard let value = try? FileIO.read(dir + "/cgroup.freeze") else { return nil }
                if value.trimmed() == "1" { return dir }
            }
            return nil
        }
    }
}
