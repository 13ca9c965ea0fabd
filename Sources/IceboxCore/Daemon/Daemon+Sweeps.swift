import Glibc
import IceboxSystem

/// The loop's side of the sweeper (CgroupSweeper): cgroups no app owns, removed without waiting.
extension Daemon {
    /// Kills what is in `cgroups` and removes them as a state of the loop. `what`: whose they
    /// were; `then`: a launch to make once the name is free again; `mainPID`: a launch's
    /// process, killed already and not counted a leftover.
    func sweep(_ cgroups: AppCgroups, of name: String, what: String, mainPID: pid_t? = nil, then: LaunchOptions? = nil) {
        follow(sweeper.begin(cgroups, of: name, what: what, mainPID: mainPID, then: then, now: Clock.monotonicNanos()))
    }

    func sweepChanged(_ name: String) {
        follow(sweeper.step(name, now: Clock.monotonicNanos()))
    }

    func fireSweeps(now: UInt64) {
        for step in sweeper.fire(now: now) { follow(step) }
    }

    /// The daemon stops: what is still being swept is finished here, bounded (CgroupSweeper).
    func drainSweeps() {
        for (sweep, end, at) in sweeper.drain() {
            if let fd = sweep.watched { watches.forget(fd) }
            logSweep(sweep, end, at: at)
        }
    }

    private func follow(_ step: CgroupSweeper.Step) {
        switch step {
        case .waiting: break
        case .watch(let name, let fd):
            do throws(SystemError) {
                try watch(fd, .sweep(name), events: EpollEvents.priority)
                sweeper.watching(fd, for: name)
            } catch {
                // The re-check time still brings the loop back: only the early wake-up is lost.
            }
        case .ended(let sweep, let end, let at):
            // Closed by the destroy that ended: out of the epoll set already.
            if let fd = sweep.watched { watches.forget(fd) }
            // Empty cgroups removed at once (most rollbacks) are not worth an event.
            if at > sweep.startedAt || end != .removed(leftovers: 0) { logSweep(sweep, end, at: at) }
            if let options = sweep.then, !stopping { launch(options, stdio: [], client: nil) }
        }
    }

    private func logSweep(_ sweep: CgroupSweeper.Sweep, _ end: CgroupRemoval.End, at: UInt64) {
        let took = DurationText.format(at.saturatingSub(sweep.startedAt))
        let failed = if case .failed = end { true } else { false }
        log(failed ? .error : .daemon, app: sweep.name, pid: nil, "cgroups of \(sweep.what): \(end) (in \(took))")
    }
}
