/// How long an app's recent freezes took, so that a freeze of an app that takes hundreds of
/// µs or more is not re-read from its first microseconds on. Each re-read the daemon makes
/// while the kernel freezes is a wake-up taken from a CPU that the app's tasks need in order
/// to freeze (10-15 µs each in traces, with busy tasks): 100 busy processes froze in 0.65 ms
/// when the daemon re-read only once, against 0.79-0.82 ms on the 20 µs schedule
/// (benchmarks/RESULTS.md, session 24). Where a notification will come at once
/// (`FreezeOperation.expectPromptNotification`) it already re-reads that seldom; this is for
/// the rest: the v1 freezer, which has no notification, and a cgroup2 freeze within the
/// kernel's rate limit on cgroup.events (soon after the app's last thaw).
///
/// The first re-read waits for three quarters of the fastest of the last few freezes. An app
/// that has become faster is confirmed late at most once by that much: its faster freeze is
/// then the fastest, and the next wait shrinks with it.
struct FreezeHistory: Equatable {
    /// The last few confirmed freezes' durations (ns), oldest first.
    private(set) var recent: [UInt64] = []
    static let kept = 4
    /// Below this, the 20 µs schedule makes a handful of re-reads at most: nothing to skip.
    static let worthHoldingOff: UInt64 = 200_000

    mutating func record(_ nanos: UInt64) {
        if recent.count == Self.kept { recent.removeFirst() }
        recent.append(nanos)
    }

    /// How long after its start the next freeze need not be looked at again (ns), or nil
    /// where the schedule should stay as it is.
    var holdOff: UInt64? {
        guard let fastest = recent.min(), fastest >= Self.worthHoldingOff else { return nil }
        return fastest / 4 * 3
    }
}
