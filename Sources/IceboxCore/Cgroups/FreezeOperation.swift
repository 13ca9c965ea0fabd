import Glibc
import IceboxSystem

/// Whether an operation freezes or thaws.
package enum FreezeDirection: String, Sendable, Codable {
    case freeze, thaw
}

/// What the loop should do next with an operation in flight.
package enum FreezeProgress: Sendable {
    /// Done, confirmed by the kernel.
    case confirmed(FreezeReport)
    /// Not yet: step again at `recheckAt` (monotonic ns) or when `watch` (cgroup.events, for
    /// EPOLLPRI; the freezer's: never close it) fires, whichever is first. Re-check even with a
    /// watch: the kernel notifies a file at most once per 10 ms (`notificationQuietNanos`).
    case waiting(recheckAt: UInt64, watch: Int32?)
    /// For a freeze: already rolled back (the app runs; on a time-out the stuck tasks are named).
    case failed(FreezeFailure)
}

/// A freeze or thaw in steps that never sleep, for a loop serving many apps: one app's task in D
/// state must not stall the others. `Freezer.beginFreeze`/`beginThaw` write the request at once;
/// each `step(now:)` reads the kernel's answer once. An unwritable request is `.failed` at the
/// first step. Once confirmed or failed, `step` repeats the outcome without touching the kernel.
package struct FreezeOperation: Sendable {
    package let backend: BackendKind
    package let direction: FreezeDirection
    /// When the request was written (monotonic ns): durations count from here.
    package let startedAt: UInt64
    package let deadline: UInt64
    private var steps: any FreezeSteps
    private var outcome: FreezeProgress?

    init(backend: BackendKind, direction: FreezeDirection, startedAt: UInt64, deadline: UInt64, steps: any FreezeSteps) {
        self.backend = backend
        self.direction = direction
        self.startedAt = startedAt
        self.deadline = deadline
        self.steps = steps
        if let failure = steps.failedAtStart { outcome = .failed(failure) }
    }

    /// Reads the kernel's state once; never sleeps. Past the deadline a freeze is rolled back
    /// and `.failed(.timeout(...))` names the tasks that did not freeze.
    package mutating func step(now: UInt64) -> FreezeProgress {
        if let outcome { return outcome }
        let progress = steps.step(now: now, startedAt: startedAt, deadline: deadline)
        switch progress {
        case .confirmed, .failed: outcome = progress
        case .waiting: break
        }
        return progress
    }

    /// Abandons the operation (the app exited, or the daemon changed its mind): a freeze in
    /// flight is rolled back so the app runs; a thaw's request stands (undoing it would freeze).
    /// A finished operation is left as it is. Later steps report `.failed(.cancelled)`.
    package mutating func cancel() {
        guard outcome == nil else { return }
        steps.cancel()
        outcome = .failed(.cancelled)
    }

    /// Whether a SIGCHLD to the app's parent ends it: a SIGSTOP freeze (the group stop's last
    /// thread sends CLD_STOPPED), stepped at a SIGCHLD by a loop that is the parent.
    package var endsWithChildStop: Bool { backend == .signal && direction == .freeze }

    /// Whether the operation, in flight, waits only for an event the kernel will send the loop: a
    /// SIGSTOP freeze whose processes left to stop are all the loop's children, whose stops it
    /// hears (`expectPromptNotification`). Its re-reads are then a safety net, 1 ms apart.
    package var waitsOnAnnouncement: Bool { outcome == nil && steps.waitsOnAnnouncement }

    /// Tells the backend its notification will come as soon as the operation completes: for
    /// cgroup2, nothing changed cgroup.events within `notificationQuietNanos`; for SIGSTOP, the
    /// loop hears the SIGCHLDs (CLD_STOPPED) of the members that are its children. Re-reads then
    /// only guard against a lost notification (`Backoff.safetyNet`). Call before the first step; v1
    /// has no notification and keeps its schedule.
    package mutating func expectPromptNotification() { steps.expectPromptNotification() }

    /// How long cgroup.events must have been unchanged for its next notification to come at once:
    /// the kernel sends at most one per file per 10 ms (CGROUP_FILE_NOTIFY_MIN_INTV, in jiffies,
    /// rounded up: 12-16 ms at HZ=250), and a change within that time is announced when it ends.
    package static let notificationQuietNanos: UInt64 = 20_000_000

    /// Steps until done, sleeping in between (`Stepping.run`). For one-shot commands and tests; an
    /// event loop steps instead.
    package mutating func wait() throws(FreezeFailure) -> FreezeReport {
        switch Stepping.run(from: step(now: Clock.monotonicNanos()), step: { step(now: $0) }) {
        case .confirmed(let report): return report
        case .failed(let failure): throw failure
        case .waiting: preconditionFailure("Stepping.run returned an operation still waiting")
        }
    }
}

/// One backend's half of a FreezeOperation: the request written, each `step` looks once.
protocol FreezeSteps: Sendable {
    /// A failure of the initial write (already rolled back), reported by the first step.
    var failedAtStart: FreezeFailure? { get }
    mutating func step(now: UInt64, startedAt: UInt64, deadline: UInt64) -> FreezeProgress
    /// Undoes a freeze in flight; nothing for a thaw.
    mutating func cancel()
    /// See `FreezeOperation.expectPromptNotification()`.
    mutating func expectPromptNotification()
    /// See `FreezeOperation.waitsOnAnnouncement`.
    var waitsOnAnnouncement: Bool { get }
}

extension FreezeSteps {
    /// Only a SIGSTOP freeze waits on the loop's children.
    var waitsOnAnnouncement: Bool { false }
    /// No notification to wait on: the schedule stays.
    mutating func expectPromptNotification() {}
}

/// When to re-read until the kernel confirms: the longest of `floor` (20 µs) after the last look,
/// 5% of the time since the first, and four times the last look's cost (bare.c's schedule), up to a
/// cap. A doubling interval confirms late (cgroup.events is signalled at most once per 10 ms): a
/// freeze done at 440 µs was seen at the 620 µs step; this sees it by ~462 µs, for about 20·ln(T/20
/// µs) reads in a wait of T (≈ 90 for 1 s).
package struct Backoff: Sendable {
    /// The shortest wait: 20 µs, or `Backoff.safetyNet` where a notification is due anyway.
    package static let reread: UInt64 = 20_000
    /// The floor where a re-read only guards against a lost notification, due as soon as the
    /// operation completes (`expectPromptNotification`); each re-read, taken from a busy CPU,
    /// delays the tasks that must run to freeze. 100 busy processes froze in 0.65 ms with it,
    /// 0.79-0.82 ms with 20 µs (benchmarks/RESULTS.md, session 24).
    package static let safetyNet: UInt64 = 1_000_000
    package let cap: UInt64
    package private(set) var floor: UInt64
    private var firstLook: UInt64?

    package init(cap: UInt64) {
        self.cap = cap
        self.floor = Backoff.reread
    }

    /// The wait's floor from now on (the schedule's other terms stay).
    package mutating func raiseFloor(to floor: UInt64) { self.floor = max(self.floor, floor) }

    /// When to look again (never after the deadline). `lookCost`: what the look just made took; the
    /// wait is at least four times that, or a look reading many /proc files (the signal backend)
    /// would take a busy machine's CPU from the very tasks that must run to stop.
    package mutating func next(now: UInt64, deadline: UInt64, lookCost: UInt64 = 0) -> UInt64 {
        let first = firstLook ?? now
        firstLook = first
        let wait = min(max(floor, now.saturatingSub(first) / 20, lookCost > UInt64.max / 4 ? .max : lookCost * 4), cap)
        return min(now.saturatingAdd(wait), deadline)
    }

    /// `next`, with the look's cost from the clock: the look began at `now`.
    package mutating func next(afterLookAt now: UInt64, deadline: UInt64) -> UInt64 {
        next(now: now, deadline: deadline, lookCost: Clock.monotonicNanos().saturatingSub(now))
    }
}
