import Glibc
import IceboxSystem

/// Cgroups the daemon removes with no app left to own them: those of a launch rolled back
/// (Daemon+Launch `start`) and of a restore that failed (Daemon+Restore). Their removal used
/// to be waited for inside the loop (up to 5 s while something in them would not die), and
/// every other client waited with it. Here each is a `CgroupRemoval`, stepped as an app's is:
/// at its re-check time (`fire`) or when its cgroup.events changes (`changed`). The one owner
/// of those removals until they end; the loop's side (watching, the event log, what follows)
/// is in Daemon+Sweeps.
///
/// While a name's cgroups are swept the name cannot be launched again: the new cgroups would
/// be made where the old ones still are (Daemon `launch` refuses, try again). A cgroup v2
/// directory cannot be renamed out of the way (the kernel allows rename in v1 hierarchies
/// only).
final class CgroupSweeper {
    /// One removal under way.
    struct Sweep {
        let name: String
        var removal: CgroupRemoval
        /// Whose cgroups these were, for the event: "a launch rolled back".
        let what: String
        /// The launch to make once the name is free again (a failed restore's cold relaunch).
        let then: LaunchOptions?
        let startedAt: UInt64
        /// The cgroup.events descriptor the loop watches for it; nil: none (yet).
        var watched: Int32?
    }

    /// What the loop should do after a step.
    enum Step {
        /// Still waiting: watch `fd` (EPOLLPRI) if it is not watched yet.
        case watch(name: String, fd: Int32)
        /// Still waiting, on its re-check time only, or on a descriptor watched already.
        case waiting
        /// It ended (its descriptors closed by the destroy: a watched one is forgotten, not
        /// removed from the epoll set, as its number may be reused).
        case ended(Sweep, CgroupRemoval.End, at: UInt64)
    }

    private var sweeps: [String: Sweep] = [:]

    var isEmpty: Bool { sweeps.isEmpty }

    /// Whether the cgroups of an app of this name are still being removed.
    func contains(_ name: String) -> Bool { sweeps[name] != nil }

    /// The earliest re-check time, for the loop's sleep.
    var nextDeadline: UInt64? { sweeps.values.compactMap(\.removal.recheckAt).min() }

    /// Kills what is in `cgroups` and begins their removal (an empty cgroup goes at once).
    /// `mainPID`: the process the launch made, not counted a leftover.
    func begin(_ cgroups: AppCgroups, of name: String, what: String, mainPID: pid_t?, then: LaunchOptions?, now: UInt64) -> Step {
        let (removal, end) = CgroupRemoval.begin(cgroups, mainPID: mainPID, now: now)
        let sweep = Sweep(name: name, removal: removal, what: what, then: then, startedAt: now)
        if let end { return .ended(sweep, end, at: now) }
        sweeps[name] = sweep
        return follow(name)
    }

    /// Steps every removal whose re-check time has come.
    func fire(now: UInt64) -> [Step] {
        sweeps.values.filter { ($0.removal.recheckAt ?? .max) <= now }.map { step($0.name, now: now) }
    }

    /// The loop has registered `fd` for `name`.
    func watching(_ fd: Int32, for name: String) { sweeps[name]?.watched = fd }

    /// The daemon stops: each removal is finished here, waiting (bounded by its own deadline,
    /// `CgroupRemoval.timeoutNanos` from its start), as nothing else is served any more and
    /// the next daemon would take a rolled-back launch's process for an app (it carries the
    /// app's marks). Its follow-up launch is not made.
    func drain() -> [(sweep: Sweep, end: CgroupRemoval.End, at: UInt64)] {
        let all = sweeps.values.sorted { $0.startedAt < $1.startedAt }
        sweeps = [:]
        return all.map { sweep in
            let cgroups = sweep.removal.cgroups
            let last = Stepping.run(from: cgroups.stepDestroy(now: Clock.monotonicNanos())) { cgroups.stepDestroy(now: $0) }
            return (sweep, CgroupRemoval.End(last) ?? .removed(leftovers: 0), Clock.monotonicNanos())
        }
    }

    /// Looks at `name`'s removal again: its cgroup.events changed, or its re-check time came.
    func step(_ name: String, now: UInt64) -> Step {
        guard var sweep = sweeps[name] else { return .waiting }
        if let end = sweep.removal.step(now: now) {
            sweeps[name] = nil
            return .ended(sweep, end, at: now)
        }
        sweeps[name] = sweep
        return follow(name)
    }

    private func follow(_ name: String) -> Step {
        guard let sweep = sweeps[name], let fd = sweep.removal.watch, sweep.watched == nil else { return .waiting }
        return .watch(name: name, fd: fd)
    }
}
