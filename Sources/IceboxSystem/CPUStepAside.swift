import CIceboxShim

/// While a freeze waits for an app's tasks to run, the daemon's thread may not run on the CPU
/// it runs on; once no freeze waits, it may again. A freeze is done only when every task of
/// the app has run once more (to take its pending freeze), and the CPU the daemon sleeps on
/// is the one most of them are queued on: the daemon's last thaw woke them there. Each of the
/// daemon's re-reads then preempts one of them, and the whole queue waits behind it. Traced
/// here (benchmarks/RESULTS.md, session 44): 100 busy processes on the v1 freezer froze in
/// ~490 µs when most were on the daemon's CPU, ~300 µs (as bare.c's) when on the other. Off
/// its CPU, the daemon's freeze of them took 0.90–1.04× bare's time on the v1 freezer and
/// 0.90–1.17× on cgroup v2, against 1.19–1.30× and 1.38–1.51× on it (four alternating runs
/// each, benchmarks/RESULTS.md, session 46).
///
/// The state is the thread's own, kept in the C layer (`icebox_cpu_step_aside`), whose spawns
/// step back first: no child, app or stand-in, inherits the narrowed set. A set someone else
/// gave the thread meanwhile is left as it is. With one CPU allowed there is nowhere to go.
///
/// Only a daemon that owns its process uses it (`enabled`), as `PreemptionGuard`: an engine
/// embedded in another program (a `Supervisor` in a test process) leaves that program's
/// threads where they are.
package struct CPUStepAside: Sendable {
    package let enabled: Bool

    package init(enabled: Bool) { self.enabled = enabled }

    /// Before the loop sleeps: off this CPU while a freeze waits, back once none does.
    /// Each is a no-op when already so. `freezeWaits` is asked only when enabled (the loop's
    /// answer looks at every app).
    package func settle(freezeWaits: @autoclosure () -> Bool) {
        guard enabled else { return }
        if freezeWaits() { _ = icebox_cpu_step_aside() } else { icebox_cpu_step_back() }
    }

    /// Whether the calling thread is stepped aside (for tests).
    package static var isAside: Bool { icebox_cpu_is_aside() != 0 }
}
