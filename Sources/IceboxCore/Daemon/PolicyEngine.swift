/// The memory policy's state in the daemon (Daemon+Policy decides).
struct PolicyEngine {
    var policy = EvictionPolicy()
    var pressureTrigger: PressureTrigger?
    var checkAt: UInt64?  // the memory budget's next check; nil: no budget, or no app
    var victim: Daemon.Victim?  // one at a time

    var nextDeadline: UInt64? { checkAt }

    /// Whether the budget check is due at `now`; it is then taken off (the check re-arms it).
    mutating func takeDueCheck(now: UInt64) -> Bool {
        guard let at = checkAt, at <= now else { return false }
        checkAt = nil
        return true
    }
}
