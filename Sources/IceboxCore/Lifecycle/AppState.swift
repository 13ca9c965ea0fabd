/// The lifecycle states. launching is iOS's Inactive (until ready); exited, terminated and
/// evicted are Not Running, kept apart so a user sees why.
public enum AppState: String, Codable, Sendable, CaseIterable {
    /// Started, not ready yet (iOS's Inactive): ready at once for `ReadyMode.exec`, else when the
    /// readiness check passes.
    case launching
    /// Running in the foreground.
    case active
    /// Notified of going to the background, in its grace: still running, frozen when it ends.
    case background
    /// Frozen by the kernel: no CPU at all, memory kept.
    case suspended
    /// Ended on its own.
    case exited
    /// Ended by a terminate (SIGTERM, SIGKILL after the time-out).
    case terminated
    /// Killed without notice to free memory; relaunched, it is told to restore its state.
    case evicted
    /// Checkpointed to disk by CRIU (`icebox evict --to-disk`, or the policy with `--evict-to
    /// disk`): no process and no memory, its whole state in image files; a resume restores it where
    /// it stopped (a failed restore relaunches it cold, told to restore).
    case onDisk = "on-disk"

    /// Whether the app has ended (exited, terminated or evicted).
    public var isEnded: Bool { self == .exited || self == .terminated || self == .evicted }
}
