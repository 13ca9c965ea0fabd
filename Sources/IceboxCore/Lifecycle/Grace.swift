/// The background time an app gets between its notice (didEnterBackground) and its freeze, as iOS
/// gives an app about 5 s, or up to about 30 s with a background task. The app cuts it short with
/// READY=1 and extends it with EXTEND_TIMEOUT_USEC (beginBackgroundTask), never past the cap
/// (`--max-grace`). All times are monotonic nanoseconds and saturate.
package struct Grace: Sendable, Equatable, Codable {
    package let start: UInt64
    package private(set) var deadline: UInt64
    /// No extension goes past this.
    package private(set) var cap: UInt64
    package private(set) var extensions = 0

    /// A grace of `length` from `now`, extensible up to `maxLength` from `now`.
    package init(now: UInt64, length: UInt64, maxLength: UInt64) {
        start = now
        deadline = now.saturatingAdd(length)
        cap = now.saturatingAdd(max(maxLength, length))
    }

    /// As a daemon that takes over after a crash finds it in the registry.
    package init(start: UInt64, deadline: UInt64, cap: UInt64) {
        self.start = start
        self.deadline = deadline
        self.cap = max(cap, deadline)
    }

    /// EXTEND_TIMEOUT_USEC: the grace runs at least `extra` from now, within the cap (an
    /// extension never shortens it). Returns whether the cap cut the request.
    @discardableResult
    package mutating func extend(by extra: UInt64, now: UInt64) -> Bool {
        let wanted = max(deadline, now.saturatingAdd(extra))
        deadline = min(wanted, cap)
        extensions += 1
        return wanted > cap
    }

    /// Cuts the grace to end by `latest` at most, for good: the cap comes down to the new deadline,
    /// so no EXTEND_TIMEOUT_USEC takes it back (the policy does this to a victim, whose extensions
    /// would hold off every eviction behind its own).
    package mutating func cut(to latest: UInt64) {
        deadline = min(deadline, latest)
        cap = deadline
    }

    /// How long the grace lasts in all, as granted so far.
    package var length: UInt64 { deadline.saturatingSub(start) }
}
