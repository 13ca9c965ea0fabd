import Glibc
import IceboxSystem

/// Freezing through the cgroup v1 freezer: write FROZEN to `freezer.state` and read it back until
/// it says FROZEN. v1 has no change notification, so the read-back is a deliberate back-off (20 µs
/// growing to 10 ms). A cgroup can stay in FREEZING while new tasks keep appearing; the kernel
/// documentation's remedy is to thaw and retry, which this does once every 100 ms. A freeze that
/// misses its deadline is thawed back. The v1 freezer is hierarchical: sub-cgroups freeze with
/// their parent, and the report counts their processes.
///
/// `freezer.state` stays open for the freezer's life (shared with the app's `AppCgroups` when it
/// comes from there), read and written with pread/pwrite. Its cgroup.procs is opened for each read:
/// v1 caches the pid list of an open file (pidlist_array_load) and hands the cached list to a pread
/// from 0 within a second of the last read, so a kept descriptor would count processes that are
/// gone.
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

    /// Writes THAWED. It takes effect within the write (the state reads THAWED at once), and
    /// is what lets a v1-frozen task act on a SIGKILL already queued.
    package func setThawed() throws(SystemError) { try stateControl.write("THAWED") }

    package func beginFreeze(now: UInt64, deadline: UInt64) -> FreezeOperation { begin(.freeze, now: now, deadline: deadline) }
    package func beginThaw(now: UInt64, deadline: UInt64) -> FreezeOperation { begin(.thaw, now: now, deadline: deadline) }

    private func begin(_ direction: FreezeDirection, now: UInt64, deadline: UInt64) -> FreezeOperation {
        var steps = Steps(freezer: self, direction: direction, lastRetry: now, failedAtStart: nil)
        do { try stateControl.write(direction == .freeze ? "FROZEN" : "THAWED") } catch {
            // The write's error is what is reported. A freeze is rolled back: FROZEN never took, so
            // a THAWED refused too (the cgroup removed) leaves nothing frozen.
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
            // The look alone, for the back-off: what the loop did before it (a turn with other
            // work, or time given to the app's busy tasks) is not what a re-read costs.
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
            // The operation has already failed with its own error, which is what is reported; THAWED is
            // refused only for a cgroup removed meanwhile, which holds nothing frozen.
            if direction == .freeze { try? freezer.setThawed() }
        }
    }
}
