import Glibc
import IceboxSystem

/// The loop's side of the spawn pool (SpawnPool): parking stand-ins and handing them out.
extension Daemon {
    /// How long the loop waits after the last launch before it parks a stand-in: one joining
    /// its cgroups holds cgroup_threadgroup_rwsem through an RCU grace period, which every
    /// fork on the host waits for; parked mid-burst, it would slow the next launch's spawn.
    static let standInQuietNanos: UInt64 = 50_000_000

    /// Parks a stand-in for the launches this daemon makes by default.
    func startSpawnPool() {
        // A host where no backend resolves parks no stand-in: launches say what is missing.
        guard let backend = try? facts.resolve(.auto), let kind = spawnPool.kind(for: backend) else { return }
        spawnPool.want(kind)
        deferSpawnPoolFill()
    }

    /// The next fill, a quiet period from now.
    func deferSpawnPoolFill() {
        spawnPool.fillAt = spawnPool.wantsFill ? Clock.monotonicNanos().saturatingAdd(Self.standInQuietNanos) : nil
    }

    func fillSpawnPool() {
        spawnPool.fillAt = nil
        for change in spawnPool.fill() { follow(change) }
    }

    func standInReadable(_ fd: Int32) {
        follow(spawnPool.readable(fd))
    }

    /// A ready stand-in for a launch with `backend` (now the launch's), or nil: none needed or
    /// ready.
    func takeStandIn(for backend: BackendKind) -> SpawnPool.Entry? {
        guard let kind = spawnPool.kind(for: backend) else { return nil }
        let entry = spawnPool.take(kind)
        deferSpawnPoolFill()  // a launch, taken a stand-in or not: the quiet period starts again
        if let entry { unwatch(entry.standIn.watchDescriptor) }
        return entry
    }

    /// The daemon stops: every stand-in goes, waited for (bounded): the loop has ended.
    func drainSpawnPool() {
        for entry in spawnPool.drain() { unwatch(entry.standIn.watchDescriptor) }
        for fd in spawnPool.departures.drain() { watches.forget(fd) }  // closed already: out of the epoll set
    }

    /// Lets a stand-in go without waiting: at its exit it is reaped and its directories
    /// removed. `app`: a launch held until then, the stand-in being in its v1 cgroups.
    func dismissStandIn(_ entry: SpawnPool.Entry, holding app: LiveApp? = nil) {
        let fd = spawnPool.departures.add(entry, holding: app, now: Clock.monotonicNanos())
        do throws(SystemError) {
            try watch(fd, .standInExit(fd))
        } catch {
            // Not watchable (no memory for epoll): waited for, bounded.
            entry.standIn.dismiss()
            standInExited(fd)
            return
        }
        // Held only until it exits (if already gone, its pidfd says so on the next turn).
        if let app, app.heldForStandIn == nil { app.heldForStandIn = [] }
    }

    /// A let-go stand-in exited: reaped, its directories removed, the launch it held goes on.
    func standInExited(_ fd: Int32) {
        guard let departure = spawnPool.departures.exited(fd) else { return }
        unwatch(fd)
        guard let app = departure.holding, apps[app.name] === app, let held = app.heldForStandIn else { return }
        app.heldForStandIn = nil
        for input in held { apply(input, to: app) }
    }

    private func follow(_ change: SpawnPool.Change) {
        switch change {
        case .none: break
        case .started(let entry):
            let fd = entry.standIn.watchDescriptor
            // Unwatched, it is still found ready when a launch takes it (SpawnPool.take looks).
            try? watch(fd, .standIn(fd))
        case .lost(let entry, let reason):
            if let entry {
                unwatch(entry.standIn.watchDescriptor)
                dismissStandIn(entry)
            }
            logDaemon(reason)
            if spawnPool.fillAt == nil { deferSpawnPoolFill() }
        }
    }
}
