import Glibc
import IceboxSystem

/// Freezing through the cgroup v1 freezer: write FROZEN to `freezer.state`, then read it back (no
/// change notification: a back-off from 20 µs to 10 ms) until it says FROZEN. A cgroup can stay
/// FREEZING while new tasks appear; the kernel documentation's remedy, thaw and retry, is done
/// every 100 ms. A freeze that misses its deadline is thawed back. Sub-cgroups freeze with their
/// parent, and the report counts their processes.
///
/// `freezer.state` stays open for the freezer's life (shared with the app's `AppCgroups`), used
/// with pread/pwrite. cgroup.procs is opened for each read: v1 caches an open file's pid list
/// (pidlist_array_load) and hands it to a pread from 0 within a second of the last, so a kept
/// descriptor would count processes that are gone.
package struct Cgroup1Freezer: Freezer, CgroupDirectory {
    package let path: String
    package static let what = "v1 freezer cgroup"
    let stateControl: CgroupFile
    package var kind: BackendKind { .cgroup1 }

    private static let stateFile = "freezer.state"
    /// How long a freeze may sit in FREEZING before it is thawed and asked again.
    static let retryNanos: UInt64 = 100_000_000

    package init(path: String) {
        self.init(path: path, stateControl: CgroupFile(path: path + "/" + Self.stateFile, writable: true))
    }

    init(path: String, stateControl: CgroupFile) {
        self.path = path
        self.stateControl = stateControl
    }

    /// THAWED, FREEZING or FROZEN, read from the kept descriptor.
    package func state() throws(SystemError) -> String { try stateControl.read().trimmed() }

    /// Writes THAWED, in effect at once: lets a v1-frozen task act on a SIGKILL already queued.
    package func setThawed() throws(SystemError) { try stateControl.write("THAWED") }

    package func beginFreeze(now: UInt64, deadline: UInt64) -> FreezeOperation { begin(.freeze, now: now, deadline: deadline) }
    package func beginThaw(now: UInt64, deadline: UInt64) -> FreezeOperation { begin(.thaw, now: now, deadline: deadline) }

    private func begin(_ direction: FreezeDirection, now: UInt64, deadline: UInt64) -> FreezeOperation {
        var steps = Steps(freezer: self, direction: direction, lastRetry: now, failedAtStart: nil)
        do { try stateControl.write(direction == .freeze ? "FROZEN" : "THAWED") } catch {
            // The write's error is reported; a freeze is still rolled back (safe: see `cancel`).
            steps.cancel()
            steps.failedAtStart = .system(error)
        }
        return FreezeOperation(backend: .cgroup1, direction: direction, startedAt: now, deadline: deadline, steps: steps)
    }

    // An unreadable state is a cgroup removed meanwhile, which holds nothing frozen.
    package func isFrozen() -> Bool { (try? state()) == "FROZEN" }
    // An unreadable state is a cgroup removed meanwhile, where no freeze can have started.
    package func freezeStarted() -> Bool { ((try? state()) ?? "THAWED") != "THAWED" }

    struct Steps: FreezeSteps {
        let freezer: Cgroup1Freezer
        let direction: FreezeDirection
        var lastRetry: UInt64
        var failedAtStart: FreezeFailure?
        var backoff = Backoff(cap: 10_000_000)

        mutating func step(now: UInt64, startedAt: UInt64, deadline: UInt64) -> FreezeProgress {
            let took = now.saturatingSub(startedAt)
            let state: String
            // The look alone, for the back-off (as in Cgroup2Freezer.Steps.step).
            let lookStart = Clock.monotonicNanos()
            do { state = try freezer.state() } catch {
                cancel()
                return .failed(.system(error))
            }
            let lookCost = Clock.monotonicNanos().saturatingSub(lookStart)
            let wanted = direction == .freeze ? "FROZEN" : "THAWED"
            if state == wanted {
                // Until the look that saw it ended, as bare.c counts; not the count after it.
                let seen = lookStart.saturatingAdd(lookCost).saturatingSub(startedAt)
                return .confirmed(FreezeReport(backend: .cgroup1, durationNanos: seen, tasks: freezer.subtreeProcs().count))
            }
            if now >= deadline {
                guard direction == .freeze else {
                    return .failed(.timeout(FreezeTimeout(backend: .cgroup1, waitedNanos: took, stuck: [], direction: .thaw)))
                }
                let stuck = StuckTask.describe(pids: freezer.subtreeProcs(), skippingStopped: false, skippingFrozen: true)
                cancel()
                return .failed(.timeout(FreezeTimeout(backend: .cgroup1, waitedNanos: took, stuck: stuck)))
            }
            if direction == .freeze && now.saturatingSub(lastRetry) >= Cgroup1Freezer.retryNanos {
                // Stuck in FREEZING: thaw and try again, as the v1 freezer documentation advises.
                do {
                    try freezer.setThawed()
                    try freezer.stateControl.write("FROZEN")
                } catch {
                    cancel()
                    return .failed(.system(error))
                }
                lastRetry = now
            }
            // No notification exists for freezer.state: only the back-off.
            return .waiting(recheckAt: backoff.next(now: now, deadline: deadline, lookCost: lookCost), watch: nil)
        }

        func cancel() {
            // The failure's error stands; only a removed cgroup (nothing frozen) refuses THAWED.
            if direction == .freeze { try? freezer.setThawed() }
        }
    }
}
