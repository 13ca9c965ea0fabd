/// When a daemon with nothing to do goes away: once it has had no app and no client (other
/// than those waiting for its stop) for `afterNanos` in a row.
///
/// Every question takes whether the daemon is idle *now*: the count starts at the first
/// question that finds it idle, and any that finds it busy ends the count.
struct IdleExit {
    /// nil: the daemon never leaves on its own (a supervisor's engine).
    let afterNanos: UInt64?
    /// Since when the daemon has been idle without a break; nil while busy.
    private(set) var since: UInt64?

    init(afterNanos: UInt64?) {
        self.afterNanos = afterNanos
    }

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
