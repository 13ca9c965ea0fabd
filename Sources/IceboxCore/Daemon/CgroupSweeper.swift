import Glibc
import IceboxSystem

/// Cgroups no app owns any more (a launch rolled back, a restore that failed), each a
/// `CgroupRemoval` stepped as an app's is (Daemon+Sweeps). While a name's cgroups are swept
/// the name cannot be launched again (a v2 cgroup cannot be renamed out of the way).
final class CgroupSweeper {
    struct Sweep {
        let name: String
        var removal: CgroupRemoval
        let what: String  // whose cgroups these were, for the event: "a launch rolled back"
        let then: LaunchOptions?  // the launch to make once the name is free again
        let startedAt: UInt64
        var watched: Int32?  // the cgroup.events descriptor the loop watches for it
    }

    /// What the loop should do after a step.
    enum Step {
        case watch(name: String, fd: Int32)  // still waiting: watch `fd` (EPOLLPRI)
        case waiting
        /// It ended; the destroy closed its descriptors: a watched one is forgotten (number
        /// reused).
        case ended(Sweep, CgroupRemoval.End, at: UInt64)
    }

    private var sweeps: [String: Sweep] = [:]

    var isEmpty: Bool { sweeps.isEmpty }

    func contains(_ name: String) -> Bool { sweeps[name] != nil }
    var nextDeadline: UInt64? { sweeps.values.compactMap(\.removal.recheckAt).min() }

    /// Kills what is in `cgroups` and begins their removal (`mainPID`: not counted a leftover).
    func begin(_ cgroups: AppCgroups, of name: String, what: String, mainPID: pid_t?, then: LaunchOptions?, now: UInt64) -> Step {
        let (removal, end) = CgroupRemoval.begin(cgroups, mainPID: mainPID, now: now)
        let sweep = Sweep(name: name, removal: removal, what: what, then: then, startedAt: now)
        if let end { return .ended(sweep, end, at: now) }
        sweeps[name] = sweep
        return follow(name)
    }

    func fire(now: UInt64) -> [Step] {
        sweeps.values.filter { ($0.removal.recheckAt ?? .max) <= now }.map { step($0.name, now: now) }
    }

    func watching(_ fd: Int32, for name: String) { sweeps[name]?.watched = fd }

    /// The daemon stops: each removal is finished here, bounded (or the next daemon would take a
    /// rolled-back launch's marked process for an app); no follow-up launch.
    func drain() -> [(sweep: Sweep, end: CgroupRemoval.End, at: UInt64)] {
        let all = sweeps.values.sorted { $0.startedAt < $1.startedAt }
        sweeps = [:]
        return all.map { sweep in
            let cgroups = sweep.removal.cgroups
            let last = Stepping.run(from: cgroups.stepDestroy(now: Clock.monotonicNanos())) { cgroups.stepDestroy(now: $0) }
            return (sweep, CgroupRemoval.End(last) ?? .removed(leftovers: 0), Clock.monotonicNanos())
        }
    }

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
