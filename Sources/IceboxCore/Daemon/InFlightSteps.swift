import Glibc

/// A freeze or thaw the kernel is working on, a state of the loop: operation, purpose, re-check.
struct FreezeInFlight {
    var operation: FreezeOperation
    /// Why it runs when the lifecycle does not wait for it (a thaw so a frozen app can act on
    /// SIGTERM, or one a previous daemon began): only logged. nil: the lifecycle's own.
    let aside: AsideThaw?
    var recheckAt: UInt64?  // stepped then unless cgroup.events woke the loop first
}

/// A removal of cgroups in flight, stepped by the loop: an app's (`LiveApp.removal`) or what no
/// app owns (`CgroupSweeper`). A thread that may block drives the same destroy with `Stepping`.
struct CgroupRemoval {
    /// How long the cgroups may take to empty before the removal gives up and says what stays.
    static let timeoutNanos: UInt64 = 5_000_000_000

    enum End: Equatable, CustomStringConvertible {
        case removed(leftovers: Int)  // every directory gone; `leftovers` processes killed inside
        case failed([String])  // what stays, each naming its path and why

        /// The outcome of a finished destroy; nil while it waits.
        init?(_ progress: DestroyProgress) {
            switch progress {
            case .waiting: return nil
            case .done(let leftovers): self = .removed(leftovers: leftovers)
            case .failed(let problems): self = .failed(problems)
            }
        }

        var description: String {
            switch self {
            case .removed(let leftovers) where leftovers > 0:
                "\(leftovers) leftover process\(leftovers == 1 ? " was" : "es were") killed and its cgroup removed"
            case .removed: "its cgroup was removed"
            case .failed(let problems): "its cgroup could not be removed: " + problems.joined(separator: "; ")
            }
        }
    }

    let cgroups: AppCgroups
    private(set) var recheckAt: UInt64?  // nil: on a wake-up only
    /// The descriptor whose EPOLLPRI steps it early (cgroup.events, closed by the destroy).
    private(set) var watch: Int32?

    /// Kills what is inside and takes the first look (`mainPID`: not counted a leftover): the
    /// end, or nil: step it at `recheckAt` or when `watch` fires.
    static func begin(_ cgroups: AppCgroups, mainPID: pid_t?, now: UInt64) -> (removal: CgroupRemoval, end: End?) {
        var removal = CgroupRemoval(cgroups: cgroups)
        let end = removal.take(cgroups.beginDestroy(now: now, deadline: now.saturatingAdd(timeoutNanos), mainPID: mainPID))
        return (removal, end)
    }

    /// One more look (never waits): the end, or nil while it still waits.
    mutating func step(now: UInt64) -> End? { take(cgroups.stepDestroy(now: now)) }

    private mutating func take(_ progress: DestroyProgress) -> End? {
        if case .waiting(let at, let fd) = progress {
            recheckAt = at
            watch = fd
        } else {
            recheckAt = nil
            watch = nil
        }
        return End(progress)
    }
}
