/// What one app may need the loop for at a time of its own (LoopTimer `apps` fires the apps
/// whose earliest one has come). `LiveApp.nextDeadline` and `Daemon.fireAppDeadlines` both go
/// through this one list, each through one exhaustive switch, so a timer added to the app is
/// both scheduled and fired.
enum AppTimer: CaseIterable {
    /// The lifecycle's own deadline: a grace period, the ready or kill time-out (`.tick`).
    case lifecycle
    /// The readiness probe's next attempt, or the abandoning of the one in flight.
    case probe
    /// The re-check of a freeze or thaw the kernel is working on (FreezeInFlight).
    case freezeRecheck
    /// The re-check of the app's cgroups being removed (CgroupRemoval).
    case removalRecheck
    /// The policy's look at whether a frozen app holds a lock others wait on.
    case lockCheck
    /// The report of datagrams from outside the app on its own notify socket (NotifyDrops).
    case notifyDrops
    /// A checkpoint to disk past its deadline (CheckpointWork).
    case checkpoint
    /// The policy's compaction of a frozen app's memory.
    case compaction
}

extension LiveApp {
    /// When `timer` next needs the loop (monotonic ns); nil: not armed. Each is made of
    /// properties that tell the daemon's schedule when they are set (`deadlineMayHaveChanged`):
    /// a new one must do the same.
    func deadline(of timer: AppTimer) -> UInt64? {
        switch timer {
        case .lifecycle: return lifecycle.nextDeadline
        case .probe: return probeAt
        case .freezeRecheck: return freeze?.recheckAt
        case .removalRecheck: return removal?.recheckAt
        case .lockCheck: return lockCheckAt
        case .notifyDrops: return notifyDrops.dueAt
        case .checkpoint: return checkpoint?.run.deadline
        case .compaction: return compactAt
        }
    }

    /// The earliest moment the loop must wake up for this app.
    var nextDeadline: UInt64? { AppTimer.allCases.lazy.compactMap { self.deadline(of: $0) }.min() }
}

extension Daemon {
    /// Each app whose deadline has come: whichever of its timers are due, in the order of
    /// `AppTimer`. Each is read again just before it fires, as the one before may have moved it
    /// (a tick that ended the app disarms the rest).
    func fireAppDeadlines(now: UInt64) {
        for name in appDeadlines.takeDue(now: now) {
            guard let app = apps[name] else { continue }
            defer { appDeadlines.touch(app) }  // taken off the schedule: its next deadline goes back on
            for timer in AppTimer.allCases {
                if let due = app.deadline(of: timer), due <= now { fire(timer, of: app, now: now) }
            }
        }
    }

    private func fire(_ timer: AppTimer, of app: LiveApp, now: UInt64) {
        switch timer {
        // At the time of the tick, not of the turn: the apps before it in this turn may have
        // logged events since, and this one's would be stamped before theirs.
        case .lifecycle: apply(.tick, to: app)
        case .probe:
            app.probeAt = nil
            startProbe(app)
        case .freezeRecheck: stepOperation(app)
        case .removalRecheck: stepDestroy(app)
        case .lockCheck: checkLocks(app)
        case .notifyDrops: logDroppedNotify(app, now: now)
        case .checkpoint: checkpointOverran(app)
        case .compaction:
            if app.record.state == .suspended {
                _ = compact(app, mode: policyEngine.policy.compactMode)
            } else {
                app.compactAt = nil
            }
        }
    }
}
