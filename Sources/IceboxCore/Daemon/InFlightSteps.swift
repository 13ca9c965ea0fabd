import Glibc

/// A freeze or thaw the kernel is working on for an app: a state of the loop, never a wait
/// in it. The operation, what it is for and when it is looked at again travel together, so
/// there is no re-check time without an operation, nor a purpose left over from the last one.
struct FreezeInFlight {
    var operation: FreezeOperation
    /// Why it runs when the lifecycle does not wait for it (a thaw so a frozen app can act on
    /// SIGTERM, or one a previous daemon began): only logged. nil: the lifecycle's own.
    let aside: AsideThaw?
    /// When the loop steps it again if cgroup.events has not woken it first; nil until a step
    /// has said.
    var recheckAt: UInt64?
}

/// A removal of cgroups in flight (AppCgroups' destroy, stepped by the loop): an app's after
/// its main process ended (`LiveApp.removal`), or what no app owns any more, a launch rolled
/// back or a restore that failed (`CgroupSweeper`). Both step it through here, so the loop has
/// one way to step a removal; a thread that may block drives the same destroy with `Stepping`.
struct CgroupRemoval {
    /// How long the cgroups may take to empty before the removal gives up and says what stays.
    static let timeoutNanos: UInt64 = 5_000_000_000

    /// How a removal ended.
    enum End: Equatable, CustomStringConvertible {
        /// Every directory gone; `leftovers` processes were found inside and killed.
        case removed(leftovers: Int)
        /// What stays, each naming its path and why (the errno, the tasks that did not die).
        case failed([String])

        /// The outcome of a finished destroy; nil while it waits.
        init?(_ progress: DestroyProgress) {
            switch progress {
            case .waiting: return nil
            case .done(let leftovers): self = .removed(leftovers: leftovers)
            case .failed(let problems): self = .failed(problems)
            }
        }

        /// For the event log: "its cgroup was removed", "2 leftover processes were killed and
        /// its cgroup removed", "its cgroup could not be removed: …".
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
    /// When the loop steps it again if cgroup.events has not woken it first; nil: on a wake-up only.
    private(set) var recheckAt: UInt64?
    /// The descriptor whose EPOLLPRI should step it early (the cgroups' cgroup.events, never
    /// closed here: the destroy closes it as it ends); nil: none, the re-check time only.
    private(set) var watch: Int32?

    /// One not yet begun (`begin` begins one); a test sets the re-check time.
    init(of cgroups: AppCgroups, recheckAt: UInt64? = nil) {
        self.cgroups = cgroups
        self.recheckAt = recheckAt
    }

    /// Kills what is inside and takes the first look (`mainPID`: not counted a leftover). The
    /// end when that look finished it (an empty cgroup goes at once), else nil: step it at
    /// `recheckAt` or when `watch` fires.
    static func begin(_ cgroups: AppCgroups, mainPID: pid_t?, now: UInt64) -> (removal: CgroupRemoval, end: End?) {
        var removal = CgroupRemoval(of: cgroups)
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
