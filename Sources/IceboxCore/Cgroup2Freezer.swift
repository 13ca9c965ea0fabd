import IceboxSystem

/// Freezing through cgroup v2: write `cgroup.freeze`, then wait for `frozen 1` in
/// `cgroup.events`. A freeze that misses its deadline, or fails half-way, is rolled back.
public struct Cgroup2Freezer: Freezer {
    public let cgroup: Cgroup2
    public var kind: BackendKind { .cgroup2 }

    public init(cgroup: Cgroup2) { self.cgroup = cgroup }

    public func freeze(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        let start = Clock.monotonicNanos()
        let ok: Bool
        do {
            try cgroup.setFrozen(true)
            ok = try cgroup.waitForEvents(until: deadline) { $0.frozen || !$0.populated }.satisfied
        } catch {
            try? cgroup.setFrozen(false)
            throw .system(error)
        }
        let took = Clock.monotonicNanos() - start
        if ok { return FreezeReport(backend: .cgroup2, durationNanos: took, tasks: cgroup.procs().count) }
        let stuck = StuckTask.describe(pids: cgroup.procs(), skippingStopped: false)
        try? cgroup.setFrozen(false)
        throw .timeout(FreezeTimeout(backend: .cgroup2, waitedNanos: took, stuck: stuck))
    }

    public func thaw(deadline: UInt64) throws(FreezeFailure) -> FreezeReport {
        let start = Clock.monotonicNanos()
        try step { () throws(SystemError) in try cgroup.setFrozen(false) }
        let ok = try step { () throws(SystemError) in try cgroup.waitForEvents(until: deadline) { !$0.frozen }.satisfied }
        let took = Clock.monotonicNanos() - start
        if ok { return FreezeReport(backend: .cgroup2, durationNanos: took, tasks: cgroup.procs().count) }
        throw .timeout(FreezeTimeout(backend: .cgroup2, waitedNanos: took, stuck: []))
    }

    public func isFrozen() -> Bool { (try? cgroup.events().frozen) ?? false }
    public func freezeStarted() -> Bool { cgroup.freezeRequested() }
}
