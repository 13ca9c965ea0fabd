import IceboxSystem

/// Why an app ended, decided once its main process is gone: on its own, terminated or evicted, with
/// what the kernel said of the main process (nil: unknown, as icebox is not the parent of an
/// adopted or re-adopted app). Decisions read this, never its text (`LifecycleText`).
package enum AppEnd: Sendable, Equatable {
    /// It ended on its own.
    case exited(Termination?)
    /// `icebox terminate`, a launch that was never ready, or the watchdog: begun at `since`
    /// (monotonic), ended on SIGTERM or by SIGKILL.
    case terminated(Termination?, by: EndSignal, since: UInt64)
    /// Killed without notice (memory pressure, `icebox evict`), begun at `since`.
    case evicted(Termination?, since: UInt64)
    /// Checkpointed to disk (begun at `since`): CRIU wrote its images and killed the tree.
    /// Not an end of the app, only of its processes: a resume restores it.
    case checkpointed(DiskCheckpoint, since: UInt64)

    /// The state the app ends in.
    package var state: AppState {
        switch self {
        case .exited: return .exited
        case .terminated: return .terminated
        case .evicted: return .evicted
        case .checkpointed: return .onDisk
        }
    }

    package var termination: Termination? {
        switch self {
        case .exited(let t), .terminated(let t, _, _), .evicted(let t, _): return t
        // CRIU's SIGKILL after the dump is not how the app ended: it did not.
        case .checkpointed: return nil
        }
    }

    /// What ended it, for a terminate or an eviction (an eviction is always SIGKILL).
    package var signal: EndSignal? {
        switch self {
        case .exited, .checkpointed: return nil
        case .terminated(_, let by, _): return by
        case .evicted: return .sigkill
        }
    }

    /// When the terminate or eviction began; nil for an app that ended on its own.
    package var since: UInt64? {
        switch self {
        case .exited: return nil
        case .terminated(_, _, let since), .evicted(_, let since), .checkpointed(_, let since): return since
        }
    }
}

/// The signal that ended a terminated or evicted app. The raw value is what the end event's
/// `reason` says on the wire (docs/protocol.md); ``EndResult/How`` is read back from it.
package enum EndSignal: String, Sendable, Equatable, CaseIterable {
    /// SIGTERM sufficed: the app ended before its time-out.
    case sigterm = "SIGTERM"
    /// SIGKILL: the time-out passed, or it was killed at once.
    case sigkill = "SIGKILL"
}
