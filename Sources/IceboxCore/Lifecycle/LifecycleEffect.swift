import IceboxSystem

/// What happens to an app: a request, a message from the app, the kernel's answer, or time.
/// `AppLifecycle.handle(_:now:)` takes one and returns the effects.
package enum LifecycleInput: Sendable, Equatable {
    /// The app counts as ready: exec succeeded, the probe answered, or READY=1 came (`.notify`).
    case ready
    /// A message on the app's NOTIFY_SOCKET.
    case notify(NotifyMessage)
    /// `icebox suspend`: notice, grace, freeze. `notice` is the signal to send, decided by the
    /// caller (it reads the app's signal mask in /proc); `grace`, when given, is this suspend's
    /// grace instead of the app's `--grace` (`icebox suspend --grace`).
    case suspend(waiter: Int?, notice: Notice?, grace: UInt64? = nil)
    case resume(waiter: Int?, waitReady: Bool = false)
    /// SIGTERM, then SIGKILL after `timeout`.
    case terminate(waiter: Int?, timeout: UInt64)
    /// Kill without notice (as memory pressure does).
    case evict(waiter: Int?)
    /// `icebox evict --to-disk`: checkpoint a suspended app to disk (CRIU), its processes and
    /// memory gone, its state kept; a resume restores it.
    case evictToDisk(waiter: Int?)
    /// The checkpoint started by `.checkpoint` ended (written, or failed: then a kill).
    case checkpointEnded(CheckpointOutcome)
    /// The policy chose this app: evict it, through Suspended if it is not there yet, its
    /// notice (decided by the caller, as for `.suspend`) and grace cut to `grace`; `toDisk`:
    /// checkpoint it once suspended rather than kill it (`--evict-to disk`, an app that can go).
    case policyVictim(grace: UInt64, notice: Notice?, toDisk: Bool = false)
    /// A deadline of this app passed (`nextDeadline`).
    case tick
    case freezeConfirmed(FreezeOutcome)
    case freezeFailed(String)
    case thawConfirmed(FreezeOutcome)
    case thawFailed(String)
    /// The main process ended (nil: it ended, but how is unknown: re-adopted, not our child).
    case exited(Termination?)
    /// What was left of the app is gone and its cgroups removed (after `.destroy`).
    case cleanedUp(leftovers: Int, problems: [String])
    /// The app's memory was compacted while suspended (the next resume says so).
    case compacted
    /// Someone moved the main process out of the cgroup that freezes the app, to `to`
    /// (`AppLifecycle.leftCgroup` says what follows).
    case leftCgroup(to: String)
    /// The kernel says a suspended app is no longer frozen, and icebox did not thaw it:
    /// someone wrote its freezer (`how`: what the kernel shows, for the log). It runs.
    case thawedOutside(how: String)
    /// The kernel says an active app is frozen by a write to its freezer that icebox did not
    /// make (`how`: what the kernel shows, for the log). It no longer runs.
    case frozenOutside(how: String)
    /// Re-adopted with a terminate or eviction under way (`AppRecord.endIntent`): finish it.
    /// `frozen`: the kernel shows the app frozen, or a freeze asked for (thawed to act on SIGTERM).
    case resumeEnding(frozen: Bool)

    /// The background notice to send, and why that one.
    package struct Notice: Sendable, Equatable {
        package var signal: Int32
        package var why: String
    }
}

/// A confirmed freeze or thaw, as the lifecycle records it.
package struct FreezeOutcome: Sendable, Equatable {
    package var backend: BackendKind
    package var durationNanos: UInt64
    package var tasks: Int
}

/// What the supervisor must do for a transition. The lifecycle decides; the supervisor's
/// loop carries the effects out, in order, and feeds the outcomes back as inputs.
package enum LifecycleEffect: Sendable, Equatable {
    /// A signal to the app's main process (the notice, the foreground signal).
    case signal(Int32)
    /// A signal to every process of the app (SIGTERM on terminate).
    case signalMembers(Int32)
    /// Start a freeze; its outcome comes back as `.freezeConfirmed` or `.freezeFailed`.
    case freeze(deadline: UInt64)
    /// Roll back a freeze in flight (the app was resumed, or is ending): it runs again.
    case cancelFreeze
    /// Start a thaw; its outcome comes back as `.thawConfirmed` or `.thawFailed`.
    case thaw(deadline: UInt64)
    /// Thaw without waiting for confirmation (`AsideThaw` says why): for a termination the kill
    /// deadline bounds it; the rest of an app shown as running must not stay frozen.
    case thawAside(AsideThaw)
    /// Kill every process of the app now.
    case killAll
    /// Start a checkpoint to disk of the frozen app (CRIU's dump, then a sync of its images); its
    /// outcome comes back as `.checkpointEnded`, by the policy's `--criu-timeout` at the latest
    /// (the daemon keeps that deadline: it owns the run).
    case checkpoint
    /// Remove a checkpoint's images (the app was terminated or evicted while on its way to
    /// disk: nothing will restore them, and they hold its whole heap).
    case discardImages(String)
    /// Stop the readiness probe (ready, or given up).
    case stopProbe
    case log(Event)
    /// A line to a waiting client, without ending its wait. `event`: the step the line tells of, as
    /// logged in the same transition (the client builds its typed result from it, not from the
    /// line's text); nil for a line that tells of no step.
    case report(waiter: Int, line: String, failed: Bool, event: Event? = nil)
    /// This app's part of a client's wait is over (with a last line, maybe, and the step's event,
    /// as for `.report`).
    case settle(waiter: Int, line: String?, failed: Bool, event: Event? = nil)
    /// This app's part of a client's request is refused, nothing done; `code` says why (75:
    /// not now, the same request may succeed later).
    case refuse(waiter: Int, line: String, code: ExitCode)
    /// The app's registry record changed.
    case persist
    /// The app is ready (a cold start): its memory now counts against the policy's budget.
    case launched
    /// The app is suspended: the policy's follow-ups (the lock check, compaction) are due.
    case frozen
    /// The main process is gone: kill what is left, remove the cgroups and the notify socket, then
    /// feed `.cleanedUp` back.
    case destroy
    /// The app has ended; `line`: its last word to listeners (an attached client, `daemon --stop`).
    case ended(line: String)

    /// An event for the log (`handle` puts these before the effects that act).
    package var isLog: Bool {
        if case .log = self { return true }
        return false
    }
}
