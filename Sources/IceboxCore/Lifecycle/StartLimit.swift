/// systemd's start limit (StartLimitBurst=, StartLimitIntervalSec=) for `--watchdog-action
/// restart`: an app killed by its watchdog is launched again at most `burst` times within
/// `interval`, then left ended. Without it an app that set WATCHDOG_USEC=1 was relaunched 108–114
/// times in 6 s, each launch a cgroup, a spawn and lines in the event log.
enum StartLimit {
    enum Decision: Equatable {
        /// Launch it again; the restart times to carry into the new launch (this one last).
        case restart(times: [UInt64])
        /// The limit is reached: "start limit hit: 5 restarts in 10 s".
        case hit(String)
    }

    /// Whether a restart at `now` stays within `limit` (nil: no limit), given the times of
    /// the restarts before it (monotonic ns; a daemon restart keeps them: the clock is the
    /// kernel's). Only those within the interval are kept, so the list never outgrows the burst.
    static func decide(previous: [UInt64], now: UInt64, limit: (burst: Int, intervalNanos: UInt64)?) -> Decision {
        guard let limit else { return .restart(times: []) }
        let recent = previous.filter { now.saturatingSub($0) < limit.intervalNanos && $0 <= now }
        guard recent.count < limit.burst else {
            let seconds = limit.intervalNanos / 1_000_000_000
            let interval = limit.intervalNanos % 1_000_000_000 == 0 ? "\(seconds) s" : DurationText.format(limit.intervalNanos)
            return .hit("start limit hit: \(recent.count) restart\(recent.count == 1 ? "" : "s") in \(interval)")
        }
        return .restart(times: recent + [now])
    }
}
