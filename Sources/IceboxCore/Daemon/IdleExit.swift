/// When a daemon with nothing to do goes away: after `afterNanos` in a row with no app and no
/// client but stop requesters, counted from the first question that finds it idle *now*.
struct IdleExit {
    let afterNanos: UInt64?  // nil: the daemon never leaves on its own (a supervisor's engine)
    private(set) var since: UInt64?  // idle without a break since; nil while busy

    /// When the daemon leaves if it stays idle; nil while busy or when it never leaves.
    mutating func deadline(idle: Bool, now: UInt64) -> UInt64? {
        guard idle else {
            since = nil
            return nil
        }
        let start = since ?? now
        since = start
        return afterNanos.map { start.saturatingAdd($0) }
    }

    /// Whether the daemon has been idle long enough to leave now.
    mutating func isDue(idle: Bool, now: UInt64) -> Bool {
        guard let deadline = deadline(idle: idle, now: now) else { return false }
        return now >= deadline
    }
}
