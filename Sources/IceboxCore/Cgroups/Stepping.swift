import Glibc
import IceboxSystem

/// What a driver needs to know of an operation in steps after one look at the kernel: it has
/// finished (either way), or it waits for `recheckAt` (monotonic ns) or for `watch` (a descriptor
/// for POLLPRI/EPOLLPRI, cgroup.events, owned by the operation) to fire, whichever comes first. A
/// freeze or thaw (`FreezeProgress`) and a cgroup's removal (`DestroyProgress`) both answer so, and
/// are driven alike.
package protocol StepProgress {
    /// nil once the operation has finished; until then, when to step it again.
    var pending: (recheckAt: UInt64, watch: Int32?)? { get }
}

/// The one way a thread that may block drives an operation in steps to its end: a one-shot command
/// (`Freezer.freeze`), a daemon clearing what a dead one left before it serves anyone
/// (`Daemon.clearLeftovers`) or finishing its sweeps once it has stopped serving
/// (`CgroupSweeper.drain`), a test. The daemon's loop never blocks: it steps the same operations
/// from epoll and its deadlines, with the same progress values (`CgroupRemoval`).
package enum Stepping {
    /// Steps until the operation has finished, sleeping in between in poll(2) on its watch until
    /// the re-check time (never past it: a notification lost or rate-limited by the kernel costs
    /// only the wait until then). The operation's own deadline ends it.
    package static func run<P: StepProgress>(from first: P, step: (_ now: UInt64) -> P) -> P {
        var progress = first
        while let (recheckAt, watch) = progress.pending {
            let now = Clock.monotonicNanos()
            // A signal or a failed poll only ends the sleep early: the step looks at the kernel.
            if recheckAt > now { Poll.nap(on: watch ?? -1, events: Int16(POLLPRI), timeoutNanos: recheckAt - now) }
            progress = step(Clock.monotonicNanos())
        }
        return progress
    }
}

extension FreezeProgress: StepProgress {
    package var pending: (recheckAt: UInt64, watch: Int32?)? {
        if case .waiting(let recheckAt, let watch) = self { (recheckAt, watch) } else { nil }
    }
}

extension DestroyProgress: StepProgress {
    package var pending: (recheckAt: UInt64, watch: Int32?)? {
        if case .waiting(let recheckAt, let watch) = self { (recheckAt, watch) } else { nil }
    }
}
