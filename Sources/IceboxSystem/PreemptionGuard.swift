import CIceboxShim

/// A stretch of the daemon's work that no task it wakes may preempt: a thaw's write, the read that
/// confirms it and the count of processes for its report (a read of cgroup.procs). The write wakes
/// the app's tasks, and those on the daemon's CPU took it before the read (the scheduler favours a
/// task waking from a long sleep): thaws of 10 tasks took 1.3-2.8x bare's time. For that stretch
/// the daemon's thread runs at SCHED_FIFO 1 (reset on fork), and its policy is put back at once.
/// Skipped for a thaw that wakes one task (`Daemon.wakesSeveral`), which it made slower, not
/// faster.
///
/// Without the privilege (no CAP_SYS_NICE, RLIMIT_RTPRIO 0, an RT-throttled cgroup) or under a
/// policy someone chose with chrt, the stretch runs as it is: the first refusal is remembered, so a
/// daemon that may not pays one failed call.
///
/// Only a daemon that owns its process uses it (`enabled`): an engine embedded in another program
/// (a `Supervisor` in a test process) must not make a thread of that program real-time, even for
/// microseconds; its thaws run as they are.
package struct PreemptionGuard: Sendable {
    /// Whether the kernel refused the policy once; the guard no longer asks.
    package private(set) var refused = false
    /// False: the guard runs every body as it is, never asking for SCHED_FIFO.
    package let enabled: Bool

    package init(enabled: Bool = true) { self.enabled = enabled }

    /// Whether `run` would ask for SCHED_FIFO: enabled and never refused.
    package var acts: Bool { enabled && !refused }

    package mutating func run<T>(_ body: () -> T) -> T {
        guard acts else { return body() }
        var saved = icebox_scheduling()
        guard icebox_preemption_off(&saved) == 0 else {
            refused = true
            return body()
        }
        defer { _ = icebox_preemption_on(&saved) }
        return body()
    }
}
