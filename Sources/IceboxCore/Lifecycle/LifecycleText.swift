import IceboxSystem

/// The lifecycle's words in one place: the lines a client reads (what `icebox suspend` prints, the
/// library results' `lines` and `description`) and the events' details, each rendered from a typed
/// outcome. The lifecycle decides with the types (`GraceEnding`, `AppEnd`, `NoticeSent`,
/// `LifecycleFailure`) and calls these only to say so; nothing reads this text back.
package enum LifecycleText {
    // MARK: Lines

    /// "web  background → suspended  grace ended after …": a step of `app`, as a client prints it.
    package static func step(_ app: String, from: AppState, to: AppState, _ text: String) -> String {
        "\(app)  \(from.rawValue) → \(to.rawValue)  \(text)"
    }

    /// "web  hot start: …": a step that is no transition.
    package static func step(_ app: String, _ text: String) -> String { "\(app)  \(text)" }

    /// "web  already suspended (nothing to do)".
    package static func nothingToDo(_ app: String, already state: AppState) -> String {
        "\(app)  already \(state.rawValue) (nothing to do)"
    }

    /// "icebox: web is being thawed; …": why a request about `app` failed or was refused.
    package static func failure(_ app: String, _ why: LifecycleFailure) -> String {
        switch why {
        case .beingThawed: return "icebox: \(app) is being thawed; suspend it once it is active"
        case .beingStopped(suspending: true): return "icebox: \(app) is being stopped; not suspending it"
        case .beingStopped(suspending: false): return "icebox: \(app) is being stopped"
        case .notRunning: return "icebox: \(app) is not running"
        case .resumedBeforeFrozen: return "icebox: \(app) was resumed before it was frozen"
        case .endedDuringThaw: return "icebox: \(app) ended during its thaw"
        case .endedBeforeFrozen(let how): return "icebox: \(app) ended before it was frozen: \(how)"
        case .endedBeforeReady(let how): return "icebox: \(app) ended before it was ready: \(how)"
        case .freezeFailed(let why): return "icebox: \(app): " + freezeFailed(why)
        case .thawFailed(let why): return "icebox: \(app): " + thawFailed(why)
        case .notReadyAfterResume(let within):
            return "icebox: \(app) did not say READY=1 within \(DurationText.format(within)) of its resume"
        case .launchAbandoned(let why): return "icebox: \(app) \(why)"
        case .beingCheckpointed: return "icebox: \(app) is being checkpointed to disk; resume it once it is on disk (that restores it)"
        case .notSuspended(let state):
            return "icebox: \(app) is \(state.rawValue): evict --to-disk checkpoints suspended apps (icebox suspend \(app) first)"
        }
    }

    // MARK: Suspend

    /// "SIGUSR1 sent (the app handles it); grace 5s", or "…; grace 0: freezing at once".
    package static func notice(_ notice: NoticeSent, graceNanos: UInt64) -> String {
        let told: String
        switch notice {
        case .signal(let sig, let why): told = "\(Signals.name(of: sig)) sent (\(why))"
        case .disabled: told = "no notice (--background-signal none)"
        case .noHandler: told = "no notice (the app has no SIGUSR1 handler)"
        }
        return "\(told); " + (graceNanos == 0 ? "grace 0: freezing at once" : "grace \(DurationText.format(graceNanos))")
    }

    /// "grace ended after 3.1 ms (READY=1, extended 2×), frozen in 80 µs (cgroup2, 1 process)".
    package static func frozen(_ how: GraceEnding, graceUsedNanos: UInt64, extensions: Int, _ outcome: FreezeOutcome) -> String {
        let grace: String
        switch how {
        case .zero: grace = "no grace (grace 0)"
        case .ready, .expired:
            let extended = extensions > 0 ? ", extended \(extensions)×" : ""
            grace = "grace ended after \(DurationText.format(graceUsedNanos)) (\(how.rawValue)\(extended))"
        }
        let unit = outcome.backend == .signal ? "thread" : "process"
        let plural = outcome.tasks == 1 ? "" : outcome.backend == .signal ? "s" : "es"
        return
            "\(grace), frozen in \(DurationText.format(outcome.durationNanos)) (\(outcome.backend.rawValue), \(outcome.tasks) \(unit)\(plural))"
    }

    package static func freezeFailed(_ why: String) -> String { "freeze failed: \(why)" }

    // MARK: Resume

    /// "; SIGUSR2 sent" after a resume that sends the foreground signal, else "".
    package static func foreground(_ signal: Int32?) -> String { signal.map { "; \(Signals.name(of: $0)) sent" } ?? "" }

    /// "thawed in 40 µs (cgroup2); SIGUSR2 sent; first resume after a compaction".
    package static func thawed(_ outcome: FreezeOutcome, foreground: Int32?, afterCompaction: Bool) -> String {
        let compacted = afterCompaction ? "; first resume after a compaction" : ""
        return
            "thawed in \(DurationText.format(outcome.durationNanos)) (\(outcome.backend.rawValue))\(Self.foreground(foreground))\(compacted)"
    }

    package static func thawFailed(_ why: String) -> String { "thaw failed: \(why)" }

    /// A resume during the grace: the line a client reads, and the event's detail.
    package static func resumedDuringGrace(foreground: Int32?) -> (line: String, detail: String) {
        let fg = Self.foreground(foreground)
        return ("resumed during its grace period\(fg)", "resumed during its grace period; not frozen\(fg)")
    }

    /// "hot start: resume → ready in 2 ms (READY=1)".
    package static func hotStart(_ tookNanos: UInt64) -> String {
        "hot start: resume → ready in \(DurationText.format(tookNanos)) (READY=1)"
    }

    // MARK: The end

    /// How the main process ended, in words: "exited with status 0", "killed by SIGKILL", or
    /// why that is unknown (`adopted`: by `icebox adopt`; else re-adopted by a new daemon).
    package static func how(_ termination: Termination?, adopted: Bool) -> String {
        termination?.description
            ?? (adopted
                ? "exited (status unknown: adopted, icebox is not its parent)"
                : "ended (exit status unknown: re-adopted after a daemon restart)")
    }

    /// "checkpointed to disk in 412 ms (dump 380 ms, sync 32 ms): image 6.8 MiB, 13.1 MiB freed"
    package static func checkpointed(_ written: DiskCheckpoint, tookNanos took: UInt64) -> String {
        let freed = written.memoryBytes.map { ", \(SizeText.format($0)) of memory freed" } ?? ""
        return "checkpointed to disk in \(DurationText.format(took)) (dump \(DurationText.format(written.dumpNanos)), sync "
            + "\(DurationText.format(written.syncNanos))): image \(SizeText.format(written.imageBytes))\(freed)"
    }

    /// "restored from disk in 74 ms (image 11.5 MiB)"
    package static func restored(restoreNanos: UInt64, imageBytes: UInt64?, foreground: Int32?) -> String {
        let image = imageBytes.map { " (image \(SizeText.format($0)))" } ?? ""
        return "restored from disk in \(DurationText.format(restoreNanos))\(image)" + Self.foreground(foreground)
    }

    /// A checkpoint that failed, and what is done instead.
    package static func checkpointFailed(_ why: String, then: AppLifecycle.Ending?) -> String {
        "checkpoint to disk failed: \(why); " + (then == .terminate ? "terminating it as asked" : "evicting it by a kill instead")
    }

    /// The end event's detail: "terminated in 3 ms; killed by SIGTERM; killed 2 remaining processes".
    /// `took`: from the terminate or eviction (or, for an app that ended on its own, its launch).
    package static func ended(
        _ end: AppEnd, how: String, tookNanos took: UInt64, leftovers: Int, startLimitHit: String?, problems: [String]
    ) -> String {
        var detail: String
        switch end {
        case .evicted: detail = "evicted without notice: killed and reaped in \(DurationText.format(took)); \(how)"
        case .terminated: detail = "terminated in \(DurationText.format(took)); \(how)"
        case .exited: detail = "\(how) after \(DurationText.format(took))"
        case .checkpointed(let written, _): detail = checkpointed(written, tookNanos: took)
        }
        if leftovers > 0 { detail += "; killed \(leftovers) remaining process\(leftovers == 1 ? "" : "es")" }
        if let startLimitHit { detail += "; \(startLimitHit), not restarted" }
        if !problems.isEmpty { detail += "; cleanup: " + problems.joined(separator: "; ") }
        return detail
    }
}

/// Why the lifecycle tells a client no (or that its wait ends in failure), as data: rendered by
/// `LifecycleText.failure(_:_:)`.
package enum LifecycleFailure: Sendable, Equatable {
    case beingThawed
    case beingStopped(suspending: Bool)
    case notRunning
    case resumedBeforeFrozen
    case endedDuringThaw
    /// `how`: the main process's end, in words (`LifecycleText.how`).
    case endedBeforeFrozen(how: String)
    case endedBeforeReady(how: String)
    case freezeFailed(String)
    case thawFailed(String)
    /// `resume --wait-ready`: no READY=1 within the ready time-out.
    case notReadyAfterResume(within: UInt64)
    /// A launch that will never be ready: `why` says what ends it.
    case launchAbandoned(String)
    /// A resume while CRIU dumps the app.
    case beingCheckpointed
    /// `evict --to-disk` of an app that is not suspended (in `state`).
    case notSuspended(AppState)
}
