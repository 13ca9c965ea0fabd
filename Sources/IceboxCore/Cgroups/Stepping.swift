import Glibc
import IceboxSystem

/// What a driver needs of an operation in steps after one look: finished (either way), or waiting
/// for `recheckAt` (monotonic ns) or `watch` (POLLPRI/EPOLLPRI on cgroup.events, owned by the
/// operation), whichever is first. `FreezeProgress` and `DestroyProgress` answer so, driven alike.
package protocol StepProgress {
    /// nil once the operation has finished; until then, when to step it again.
    var pending: (recheckAt: UInt64, watch: Int32?)? { get }
}

/// The one way a thread that may block drives an operation in steps to its end: a one-shot command
/// (`Freezer.freeze`), a daemon not serving yet (`Daemon.clearLeftovers`) or any more
/// (`CgroupSweeper.drain`), a test. The daemon's loop never blocks: it steps the same operations
/// from epoll and its deadlines (`CgroupRemoval`).
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
