import CIceboxShim

/// While a freeze waits for an app's tasks to run, the daemon's thread may not run on the CPU it
/// runs on; once no freeze waits, it may again. A freeze is done only when every task of the app
/// has run once more (to take its pending freeze), and most are queued on the CPU the daemon sleeps
/// on (its last thaw woke them there): each re-read there preempts one of them, and the whole queue
/// waits behind it. Off its CPU, the daemon's freezes of 100 busy processes took 0.90–1.17× bare's
/// time, against 1.19–1.51× on it (benchmarks/RESULTS.md, sessions 44 and 46).
///
/// The state is the thread's own, kept in the C layer (`icebox_cpu_step_aside`), whose spawns step
/// back first: no child, app or stand-in, inherits the narrowed set. A set someone else gave the
/// thread meanwhile is left as it is. With one CPU allowed there is nowhere to go. Only an owning
/// daemon uses it (`enabled`), as `PreemptionGuard`.
package struct CPUStepAside: Sendable {
    package let enabled: Bool

    package init(enabled: Bool) { self.enabled = enabled }

    /// Before the loop sleeps: off this CPU while a freeze waits, back once none does. Each is a
    /// no-op when already so. `freezeWaits` is asked only when enabled (the loop's answer looks at
    /// every app).
    package func settle(freezeWaits: @autoclosure () -> Bool) {
        guard enabled else { return }
        if freezeWaits() { _ = icebox_cpu_step_aside() } else { icebox_cpu_step_back() }
    }

    /// Whether the calling thread is stepped aside (for tests).
    package static var isAside: Bool { icebox_cpu_is_aside() != 0 }
}
