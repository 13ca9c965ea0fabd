import CIceboxShim
import Glibc

/// How promptly the kernel runs the daemon when something it waits for happens. The
/// setting is the daemon's alone: every process it spawns puts it back before its execve
/// (the shim's child does), so an app starts with what its spawner had.
package enum SchedulerLatency {
    /// `sliceNanos`: the scheduler slice (EEVDF, Linux 6.12 and later; older kernels ignore it). A
    /// running task keeps its CPU when the daemon wakes unless its slice is longer than the
    /// daemon's; the default is 0.7 ms × (1 + log2 CPUs), 1.4 ms on 2 CPUs, so an app there is
    /// preempted by a daemon on 1 ms (else an app cloned onto the daemon's CPU ran its whole ~0.9
    /// ms dynamic-linker start first). 1 ms spawned as fast as 0.1 ms, and the apps a thaw wakes
    /// preempt the daemon less. Only SCHED_OTHER and SCHED_BATCH have a slice: a policy chosen with
    /// chrt is left alone.
    ///
    /// The timer slack stays the kernel's (50 µs): with 1 ns, busy 10-task freezes took 2.5-3x
    /// bare's time, against ~1.1x, as each punctual re-read took a CPU from the tasks that had to
    /// run to freeze (benchmarks/RESULTS.md).
    package static func makeLatencySensitive(sliceNanos: UInt64) { _ = icebox_set_latency_sensitive(sliceNanos) }
}
