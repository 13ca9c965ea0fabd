/// What one app may need the loop for at a time of its own (LoopTimer `apps`): both
/// `LiveApp.nextDeadline` and `Daemon.fireAppDeadlines` switch over this one list.
enum AppTimer: CaseIterable {
    case lifecycle  // the lifecycle's own deadline: a grace period, the ready or kill time-out
    case probe  // the readiness probe's next attempt, or the abandoning of the one in flight
    case freezeRecheck  // the re-check of a freeze or thaw the kernel is working on
    case removalRecheck  // the re-check of the app's cgroups being removed
    case lockCheck  // the policy's look at whether a frozen app holds a lock others wait on
    case notifyDrops  // the report of datagrams from outside the app on its own notify socket
    case checkpoint  // a checkpoint to disk past its deadline
    case compaction  // the policy's compaction of a frozen app's memory
}

extension LiveApp {
    /// When `timer` next needs the loop (monotonic ns); nil: not armed. Each is made of
    /// properties that tell the schedule when they are set (`deadlineMayHaveChanged`).
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
    /// Each app whose deadline has come: its due timers, in the order of `AppTimer`, each read
    /// again just before it fires (a tick that ended the app disarms the rest).
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
        case .lifecycle: apply(.tick, to: app)  // stamped now, not at the turn's start
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
