/// The times of ``LaunchOptions`` and ``AdoptOptions`` as `Duration`s. The wire (`grace_ns`) and
/// the engine keep whole nanoseconds in the `…Nanos` fields these read and write; a `Duration` set
/// here is converted saturating (a negative one is 0, too large a one the maximum), never trapping.
extension LaunchOptions {
    /// The time the app gets between its background notice and its freeze (`--grace`,
    /// default 5 s). READY=1 on its NOTIFY_SOCKET ends it early; `.zero` freezes at once.
    public var grace: Duration {
        get { .nanoseconds(graceNanos) }
        set { graceNanos = newValue.saturatingNanoseconds }
    }

    /// The most EXTEND_TIMEOUT_USEC may extend the grace to (`--max-grace`, default 30 s).
    public var maxGrace: Duration {
        get { .nanoseconds(maxGraceNanos) }
        set { maxGraceNanos = newValue.saturatingNanoseconds }
    }

    /// How long a launch waits for the app to count as ready (``ready``) before it is
    /// terminated and the launch fails (`--ready-timeout`, default 30 s); also how long
    /// `resume(waitReady: true)` waits for its READY=1.
    public var readyTimeout: Duration {
        get { .nanoseconds(readyTimeoutNanos) }
        set { readyTimeoutNanos = newValue.saturatingNanoseconds }
    }

    /// Compact the app's memory this long after each freeze (`--compact-after`); nil: as
    /// the daemon's policy says.
    public var compactAfter: Duration? {
        get { compactAfterNanos.map { .nanoseconds($0) } }
        set { compactAfterNanos = newValue?.saturatingNanoseconds }
    }

    /// `--watchdog`: an active app must send WATCHDOG=1 at least this often (it is told
    /// WATCHDOG_USEC); paused while it is in the background or suspended. nil: no watchdog.
    public var watchdog: Duration? {
        get { watchdogNanos.map { .nanoseconds($0) } }
        set { watchdogNanos = newValue?.saturatingNanoseconds }
    }

    /// `--start-limit-interval`: the window ``startLimitBurst`` counts restarts in (nil: 10 s;
    /// `.zero` turns the limit off).
    public var startLimitInterval: Duration? {
        get { startLimitIntervalNanos.map { .nanoseconds($0) } }
        set { startLimitIntervalNanos = newValue?.saturatingNanoseconds }
    }
}

extension AdoptOptions {
    /// The time it gets after its background notice (`--grace`, default 5 s).
    public var grace: Duration {
        get { .nanoseconds(graceNanos) }
        set { graceNanos = newValue.saturatingNanoseconds }
    }

    /// The cap for its EXTEND_TIMEOUT_USEC extensions (`--max-grace`, default 30 s).
    public var maxGrace: Duration {
        get { .nanoseconds(maxGraceNanos) }
        set { maxGraceNanos = newValue.saturatingNanoseconds }
    }

    /// Compact it this long after each freeze (`--compact-after`), nil for the policy's.
    public var compactAfter: Duration? {
        get { compactAfterNanos.map { .nanoseconds($0) } }
        set { compactAfterNanos = newValue?.saturatingNanoseconds }
    }
}

extension Duration {
    /// Whole nanoseconds, saturating: a negative duration is 0, one past `UInt64.max`
    /// nanoseconds is `UInt64.max`. Never traps.
    package var saturatingNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds < 0) { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.saturatingAdd(UInt64(attoseconds / 1_000_000_000))
    }
}
