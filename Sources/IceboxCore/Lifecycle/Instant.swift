import IceboxSystem

/// A moment as the daemon's loop saw it: CLOCK_MONOTONIC (orders and times the steps of one boot)
/// and CLOCK_REALTIME (what a user reads) taken together, once per input. The lifecycle and the
/// events it makes are stamped with the instant they are handed and never read a clock themselves,
/// so a transition is a function of its input and its instant (unit-tested with any instant,
/// however far in the past).
package struct Instant: Sendable, Equatable {
    /// CLOCK_MONOTONIC, nanoseconds.
    package var monotonicNanos: UInt64
    /// CLOCK_REALTIME, nanoseconds since 1970.
    package var wallNanos: Int64

    package init(monotonicNanos: UInt64, wallNanos: Int64) {
        self.monotonicNanos = monotonicNanos
        self.wallNanos = wallNanos
    }

    /// Both clocks, now: what the daemon calls once per input it feeds the lifecycle (and for
    /// its own events). Nothing in the lifecycle calls it.
    package static func read() -> Instant {
        Instant(monotonicNanos: Clock.monotonicNanos(), wallNanos: Clock.wallNanos())
    }

    /// The monotonic time `nanos` after this instant, saturating.
    package func plus(_ nanos: UInt64) -> UInt64 { monotonicNanos.saturatingAdd(nanos) }

    /// The time from `earlier` (monotonic) to this instant; 0 if `earlier` is later.
    package func since(_ earlier: UInt64) -> UInt64 { monotonicNanos.saturatingSub(earlier) }

    /// The wall time as events and records write it: RFC 3339, microseconds, UTC.
    package var rfc3339: String { Clock.rfc3339(wallNanos: wallNanos) }
}
