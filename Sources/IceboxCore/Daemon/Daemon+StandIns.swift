import Glibc
import IceboxSystem

/// The loop's side of the spawn pool (SpawnPool): parking stand-ins, hearing from them, and
/// handing one to a launch.
extension Daemon {
    /// How long the loop waits after the last launch before it parks a stand-in. A stand-in
    /// joining its cgroups holds the kernel's cgroup_threadgroup_rwsem for writing through an
    /// RCU grace period, and every fork and clone on the host waits for that: parked between
    /// two launches of a burst, it would put its grace period into the second one's spawn.
    /// Within a burst, launches that find no stand-in move their apps themselves, and
    /// back-to-back writes to cgroup.procs cost little (the kernel stays on its slow path).
    static let standInQuietNanos: UInt64 = 50_000_000

    /// Parks a stand-in for the launches this daemon makes by default.
    func startSpawnPool() {
        // A host where no backend resolves parks no stand-in: launches then fork as usual and say
        // what is missing.
        guard let backend = try? facts.resolve(.auto), let kind = spawnPool.kind(for: backend) else { return }
        spawnPool.want(kind)
        deferSpawnPoolFill()
    }

    /// The next fill, a quiet period from now.
    func deferSpawnPoolFill() {
        standInFillAt = spawnPool.wantsFill ? Clock.monotonicNanos().saturatingAdd(Self.standInQuietNanos) : nil
    }

    func fillSpawnPool() {
        standInFillAt = nil
        for change in spawnPool.fill() { follow(change) }
    }

    func standInReadable(_ fd: Int32) {
        follow(spawnPool.readable(fd))
    }

    /// A ready stand-in for a launch with `backend` (no longer watched: the launch owns it
    /// and discards it), or nil: none is needed, or none is ready (the launch spawns the
    /// direct way; the pool parks one for the next).
    func takeStandIn(for backend: BackendKind) -> SpawnPool.Entry? {
        guard let kind = spawnPool.kind(for: backend) else { return nil }
        let entry = spawnPool.take(kind)
        deferSpawnPoolFill()  // a launch, taken a stand-in or not: the quiet period starts again
        if let entry { unwatch(entry.standIn.watchDescriptor) }
        return entry
    }

    /// The daemon stops: every parked stand-in goes, with its directories.
    func drainSpawnPool() {
        for entry in spawnPool.drain() { unwatch(entry.standIn.watchDescriptor) }
    }

    private func follow(_ change: SpawnPool.Change) {
        switch change {
        case .none: break
        case .started(let entry):
            let fd = entry.standIn.watchDescriptor
            // Unwatched, it is still found ready when a launch takes it (SpawnPool.take looks).
            try? watch(fd, .standIn(fd))
        case .lost(let entry, let reason):
            if let entry { unwatch(entry.standIn.watchDescriptor) }
            log(Event(app: "-", pid: getpid(), kind: .daemon, detail: reason, at: .read()))
            if standInFillAt == nil { deferSpawnPoolFill() }
        }
    }
}
