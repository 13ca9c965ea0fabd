/// The parts of the daemon's loop that keep time: each a deadline and work to do then.
/// `nextTimeoutNanos` and `fireDeadlines` both go through this one list, each through one
/// exhaustive switch, so no part can be waited for and never fired, or the reverse.
enum LoopTimer: CaseIterable {
    case clients  // connections whose final reply went out, or that stopped reading (ClientTable)
    case spawnPoolFill  // parking the spawn stand-ins wanted, after a quiet period (SpawnPool)
    case standInDepartures  // stand-ins let go that have not exited yet (StandInDepartures)
    case launches  // launches whose stand-in has not answered by their deadline (PendingLaunches)
    case sweeps  // re-checks of cgroups being removed with no app to own them (CgroupSweeper)
    case acceptGate  // accepting clients again after a shortage of descriptors (AcceptGate)
    case policyCheck  // the memory policy's next look at the apps (PolicyEngine)
    case metricsFile  // the metrics file's next rewrite (MetricsFile)
    case notifyDrops  // the report of datagrams dropped on the shared notify socket (DescriptorShedding)
    case appLogs  // the apps' output logs' rotation (AppLogRotator)
    case restores  // restores from disk past their deadline (RestoreJob)
    case apps  // every app's own deadlines (AppDeadlines, LiveApp `nextDeadline`)
    case idleExit  // a daemon with nothing to do leaves (IdleExit)
}

extension Daemon {
    /// When `timer` next needs the loop (monotonic ns); nil: not until something happens.
    func deadline(of timer: LoopTimer, now: UInt64) -> UInt64? {
        switch timer {
        case .clients: return clients.nextDeadline
        case .spawnPoolFill: return stopping ? nil : spawnPool.fillAt  // a stopping daemon parks none
        case .standInDepartures: return spawnPool.departures.nextDeadline
        case .launches: return pendingLaunches.nextDeadline
        case .sweeps: return sweeper.nextDeadline
        case .acceptGate: return acceptGate.nextDeadline
        case .policyCheck: return policyEngine.nextDeadline
        case .metricsFile: return metricsFile.nextDeadline
        case .notifyDrops: return descriptors.nextDeadline
        case .appLogs: return appLogs?.nextDeadline
        case .restores: return restores.values.lazy.map(\.run.deadline).min()
        case .apps: return appDeadlines.earliest
        case .idleExit: return idleExit.deadline(idle: isIdle, now: now)
        }
    }

    /// Does `timer`'s work, now that its deadline has come.
    func fire(_ timer: LoopTimer, now: UInt64) {
        switch timer {
        // Finished clients whose last replies were not read in time.
        case .clients: for fd in clients.overdue(now: now) { closeClient(fd) }
        case .spawnPoolFill: fillSpawnPool()
        case .standInDepartures: spawnPool.departures.fire(now: now)
        case .launches: spawnsOverran(now: now)
        case .sweeps: fireSweeps(now: now)
        case .acceptGate: resumeAccepting()
        case .policyCheck: if policyEngine.takeDueCheck(now: now) { enforcePolicy() }
        case .metricsFile: writeMetricsFile(now: now)
        case .notifyDrops: logSharedNotifyDrops(now: now)
        case .appLogs: stepAppLogs(now: now)
        case .restores: for job in Array(restores.values) where job.run.deadline <= now { restoreOverran(job) }
        case .apps: fireAppDeadlines(now: now)
        case .idleExit: break  // the loop asks `shouldExit` before every sleep, and leaves there
        }
    }

    /// What is due, in the order of `LoopTimer`.
    func fireDeadlines(now: UInt64) {
        for timer in LoopTimer.allCases {
            if let due = deadline(of: timer, now: now), due <= now { fire(timer, now: now) }
        }
    }

    /// How long the loop may sleep: until the earliest deadline (nil: none), at most a minute.
    func nextTimeoutNanos(now: UInt64) -> UInt64? {
        var next: UInt64?
        for timer in LoopTimer.allCases { next = next.earlier(deadline(of: timer, now: now)) }
        guard let next else { return nil }
        return min(next.saturatingSub(now), 60_000_000_000)
    }
}
