import IceboxSystem

/// A moment as the daemon's loop saw it, once per input: CLOCK_MONOTONIC (orders and times the
/// steps of one boot) and CLOCK_REALTIME (what a user reads). The lifecycle never reads a clock: it
/// and its events are stamped with the instant handed, so a transition is a function of its input
/// and instant (unit-tested with any instant, however far in the past).
package struct Instant: Sendable, Equatable {
    /// CLOCK_MONOTONIC, nanoseconds.
    package var monotonicNanos: UInt64
    /// CLOCK_REALTIME, nanoseconds since 1970.
    package var wallNanos: Int64

    package init(monotonicNanos: UInt64, wallNanos: Int64) {
        self.monotonicNanos = monotonicNanos
        self.wallNanos = wallNanos
    }

    /// Both clocks now, read by the daemon per input and for its events; never by the lifecycle.
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
