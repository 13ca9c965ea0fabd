import Glibc
import IceboxSystem

/// What a freeze or thaw did and how long the kernel took to confirm it.
package struct FreezeReport: Sendable {
    package var backend: BackendKind
    package var durationNanos: UInt64  // write → confirmed
    package var tasks: Int  // threads that were confirmed
}

/// A task that did not freeze in time, with what it was doing (D-state I/O is the usual cause).
package struct StuckTask: Sendable, CustomStringConvertible {
    package var pid: pid_t
    package var tid: pid_t
    package var state: Character
    package var wchan: String

    package var description: String {
        let location = wchan.isEmpty || wchan == "0" ? "" : " in \(wchan)"
        return "pid \(pid) tid \(tid) state \(state)\(location)"
    }

    /// Where a task frozen by cgroup v2 sleeps (its wchan), in state S.
    static let frozenWaits: Set<String> = ["do_freezer_trap", "get_signal"]

    /// Every thread of the processes with its state and wait channel, likely culprits first: D,
    /// then R, then the rest. `skippingFrozen`: for a timed-out freeze, leave out the tasks already
    /// frozen (they did not hold it up); for a removal, a frozen task is what is stuck.
    static func describe(pids: [pid_t], skippingStopped: Bool, skippingFrozen: Bool = false) -> [StuckTask] {
        var out: [StuckTask] = []
        for pid in pids {
            for tid in ProcFS.threads(of: pid) {
                guard let state = ProcFS.state(pid: pid, tid: tid) else { continue }
                if skippingStopped && (state == "T" || state == "t") { continue }
                let wchan = ProcFS.wchan(pid: pid, tid: tid)
                // Already frozen, so not what held it up: in the v2 freezer's trap (from
                // get_signal, state S) or an old kernel's v1 refrigerator. (Linux 6.1+ shows a
                // v1-frozen task as D where it slept, so v1's list may name frozen tasks too.)
                if skippingFrozen && (Self.frozenWaits.contains(wchan) && state != "D" || wchan.hasSuffix("refrigerator")) { continue }
                out.append(StuckTask(pid: pid, tid: tid, state: state, wchan: wchan))
            }
        }
        func rank(_ t: StuckTask) -> Int { t.state == "D" ? 0 : t.state == "R" ? 1 : 2 }
        return out.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }
}

/// A freeze or thaw not done by its deadline; a freeze has been rolled back: the app runs.
package struct FreezeTimeout: Error, CustomStringConvertible, Sendable {
    package var backend: BackendKind
    package var waitedNanos: UInt64
    package var stuck: [StuckTask]
    package var direction: FreezeDirection = .freeze

    package var description: String {
        let list = stuck.prefix(8).map(\.description).joined(separator: "; ")
        switch direction {
        case .freeze:
            return "not frozen after \(DurationText.format(waitedNanos)) (\(backend.rawValue)); rolled back, the app runs"
                + (list.isEmpty ? "" : "; tasks not frozen: \(list)")
        case .thaw:
            return "not thawed after \(DurationText.format(waitedNanos)) (\(backend.rawValue))"
                + (list.isEmpty ? "" : "; tasks still stopped: \(list)")
        }
    }
}

package enum FreezeFailure: Error, CustomStringConvertible, Sendable {
    case timeout(FreezeTimeout)
    case system(SystemError)
    case gone(String)
    /// Abandoned with `FreezeOperation.cancel()` (a freeze in flight was rolled back).
    case cancelled
    /// A thaw that cannot happen: an ancestor cgroup is frozen (its path), and a cgroup is
    /// frozen while any ancestor is, whatever its own cgroup.freeze says.
    case frozenByAncestor(String)

    package var description: String {
        switch self {
        case .timeout(let t): return t.description
        case .system(let e): return e.description
        case .gone(let what): return what
        case .cancelled: return "cancelled (a freeze in flight was rolled back)"
        case .frozenByAncestor(let path): return "stays frozen: its ancestor \(path) is frozen (cgroup.freeze 1); thaw that one"
        }
    }
}

/// Freezes and thaws one set of processes, confirmed by the kernel, never left half-frozen.
package protocol Freezer: Sendable {
    var kind: BackendKind { get }
    /// Writes the freeze request now and returns the operation to step until the kernel
    /// confirms it or the deadline (monotonic ns) passes; never sleeps.
    func beginFreeze(now: UInt64, deadline: UInt64) -> FreezeOperation
    /// Writes the thaw request now; likewise.
    func beginThaw(now: UInt64, deadline: UInt64) -> FreezeOperation
    /// Freezes and waits for the kernel's confirmation up to the deadline (monotonic ns); on
    /// time-out, rolled back before throwing. Blocks: for one-shot commands, not an event loop.
    func freeze(deadline: UInt64) throws(FreezeFailure) -> FreezeReport
    func thaw(deadline: UInt64) throws(FreezeFailure) -> FreezeReport
    /// Whether the processes are frozen now (read from the kernel, not remembered).
    func isFrozen() -> Bool
    /// Whether a freeze was asked for and has not been undone, confirmed or not (for a
    /// daemon that takes over after a crash in the middle of one).
    func freezeStarted() -> Bool
}

extension Freezer {
    /// The blocking form: the stepwise operation, waited for with poll(2).
    package func freeze(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        var operation = beginFreeze(now: Clock.monotonicNanos(), deadline: deadline)
        return try operation.wait()
    }

    package func thaw(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        var operation = beginThaw(now: Clock.monotonicNanos(), deadline: deadline)
        return try operation.wait()
    }
}
