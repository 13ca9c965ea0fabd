/// The lifecycle states. launching is iOS's Inactive (until ready); exited, terminated and
/// evicted are Not Running, kept apart so a user sees why.
public enum AppState: String, Codable, Sendable, CaseIterable {
    /// Started, not ready yet (iOS's Inactive): ready at once for `ReadyMode.exec`, else
    /// when the readiness check passes.
    case launching
    /// Running in the foreground.
    case active
    /// Told it is going to the background (the notice signal), in its grace period: it
    /// still runs, and is frozen when the grace ends.
    case background
    /// Frozen by the kernel: no CPU at all, memory kept.
    case suspended
    /// Ended on its own.
    case exited
    /// Ended by a terminate (SIGTERM, SIGKILL after the time-out).
    case terminated
    /// Killed without notice to free memory (an eviction); relaunched, it is told to
    /// restore its state.
    case evicted

    /// Whether the app has ended (exited, terminated or evicted).
    public var isEnded: Bool { self == .exited || self == .terminated || self == .evicted }
}
