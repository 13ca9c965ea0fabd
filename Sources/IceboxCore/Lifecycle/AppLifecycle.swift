import Glibc
import IceboxSystem

/// One app's lifecycle as a value: the state machine of lifecycle.md (Not Running → Inactive →
/// Active → Background → Suspended and back, and the ways out), with the grace, the deadlines and
/// the clients waiting on a transition. It takes an input and `now` and returns effects; it never
/// touches the kernel, so every transition is unit-tested without root (AppLifecycleTests), and
/// the supervisor only carries effects out.
package struct AppLifecycle: Sendable {
    /// Where the app is. Finer than `AppState` (which is what users see): a freeze or thaw
    /// in flight, and an ending under way, are phases of their own so the loop never waits.
    package enum Phase: Sendable, Equatable {
        /// Inactive until ready (exec, notify, a probe); given up at the deadline.
        case launching(readyDeadline: UInt64?)
        /// Running; `resumedAt`: when the thaw that made it active began, until the app says
        /// READY=1 again (its hot start, resume → ready).
        case active(resumedAt: UInt64?)
        /// Notice sent (or not), the grace running; `victim`: chosen by the policy.
        case background(Grace, victim: Victim?)
        /// The grace is over (how: `ended`); the kernel is freezing the app (a `victim` is
        /// evicted once frozen, or at once if the freeze fails).
        case freezing(grace: Grace, ended: GraceEnding, victim: Victim?)
        /// Frozen; `compacted`: its memory was reclaimed since (its next resume says so).
        case suspended(compacted: Bool)
        /// Frozen, and being checkpointed to disk (CRIU's dump, then a sync of the images).
        case checkpointing(Checkpointing)
        /// The kernel is thawing it (`compacted`: as it was suspended, kept if the thaw fails).
        case thawing(start: UInt64, waiters: [ThawWaiter], compacted: Bool)
        /// From `since`: SIGTERM, SIGKILL at `killDeadline` (nil once sent); or killed at once.
        case ending(Ending, since: UInt64, killDeadline: UInt64?)
        /// Main process gone (why: the payload); the rest is being killed, the cgroups removed.
        case cleaningUp(AppEnd)
        case ended(AppEnd)
    }

    /// How an app is being ended; kept in its record (`AppRecord.endIntent`) while it is.
    package enum Ending: String, Sendable, Equatable, Codable {
        case terminate, evict
    }

    /// The policy's victim in its grace: its EXTEND_TIMEOUT_USEC refused (the first logged).
    package struct Victim: Sendable, Equatable {
        package var extensionsRefused = 0
        /// Checkpointed to disk once frozen, rather than killed (`--evict-to disk`).
        package var toDisk = false
    }

    package struct ThawWaiter: Sendable, Equatable {
        package var id: Int?
        package var waitReady: Bool
    }

    package private(set) var phase: Phase
    /// What `ps` shows and the registry keeps.
    package private(set) var record: AppRecord
    /// Re-adopted after a daemon restart: not our child, so its exit status cannot be known.
    package let adopted: Bool
    package private(set) var launchStart: UInt64
    package private(set) var resumeReadyDeadline: UInt64?
    /// When an active app's next WATCHDOG=1 is due; nil when the watchdog is off or paused
    /// (background, suspended: a frozen app cannot ping, systemd users hit exactly that).
    package private(set) var watchdogDeadline: UInt64?
    /// The watchdog interval in force (`--watchdog`, or the app's own WATCHDOG_USEC=).
    package private(set) var watchdogInterval: UInt64?
    /// Killed by its watchdog with `--watchdog-action restart`: launch it again once it ended.
    package private(set) var restartWhenEnded = false
    /// The restart times the relaunch carries (`StartLimit`), this restart's last.
    package private(set) var restartTimes: [UInt64] = []
    /// Why a restart was refused ("start limit hit: 5 restarts in 10 s"), for the record's end.
    private var startLimitHit: String?
    /// What the app's own repeated messages may write (lines a second, record writes).
    private var repeats = NotifyRepeats()

    // Clients waiting for this app to reach a state.
    package private(set) var launchWaiters: [Int] = []
    package private(set) var suspendWaiters: [Int] = []
    package private(set) var resumeWaiters: [Int] = []  // resume --wait-ready: until READY=1 after the thaw
    package private(set) var endWaiters: [Int] = []

    /// How long a freeze or thaw may take before it is rolled back (or reported failed).
    package var freezeTimeout: UInt64 = 10_000_000_000

    /// A freshly spawned app: launching until ready.
    package init(record: AppRecord, launchStart: UInt64) {
        self.record = record
        self.launchStart = launchStart
        self.adopted = false
        watchdogInterval = record.options.watchdogNanos.map { max($0, LaunchOptions.leastWatchdogNanos) }
        let ready = record.options.ready == .exec ? nil : launchStart.saturatingAdd(record.options.readyTimeoutNanos)
        phase = .launching(readyDeadline: ready)
    }

    /// An app re-adopted after a daemon restart, in the state the kernel says it is in.
    /// A grace under way runs on to its recorded deadline.
    package init(adopting record: AppRecord, now: Instant) {
        self.record = record
        self.adopted = true
        self.launchStart = record.launchStartNanos
        watchdogInterval = record.options.watchdogNanos.map { max($0, LaunchOptions.leastWatchdogNanos) }
        if let how = record.endIntent {
            // A terminate or eviction the last daemon began: it goes on to its recorded kill
            // deadline (an eviction's is at once); `.resumeEnding` does what may be undone.
            let since = record.endStartNanos ?? now.monotonicNanos
            phase = .ending(how, since: since, killDeadline: how == .evict ? nil : record.killDeadlineNanos ?? now.monotonicNanos)
            return
        }
        switch record.state {
        case .launching:
            let ready =
                record.options.ready == .exec
                ? nil : max(record.launchStartNanos.saturatingAdd(record.options.readyTimeoutNanos), now.monotonicNanos)
            phase = .launching(readyDeadline: ready)
        case .background:
            let start = record.graceStartNanos ?? now.monotonicNanos
            let deadline = record.graceDeadlineNanos ?? now.monotonicNanos
            phase = .background(Grace(start: start, deadline: deadline, cap: record.graceCapNanos ?? deadline), victim: nil)
        case .suspended: phase = .suspended(compacted: false)
        default:
            phase = .active(resumedAt: nil)
            armWatchdog(now)
        }
    }

    /// An app restored from disk by CRIU as this daemon's child (so its exit status is known):
    /// active again, where its checkpoint left it. `restoredFromDisk` says so.
    package init(restored record: AppRecord, now: Instant) {
        self.init(record: record, launchStart: record.launchStartNanos)
        phase = .active(resumedAt: nil)
        armWatchdog(now)
    }

    /// The restore, told: its event (on-disk → active, how long, the image), each waiting
    /// client's line, the foreground signal as after a thaw, and the record. The app itself
    /// never learns it was on disk: no READY=1 is awaited (`resume --wait-ready` settles here).
    package mutating func restoredFromDisk(restoreNanos: UInt64, imageBytes: UInt64?, waiters: [Int], now: Instant) -> [LifecycleEffect] {
        var fx: [LifecycleEffect] = []
        record.lastRestoreNanos = restoreNanos
        record.images = nil
        record.imageBytes = nil
        setState(.active, now)
        let text = LifecycleText.restored(restoreNanos: restoreNanos, imageBytes: imageBytes, foreground: foregroundSignal(&fx))
        var e = event(.restore, from: .onDisk, to: .active, duration: restoreNanos, text, now)
        e.imageBytes = imageBytes
        fx.insert(.log(e), at: 0)
        let line = LifecycleText.step(name, from: .onDisk, to: .active, text)
        for id in waiters { fx.append(.settle(waiter: id, line: line, failed: false, event: e)) }
        fx.append(.persist)
        fx.append(.launched)  // its memory counts against the policy's budget again
        return fx
    }

    // MARK: Reading

    package var name: String { record.name }
    package var isEnding: Bool {
        switch phase {
        case .ending, .cleaningUp, .ended: return true
        default: return false
        }
    }
    /// When the terminate or eviction began (monotonic), once one has; 0 before.
    package var endStart: UInt64 {
        switch phase {
        case .ending(_, let since, _): return since
        case .cleaningUp(let end), .ended(let end): return end.since ?? 0
        default: return 0
        }
    }
    /// Chosen as the policy's victim while not yet suspended: evicted once frozen.
    package var pendingEviction: Bool {
        switch phase {
        case .background(_, let victim), .freezing(_, _, let victim): return victim != nil
        default: return false
        }
    }

    /// The earliest deadline this app has armed; `handle(.tick)` once it has passed.
    package var nextDeadline: UInt64? {
        let d = resumeReadyDeadline.earlier(watchdogDeadline).earlier(repeats.dueAt)
        switch phase {
        case .launching(let ready): return d.earlier(ready)
        case .background(let grace, _): return d.earlier(grace.deadline)
        case .ending(_, _, let kill): return d.earlier(kill)
        default: return d
        }
    }

    /// The record with the deadlines under way, so a daemon that takes over after a crash
    /// can finish them (monotonic times survive a daemon restart: the clock is the kernel's).
    package var persistentRecord: AppRecord {
        var r = record
        r.launchStartNanos = launchStart
        let background: Grace? = if case .background(let g, _) = phase { g } else { nil }
        r.graceStartNanos = background?.start
        r.graceDeadlineNanos = background?.deadline
        r.graceCapNanos = background?.cap
        // A terminate or eviction under way, with its SIGKILL deadline: a daemon that takes
        // over after a crash kills the app then, rather than adopting it as if nothing began.
        switch phase {
        case .ending(let how, let since, let kill):
            r.endIntent = how
            r.endStartNanos = since
            r.killDeadlineNanos = how == .evict ? since : kill ?? since
        case .cleaningUp(let end) where end.since != nil && end.state != .onDisk:
            r.endIntent = end.state == .evicted ? .evict : .terminate
            r.endStartNanos = end.since
            r.killDeadlineNanos = end.since
        default:
            r.endIntent = nil
            r.endStartNanos = nil
            r.killDeadlineNanos = nil
        }
        // A checkpoint under way: a daemon that takes over after a crash waits for the criu
        // it left, then finds the app in memory, or on disk with complete images.
        if case .checkpointing(let c) = phase {
            r.diskIntent = .checkpoint
            r.diskIntentStartNanos = c.since
        } else if case .cleaningUp(.checkpointed(let written, let since)) = phase {
            r.diskIntent = .checkpoint
            r.diskIntentStartNanos = since
            r.images = written.images
        } else {
            r.diskIntent = nil
            r.diskIntentStartNanos = nil
        }
        return r
    }

    /// "web  launched  pid 41233, ready in 116 ms (notify), backend cgroup2"
    package var launchedLine: String {
        let ready = record.coldStartNanos.map { ", ready in \(DurationText.format($0)) (\(record.options.ready))" } ?? ""
        return "\(name)  launched  pid \(record.pid)\(ready), backend \(record.backend.rawValue)"
    }

    // MARK: Transitions

    /// Takes one input at `now`; returns what must be done, in order, its events first.
    package mutating func handle(_ input: LifecycleInput, now: Instant) -> [LifecycleEffect] {
        var fx: [LifecycleEffect] = []
        switch input {
        case .ready: becomeActive(now, &fx)
        case .notify(let message): notify(message, now, &fx)
        case .suspend(let waiter, let notice, let grace): suspend(waiter, notice, length: grace, cap: nil, now, &fx)
        case .resume(let waiter, let waitReady): resume(waiter, waitReady, now, &fx)
        case .terminate(let waiter, let timeout): terminate(waiter, timeout, now, &fx)
        case .evict(let waiter): evict(waiter, now, &fx)
        case .evictToDisk(let waiter): evictToDisk(waiter, now, &fx)
        case .checkpointEnded(let outcome): checkpointEnded(outcome, now, &fx)
        case .policyVictim(let grace, let notice, let toDisk): policyVictim(grace, notice, toDisk: toDisk, now, &fx)
        case .tick: tick(now, &fx)
        case .freezeConfirmed(let outcome): frozen(outcome, now, &fx)
        case .freezeFailed(let why): freezeFailed(why, now, &fx)
        case .thawConfirmed(let outcome): thawed(outcome, now, &fx)
        case .thawFailed(let why): thawFailed(why, now, &fx)
        case .exited(let termination): exited(termination, now, &fx)
        case .cleanedUp(let leftovers, let problems): cleanedUp(leftovers, problems, now, &fx)
        case .compacted: if case .suspended = phase { phase = .suspended(compacted: true) }
        case .leftCgroup(let to): leftCgroup(to, now, &fx)
        case .thawedOutside(let how): thawedOutside(how, now, &fx)
        case .frozenOutside(let how): frozenOutside(how, now, &fx)
        case .resumeEnding(let frozen): resumeEnding(frozen, now, &fx)
        }
        // A record change the app made that waited for its write goes with this one.
        if fx.contains(.persist) { repeats.recordWritten() }
        // This transition's events first, in order: each is stamped now, and an effect may log its
        // own when carried out, stamped then (a thaw confirmed in its write; a failed kill; a
        // cleanup ending the app): the log stays in time order.
        return fx.filter(\.isLog) + fx.filter { !$0.isLog }
    }

    /// Adds a client to the launch waiters (a detached launch answers once ready).
    package mutating func waitForLaunch(_ waiter: Int) { launchWaiters.append(waiter) }

    /// Records STATUS=, the last compaction and similar facts the lifecycle only keeps.
    package mutating func update(_ change: (inout AppRecord) -> Void) { change(&record) }

    private mutating func setState(_ state: AppState, _ now: Instant) {
        record.state = state
        record.sinceMonotonicNanos = now.monotonicNanos
        record.sinceWall = now.rfc3339
    }

    /// Active from `now`, its watchdog armed; `resumedAt`: the thaw that made it so.
    private mutating func setActive(_ now: Instant, resumedAt: UInt64? = nil) {
        phase = .active(resumedAt: resumedAt)
        setState(.active, now)
        armWatchdog(now)
    }

    private func event(
        _ kind: EventKind, from: AppState? = nil, to: AppState? = nil, duration: UInt64? = nil, reason: String? = nil,
        grace: UInt64? = nil, _ detail: String, _ now: Instant
    ) -> Event {
        var e = Event(app: name, pid: record.pid, kind: kind, from: from, to: to, durationNanos: duration, detail: detail, at: now)
        e.reason = reason
        e.graceNanos = grace
        return e
    }

    // Launching → Active.
    private mutating func becomeActive(_ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .launching = phase else { return }
        let cold = now.since(launchStart)
        record.coldStartNanos = cold
        setActive(now)
        fx.append(.stopProbe)
        let e = event(
            .ready, from: .launching, to: .active, duration: cold, reason: record.options.ready.description,
            "cold start: launch → ready in \(DurationText.format(cold)) (\(record.options.ready))", now)
        fx.append(.log(e))
        for id in launchWaiters { fx.append(.settle(waiter: id, line: launchedLine, failed: false, event: e)) }
        launchWaiters = []
        fx.append(.persist)
        fx.append(.launched)
    }

    private mutating func notify(_ message: NotifyMessage, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        // What an app can repeat without end writes a line at most once a second and its
        // record at most every 250 ms (NotifyRepeats); the rest is counted, then summarised.
        if let status = message.status {
            record.statusText = status
            if repeats.recordChanged(now: now.monotonicNanos, status: true) { fx.append(.persist) }
        }
        if message.stopping, repeats.line(.stopping, now: now.monotonicNanos) { fx.append(.log(event(.notify, "STOPPING=1", now))) }
        if let interval = message.watchdogNanos, interval > 0 {
            // 1 µs would have the watchdog fire on every turn of the loop.
            watchdogInterval = max(interval, LaunchOptions.leastWatchdogNanos)
            if interval < LaunchOptions.leastWatchdogNanos, repeats.line(.watchdogInterval, now: now.monotonicNanos) {
                let asked = DurationText.format(interval), least = DurationText.format(LaunchOptions.leastWatchdogNanos)
                fx.append(.log(event(.watchdog, "WATCHDOG_USEC asks for \(asked), below the least interval: \(least) it is", now)))
            }
            if case .active = phase { armWatchdog(now) }
        }
        if message.watchdogPing, case .active = phase { armWatchdog(now) }
        if message.watchdogTrigger, case .active = phase { watchdogFired(now, &fx, triggered: true) }
        if message.extendNanos != nil, case .background(let grace, var victim?) = phase {
            // The policy's victim: grace --eviction-grace and no more (see `Grace.cut`), said once.
            victim.extensionsRefused += 1
            phase = .background(grace, victim: victim)
            if victim.extensionsRefused == 1 {
                let left = DurationText.format(grace.deadline.saturatingSub(now.monotonicNanos))
                let text = "EXTEND_TIMEOUT_USEC ignored: chosen for eviction, the grace ends in \(left) as it was"
                fx.append(.log(event(.grace, grace: grace.length, text, now)))
            }
        } else if let extra = message.extendNanos, case .background(var grace, nil) = phase {
            let capped = grace.extend(by: extra, now: now.monotonicNanos)
            phase = .background(grace, victim: nil)
            if repeats.recordChanged(now: now.monotonicNanos, status: false) { fx.append(.persist) }
            if repeats.line(.extend, now: now.monotonicNanos) {
                let e = event(
                    .grace, grace: grace.length,
                    "EXTEND_TIMEOUT_USEC: grace extended to \(DurationText.format(grace.length)) in all\(capped ? " (capped by --max-grace)" : "")",
                    now)
                fx.append(.log(e))
            }
        }
        guard message.ready else { return }
        switch phase {
        case .launching:
            if case .notify = record.options.ready { becomeActive(now, &fx) }
        case .background:
            endGrace(.ready, now, &fx)
        case .active(let resumedAt):
            // The hot start as the app sees it: thaw → the app says it is ready again.
            guard let resumed = resumedAt else { return }
            phase = .active(resumedAt: nil)
            resumeReadyDeadline = nil
            let took = now.since(resumed)
            let text = LifecycleText.hotStart(took)
            let e = event(.ready, duration: took, reason: "READY=1", text, now)
            fx.append(.log(e))
            for id in resumeWaiters { fx.append(.settle(waiter: id, line: LifecycleText.step(name, text), failed: false, event: e)) }
            resumeWaiters = []
        default:
            break
        }
    }

    // Active → Background (notice, grace) → Suspended.
    private mutating func suspend(
        _ waiter: Int?, _ notice: LifecycleInput.Notice?, length asked: UInt64?, cap: UInt64?, toDisk victimToDisk: Bool = false,
        _ now: Instant, _ fx: inout [LifecycleEffect]
    ) {
        switch phase {
        case .suspended, .checkpointing:
            if let waiter { fx.append(.settle(waiter: waiter, line: LifecycleText.nothingToDo(name, already: .suspended), failed: false)) }
        case .background, .freezing:
            if let waiter { suspendWaiters.append(waiter) }
        case .thawing:
            fail([waiter], .beingThawed, &fx)
        case .launching(let ready):
            // Refused, nothing done: an app not yet ready has no state to save on a notice, and
            // frozen it could never become ready, its launch client waiting on a deadline it would
            // outlive (or, resumed, it would be active unready).
            if let waiter { fx.append(.refuse(waiter: waiter, line: "icebox: " + stillLaunching(ready, now), code: .tryAgain)) }
        case .active:
            let from = record.state
            if let waiter { suspendWaiters.append(waiter) }
            watchdogDeadline = nil  // paused: the app is told it is going away, then frozen
            setState(.background, now)
            // The grace is the app's whether or not it can be told (iOS gives every app its
            // background time; Android freezes a cached app after a fixed delay, unannounced): only
            // its length decides, and --grace 0 freezes at once.
            let length = min(cap ?? .max, asked ?? record.options.graceNanos)
            // A grace cut by the policy (`cap`) is not extended past its cut.
            let grace = Grace(now: now.monotonicNanos, length: length, maxLength: cap == nil ? record.options.maxGraceNanos : length)
            // A cap is the policy's cut: the app is its victim.
            phase = .background(grace, victim: cap == nil ? nil : Victim(toDisk: victimToDisk))
            let sent: NoticeSent
            if let notice {
                fx.append(.signal(notice.signal))
                sent = .signal(notice.signal, why: notice.why)
            } else {
                sent = record.options.backgroundSignal == NoticeSignal.none ? .disabled : .noHandler
            }
            let text = LifecycleText.notice(sent, graceNanos: length)
            // Which notice, as data (SuspendResult.Notice): the signal, or why none was sent.
            let e = event(.notice, from: from, to: .background, reason: sent.reason, grace: grace.length, text, now)
            fx.append(.log(e))
            for id in suspendWaiters {
                fx.append(.report(waiter: id, line: LifecycleText.step(name, from: from, to: .background, text), failed: false, event: e))
            }
            guard length > 0 else {
                endGrace(.zero, now, &fx)
                return
            }
            fx.append(.persist)  // the grace deadline survives a daemon crash
        case .ending, .cleaningUp, .ended:
            fail([waiter], .beingStopped(suspending: true), &fx)
        }
    }

    /// "web is still launching (waiting for READY=1, 4.5s left); try again when it is active"
    private func stillLaunching(_ readyDeadline: UInt64?, _ now: Instant) -> String {
        let what: String
        switch record.options.ready {
        case .notify: what = "waiting for READY=1"
        case .exec: what = "waiting for its exec"
        default: what = "waiting for --ready \(record.options.ready)"
        }
        let left = readyDeadline.map { ", \(DurationText.format($0.saturatingSub(now.monotonicNanos))) left" } ?? ""
        return "\(name) is still launching (\(what)\(left)); try again when it is active"
    }

    /// A launch that will never be ready (the app is being ended first): its clients hear why
    /// now, as failed, and wait on for the end so that nothing is left when they return.
    private mutating func abandonLaunch(_ why: String, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .launching = phase else { return }
        for id in launchWaiters {
            fx.append(.report(waiter: id, line: LifecycleText.failure(name, .launchAbandoned(why)), failed: true))
            endWaiters.append(id)
        }
        launchWaiters = []
    }

    /// The grace is over (READY=1, expired, no notice): ask the kernel to freeze.
    private mutating func endGrace(_ how: GraceEnding, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .background(let grace, let victim) = phase else { return }
        phase = .freezing(grace: grace, ended: how, victim: victim)
        fx.append(.freeze(deadline: now.plus(freezeTimeout)))
    }

    private mutating func frozen(_ outcome: FreezeOutcome, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .freezing(let grace, let how, let victim) = phase else { return }
        let graceUsed = now.since(grace.start).saturatingSub(outcome.durationNanos)
        phase = .suspended(compacted: false)
        record.lastFreezeNanos = outcome.durationNanos
        setState(.suspended, now)
        let text = LifecycleText.frozen(how, graceUsedNanos: graceUsed, extensions: grace.extensions, outcome)
        var e = event(
            .freeze, from: .background, to: .suspended, duration: outcome.durationNanos, reason: how.rawValue, grace: graceUsed, text,
            now)
        e.backend = outcome.backend
        e.tasks = outcome.tasks
        fx.append(.log(e))
        for id in suspendWaiters {
            fx.append(.settle(waiter: id, line: LifecycleText.step(name, from: .background, to: .suspended, text), failed: false, event: e))
        }
        suspendWaiters = []
        fx.append(.persist)
        if let victim, victim.toDisk {
            startCheckpoint(nil, now, &fx)
        } else if victim != nil {
            evict(nil, now, &fx)
        } else {
            fx.append(.frozen)
        }
    }

    private mutating func freezeFailed(_ why: String, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .freezing(_, _, let victim) = phase else { return }
        // The freezer rolled back: the app runs, and says so.
        setActive(now)
        fx.append(.log(event(.error, from: .background, to: .active, LifecycleText.freezeFailed(why), now)))
        fail(suspendWaiters, .freezeFailed(why), &fx)
        suspendWaiters = []
        fx.append(.persist)
        // A policy victim goes even if it could not be frozen: killing needs no freeze.
        if victim != nil { evict(nil, now, &fx) }
    }

    /// The main process left the cgroup that freezes the app. Suspended: the kernel thawed it
    /// there, so the app is shown active (never "suspended" while it runs), and the rest is thawed
    /// too, so the state is true of all of it and a later suspend starts from a running app.
    /// Freezing: the freeze cannot hold it, so it fails and is rolled back. Other phases: no claim
    /// changes (a running app runs; an ending one is killed by pidfd wherever it is).
    private mutating func leftCgroup(_ to: String, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        let moved = "pid \(record.pid) left the app's cgroup for \(to)"
        switch phase {
        case .suspended:
            setActive(now)
            let text = "\(moved): the kernel thawed it there, so the app runs (the rest of it is thawed too)"
            fx.append(.log(event(.thaw, from: .suspended, to: .active, reason: "left-cgroup", text, now)))
            fx.append(.thawAside(.remainder))
            fx.append(.persist)
        case .freezing:
            fx.append(.cancelFreeze)
            freezeFailed("its main process is not in the app's cgroup (\(moved)): freezing the cgroup would not freeze it", now, &fx)
        default:
            break
        }
    }

    /// Thawed by someone else (cgroup.freeze, freezer.state, SIGCONT): the app runs, hence active,
    /// told as by a resume (foreground signal); only a suspended app can be (an operation under way
    /// reads the kernel). Left "suspended", a suspend would say "nothing to do" while it ran.
    private mutating func thawedOutside(_ how: String, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .suspended = phase else { return }
        setActive(now)
        let fg = LifecycleText.foreground(foregroundSignal(&fx))
        fx.append(
            .log(event(.thaw, from: .suspended, to: .active, reason: "outside", "thawed outside icebox (\(how)): the app runs\(fg)", now)))
        fx.append(.persist)
    }

    /// Frozen by someone else (a write to the app's cgroup.freeze or freezer.state): an active app
    /// stops, so it is suspended, as if icebox froze it unannounced; the policy's follow-ups apply,
    /// `icebox resume` thaws it. Left "active", a resume would say "nothing to do" to a frozen app.
    private mutating func frozenOutside(_ how: String, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .active = phase else { return }
        phase = .suspended(compacted: false)
        watchdogDeadline = nil  // paused, as in a suspend
        setState(.suspended, now)
        fx.append(
            .log(event(.freeze, from: .active, to: .suspended, reason: "outside", "frozen outside icebox (\(how)): it was not told", now)))
        fx.append(.persist)
        fx.append(.frozen)
    }

    // Back to Active.
    private mutating func resume(_ waiter: Int?, _ waitReady: Bool, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        switch phase {
        case .active, .launching:
            if let waiter {
                fx.append(.settle(waiter: waiter, line: LifecycleText.nothingToDo(name, already: record.state), failed: false))
            }
        case .background, .freezing:
            // Back before the freeze: withdraw it (a freeze in flight is rolled back).
            if case .freezing = phase { fx.append(.cancelFreeze) }
            setActive(now)  // no longer the policy's victim either
            fail(suspendWaiters, .resumedBeforeFrozen, &fx)
            suspendWaiters = []
            let text = LifecycleText.resumedDuringGrace(foreground: foregroundSignal(&fx))
            let e = event(.resume, from: .background, to: .active, text.detail, now)
            fx.append(.log(e))
            if let waiter {
                fx.append(
                    .settle(
                        waiter: waiter, line: LifecycleText.step(name, from: .background, to: .active, text.line), failed: false, event: e))
            }
            fx.append(.persist)
        case .suspended(let compacted):
            phase = .thawing(start: now.monotonicNanos, waiters: [ThawWaiter(id: waiter, waitReady: waitReady)], compacted: compacted)
            fx.append(.thaw(deadline: now.plus(freezeTimeout)))
        case .thawing(let start, var waiters, let compacted):
            waiters.append(ThawWaiter(id: waiter, waitReady: waitReady))
            phase = .thawing(start: start, waiters: waiters, compacted: compacted)
        case .checkpointing:
            // CRIU holds the tree; a dump cannot be taken back halfway.
            if let waiter { fx.append(.refuse(waiter: waiter, line: LifecycleText.failure(name, .beingCheckpointed), code: .tryAgain)) }
        case .ending, .cleaningUp, .ended:
            fail([waiter], .notRunning, &fx)
        }
    }

    /// Each client waiting (nil: none) hears that its wait failed, and why.
    private func fail(_ waiters: [Int?], _ why: LifecycleFailure, _ fx: inout [LifecycleEffect]) {
        for case let id? in waiters { fx.append(.settle(waiter: id, line: LifecycleText.failure(name, why), failed: true)) }
    }

    /// Sends the foreground signal, if the app has one; returns it.
    private func foregroundSignal(_ fx: inout [LifecycleEffect]) -> Int32? {
        guard let sig = record.options.foregroundSignal else { return nil }
        fx.append(.signal(sig))
        return sig
    }

    private mutating func thawed(_ outcome: FreezeOutcome, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .thawing(let start, let waiters, let compacted) = phase else { return }
        setActive(now, resumedAt: start)
        record.lastThawNanos = outcome.durationNanos
        let text = LifecycleText.thawed(outcome, foreground: foregroundSignal(&fx), afterCompaction: compacted)
        var e = event(.thaw, from: .suspended, to: .active, duration: outcome.durationNanos, text, now)
        e.backend = outcome.backend
        e.tasks = outcome.tasks
        fx.append(.log(e))
        let line = LifecycleText.step(name, from: .suspended, to: .active, text)
        for w in waiters {
            guard let id = w.id else { continue }
            if w.waitReady, case .notify = record.options.ready {
                fx.append(.report(waiter: id, line: line, failed: false, event: e))
                resumeWaiters.append(id)
                resumeReadyDeadline = start.saturatingAdd(record.options.readyTimeoutNanos)
            } else {
                fx.append(.settle(waiter: id, line: line, failed: false, event: e))
            }
        }
        fx.append(.persist)
    }

    private mutating func thawFailed(_ why: String, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .thawing(_, let waiters, let compacted) = phase else { return }
        phase = .suspended(compacted: compacted)
        fx.append(.log(event(.error, LifecycleText.thawFailed(why), now)))
        fail(waiters.map(\.id), .thawFailed(why), &fx)
        fx.append(.persist)
    }

    // The watchdog.

    private mutating func armWatchdog(_ now: Instant) {
        watchdogDeadline = watchdogInterval.map { now.plus($0) }
    }

    /// An active app missed its WATCHDOG=1 (or asked to be treated as hung): logged, and acted on
    /// as `--watchdog-action` says. With `log` it is not logged again until the app pings again.
    private mutating func watchdogFired(_ now: Instant, _ fx: inout [LifecycleEffect], triggered: Bool) {
        watchdogDeadline = nil
        let action = record.options.watchdogAction ?? .log
        let why =
            triggered
            ? "the app sent WATCHDOG=trigger"
            : "no WATCHDOG=1 for \(DurationText.format(watchdogInterval ?? 0)) (--watchdog)"
        let what: String
        switch action {
        case .log: what = "logged only (--watchdog-action log)"
        case .kill: what = "killing it (--watchdog-action kill)"
        case .restart:
            switch StartLimit.decide(previous: record.restartTimesNanos ?? [], now: now.monotonicNanos, limit: record.options.startLimit) {
            case .restart(let times):
                restartWhenEnded = true
                restartTimes = times
                what = "killing it and launching it again (--watchdog-action restart)"
            case .hit(let text):
                startLimitHit = text
                what = "killing it; \(text), so it is not launched again (--start-limit-burst, --start-limit-interval)"
            }
        }
        // Logged only, it can fire again at once (WATCHDOG=trigger in a loop, or a ping
        // followed by a missed one): a line a second at most.
        if action != .log || repeats.line(.watchdog, now: now.monotonicNanos) {
            fx.append(.log(event(.watchdog, reason: triggered ? "WATCHDOG=trigger" : "timeout", "\(why): \(what)", now)))
        }
        guard action != .log else { return }
        _ = leaveForEnding(thawWaiters: .beingStopped(suspending: false), &fx)
        phase = .ending(.terminate, since: now.monotonicNanos, killDeadline: nil)
        fx.append(.killAll)
    }

    /// The summary lines of what the app's repeated messages held back, for each kind whose second
    /// has ended by `upTo`.
    private mutating func summariseRepeats(upTo: UInt64, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        for (kind, count) in repeats.take(now: upTo) {
            let logged: EventKind
            switch kind {
            case .watchdog, .watchdogInterval: logged = .watchdog
            case .extend: logged = .grace
            case .stopping, .status: logged = .notify
            }
            fx.append(.log(event(logged, reason: "repeated", NotifyRepeats.describe(kind, count), now)))
        }
    }

    // The ways out.

    /// SIGTERM to every process of the app (a frozen app is thawed first so it can act on
    /// it), then SIGKILL when the time-out passes.
    private mutating func terminate(_ waiter: Int?, _ timeout: UInt64, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        if let waiter { endWaiters.append(waiter) }
        guard !isEnding else { return }
        if case .checkpointing(var c) = phase {
            if c.then == nil { c.then = .terminate }
            c.thenTimeout = timeout
            phase = .checkpointing(c)
            return
        }
        abandonLaunch("was terminated before it was ready (SIGTERM sent; SIGKILL after \(DurationText.format(timeout)))", now, &fx)
        let frozenNow = leaveForEnding(thawWaiters: .beingStopped(suspending: false), &fx)
        phase = .ending(.terminate, since: now.monotonicNanos, killDeadline: now.plus(timeout))
        // Before the SIGTERM (`apply` writes first): the kill deadline survives a daemon crash.
        fx.append(.persist)
        if frozenNow { fx.append(.thawAside(.forTermination)) }
        fx.append(.signalMembers(SIGTERM))
        fx.append(
            .log(event(.terminate, "SIGTERM sent (willTerminate); SIGKILL after \(DurationText.format(timeout))", now)))
    }

    /// What memory pressure does: kill without any notice, reap, record the app as evicted.
    private mutating func evict(_ waiter: Int?, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        if let waiter { endWaiters.append(waiter) }
        switch phase {
        case .ending(.evict, _, _), .cleaningUp, .ended: return
        case .checkpointing(var c):
            c.then = .evict
            phase = .checkpointing(c)
            return
        case .ending(.terminate, let since, _):
            // A terminate under way becomes an eviction: killed now, recorded as evicted.
            phase = .ending(.evict, since: since, killDeadline: nil)
        default:
            abandonLaunch("was evicted before it was ready (killed without notice)", now, &fx)
            _ = leaveForEnding(thawWaiters: .beingStopped(suspending: false), &fx)
            phase = .ending(.evict, since: now.monotonicNanos, killDeadline: nil)
        }
        // Before the kill: a daemon killed in between leaves its successor the eviction to finish.
        fx.append(.persist)
        fx.append(.killAll)
    }

    /// `icebox evict --to-disk`: a suspended app is checkpointed (a running one must be suspended
    /// first: its notice and grace are the app's to have, and an app in a transition is refused
    /// until it settles).
    private mutating func evictToDisk(_ waiter: Int?, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        switch phase {
        case .suspended:
            startCheckpoint(waiter, now, &fx)
        case .checkpointing(var c):
            if let waiter { c.waiters.append(waiter) }
            phase = .checkpointing(c)
        case .active, .launching:
            if let waiter {
                fx.append(.refuse(waiter: waiter, line: LifecycleText.failure(name, .notSuspended(record.state)), code: .failure))
            }
        case .background, .freezing, .thawing:
            if let waiter {
                fx.append(.refuse(waiter: waiter, line: LifecycleText.failure(name, .notSuspended(record.state)), code: .tryAgain))
            }
        case .ending, .cleaningUp, .ended:
            fail([waiter], .notRunning, &fx)
        }
    }

    /// Suspended → checkpointing: the record says so first (a daemon killed during the dump
    /// leaves its successor the criu to wait for), then CRIU is started.
    private mutating func startCheckpoint(_ waiter: Int?, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        var c = Checkpointing(since: now.monotonicNanos)
        if let waiter { c.waiters.append(waiter) }
        phase = .checkpointing(c)
        fx.append(.persist)
        fx.append(.checkpoint)
    }

    private mutating func checkpointEnded(_ outcome: CheckpointOutcome, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .checkpointing(var c) = phase else { return }
        switch outcome {
        case .written(let written):
            c.written = written
            phase = .checkpointing(c)
            if c.mainEnded { finishCheckpoint(now, &fx) }
        case .failed(let why):
            record.clearDiskWork()
            record.images = nil
            // Today's eviction instead: the memory must still be freed (the policy chose it,
            // or the user asked for it gone from memory), the reason said.
            let e = event(
                .checkpoint, duration: now.since(c.since), reason: "failed", LifecycleText.checkpointFailed(why, then: c.then), now)
            fx.append(.log(e))
            // Its clients hear why before the kill (the event: `EndResult.checkpointFailure`).
            for id in c.waiters { fx.append(.report(waiter: id, line: LifecycleText.step(name, e.detail), failed: false, event: e)) }
            endWaiters += c.waiters
            phase = .suspended(compacted: false)
            if c.then == .terminate {
                terminate(nil, c.thenTimeout, now, &fx)
            } else {
                evict(nil, now, &fx)
            }
            if c.mainEnded { exited(c.termination, now, &fx) }
        }
    }

    /// Written and the tree gone: the processes' end is cleaned up as any end (the cgroups
    /// removed, the notify socket closed); the app then rests on disk (`.ended(.checkpointed)`).
    /// A terminate or kill eviction asked for meanwhile ends it instead, its images discarded.
    private mutating func finishCheckpoint(_ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .checkpointing(let c) = phase, let written = c.written else { return }
        endWaiters += c.waiters
        watchdogDeadline = nil
        switch c.then {
        case .terminate?:
            phase = .cleaningUp(.terminated(.signaled(SIGKILL), by: .sigkill, since: c.since))
        case .evict?:
            phase = .cleaningUp(.evicted(.signaled(SIGKILL), since: c.since))
        case nil:
            phase = .cleaningUp(.checkpointed(written, since: c.since))
        }
        if c.then != nil { fx.append(.discardImages(written.images)) }
        fx.append(.destroy)
    }

    /// Re-adopted with a terminate or eviction the last daemon began (`init(adopting:)`): finished,
    /// not forgotten. Before its kill deadline a terminate sends SIGTERM again (the intent is
    /// recorded before the signal, so the last daemon may have died in between; without it the app
    /// would be SIGKILLed unwarned, and one already ending is asked twice) and thaws a frozen app
    /// to act on it; past the deadline, or an eviction: killed now.
    private mutating func resumeEnding(_ frozen: Bool, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .ending(let how, let endStart, let kill) = phase else { return }
        let began =
            "a \(how == .evict ? "eviction" : "terminate") begun \(DurationText.format(now.since(endStart))) ago, before a daemon restart"
        if how == .terminate, let kill, kill > now.monotonicNanos {
            if frozen { fx.append(.thawAside(.forTermination)) }
            fx.append(.signalMembers(SIGTERM))
            fx.append(
                .log(event(.terminate, "\(began): SIGTERM sent again; SIGKILL in \(DurationText.format(kill - now.monotonicNanos))", now)))
        } else {
            phase = .ending(how, since: endStart, killDeadline: nil)
            let why = how == .evict ? "finishing it" : "its SIGKILL deadline has passed"
            fx.append(.log(event(.terminate, duration: now.since(endStart), "\(began): \(why); SIGKILL", now)))
            fx.append(.killAll)
        }
    }

    /// Leaves the current phase for an ending: pending work is withdrawn and clients waiting
    /// for a state that will not come are told. Returns whether the app is (or may be) frozen.
    /// `why`: what a thaw's waiters are told (that the app is being stopped, or has ended).
    private mutating func leaveForEnding(thawWaiters why: LifecycleFailure, _ fx: inout [LifecycleEffect]) -> Bool {
        watchdogDeadline = nil
        switch phase {
        case .launching:
            fx.append(.stopProbe)
            return false
        case .freezing:
            fx.append(.cancelFreeze)
            return false
        case .suspended:
            return true
        case .thawing(_, let waiters, _):
            // The thaw in flight goes on; its confirmation no longer matters.
            fail(waiters.map(\.id), why, &fx)
            return true
        default:
            return false
        }
    }

    private mutating func policyVictim(
        _ grace: UInt64, _ notice: LifecycleInput.Notice?, toDisk: Bool, _ now: Instant, _ fx: inout [LifecycleEffect]
    ) {
        switch phase {
        case .suspended where toDisk:
            startCheckpoint(nil, now, &fx)
        case .suspended, .thawing:
            evict(nil, now, &fx)
        case .checkpointing, .ending, .cleaningUp, .ended:
            break  // on its way out of memory already
        case .background(var g, _):
            g.cut(to: now.plus(grace))
            // Chosen anew (after a resume withdrew it, say): a refused extension is said again.
            phase = .background(g, victim: Victim(toDisk: toDisk))
        case .freezing(let g, let how, _):
            phase = .freezing(grace: g, ended: how, victim: Victim(toDisk: toDisk))
        case .launching:
            // Not ready yet, so no state to save: killed now, rather than frozen unready (a
            // resume in its grace would make it active without ever being ready).
            abandonLaunch("was evicted by the memory policy before it was ready", now, &fx)
            evict(nil, now, &fx)
        case .active:
            // Not frozen yet: to Suspended first, its notice and grace cut to --eviction-grace.
            suspend(nil, notice, length: nil, cap: grace, toDisk: toDisk, now, &fx)
        }
    }

    private mutating func tick(_ now: Instant, _ fx: inout [LifecycleEffect]) {
        summariseRepeats(upTo: now.monotonicNanos, now, &fx)
        if repeats.recordWrite(now: now.monotonicNanos) { fx.append(.persist) }
        if let d = watchdogDeadline, d <= now.monotonicNanos, case .active = phase { watchdogFired(now, &fx, triggered: false) }
        if let d = resumeReadyDeadline, d <= now.monotonicNanos {
            resumeReadyDeadline = nil
            fail(resumeWaiters, .notReadyAfterResume(within: record.options.readyTimeoutNanos), &fx)
            resumeWaiters = []
        }
        switch phase {
        case .launching(let ready?) where ready <= now.monotonicNanos:
            let waited = now.since(launchStart)
            let why = "was not ready (\(record.options.ready)) within \(DurationText.format(waited)); terminating it"
            fx.append(.stopProbe)
            fx.append(.log(event(.error, duration: waited, "\(name) \(why)", now)))
            // The launch fails, but its reply waits until the app is gone: nothing is left behind
            // when the command returns.
            abandonLaunch(why, now, &fx)
            terminate(nil, 10_000_000_000, now, &fx)
        case .background(let grace, _) where grace.deadline <= now.monotonicNanos:
            endGrace(.expired, now, &fx)
        case .ending(let how, let endStart, let kill?) where kill <= now.monotonicNanos:
            phase = .ending(how, since: endStart, killDeadline: nil)
            fx.append(.log(event(.terminate, duration: now.since(endStart), "still running after the time-out; SIGKILL", now)))
            fx.append(.killAll)
        default:
            break
        }
    }

    /// The main process ended: whatever the phase, the rest of the app goes with it (systemd's
    /// KillMode=control-group).
    private mutating func exited(_ termination: Termination?, _ now: Instant, _ fx: inout [LifecycleEffect]) {
        switch phase {
        case .cleaningUp, .ended: return
        case .checkpointing(var c):
            // CRIU kills the tree once its images are written: expected, and done once CRIU has
            // said so too (before or after). Without a written dump the app ended while being
            // dumped (a failed dump kills it; or it died): it is gone either way.
            c.mainEnded = true
            c.termination = termination
            phase = .checkpointing(c)
            if c.written != nil { finishCheckpoint(now, &fx) }
            return
        default: break
        }
        _ = leaveForEnding(thawWaiters: .endedDuringThaw, &fx)
        switch phase {
        case .ending(.evict, let since, _):
            // Killed by icebox: its end is SIGKILL, whether or not it is ours to reap.
            phase = .cleaningUp(.evicted(termination ?? .signaled(SIGKILL), since: since))
        case .ending(.terminate, let since, let kill):
            // SIGKILL once its kill deadline has been cleared: the time-out passed (or the
            // watchdog killed it at once); before it, SIGTERM sufficed.
            let by: EndSignal = kill == nil || termination == .signaled(SIGKILL) ? .sigkill : .sigterm
            phase = .cleaningUp(.terminated(termination, by: by, since: since))
        default:
            phase = .cleaningUp(.exited(termination))
        }
        fx.append(.destroy)
    }

    private mutating func cleanedUp(_ leftovers: Int, _ problems: [String], _ now: Instant, _ fx: inout [LifecycleEffect]) {
        guard case .cleaningUp(let end) = phase else { return }
        let final = end.state, termination = end.termination
        // From the terminate or eviction; for an app that ended on its own, from its launch.
        let took = now.since(end.since ?? launchStart)
        // Re-adopted apps are not our children: the kernel tells only the parent how they ended.
        let how = LifecycleText.how(termination, adopted: record.isAdopted)
        let from = record.state
        phase = .ended(end)
        setState(final, now)
        record.exitStatus = termination?.shellStatus
        record.ending = startLimitHit.map { "\(how); \($0), not restarted" } ?? how
        // The record's state stayed through the ending: the state the app was killed in.
        record.killedWhileSuspended = from == .suspended && termination == .signaled(SIGKILL)
        record.clearDiskWork()
        let detail = LifecycleText.ended(
            end, how: how, tookNanos: took, leftovers: leftovers, startLimitHit: startLimitHit, problems: problems)
        summariseRepeats(upTo: .max, now, &fx)  // what the last second held back, before the end
        // The event that records an end (or a rest on disk).
        let kind: EventKind = final == .evicted ? .evict : final == .onDisk ? .checkpoint : .exit
        var e = event(kind, from: from, to: final, duration: took, detail, now)
        if case .checkpointed(let written, _) = end {
            record.images = written.images
            record.imageBytes = written.imageBytes
            record.lastCheckpointNanos = written.dumpNanos
            record.ending = nil  // not an end: it rests on disk
            e.memoryBeforeBytes = written.memoryBytes
            e.memoryAfterBytes = 0
            e.imageBytes = written.imageBytes
        } else {
            record.images = nil
        }
        e.exitStatus = termination?.shellStatus
        // How it was ended, as data (EndResult.how): SIGTERM sufficed, or SIGKILL came.
        e.reason = end.signal?.rawValue
        fx.append(.log(e))
        let line = LifecycleText.step(name, from: from, to: final, detail)
        for id in endWaiters { fx.append(.settle(waiter: id, line: line, failed: false, event: e)) }
        fail(suspendWaiters, .endedBeforeFrozen(how: how), &fx)
        fail(launchWaiters + resumeWaiters, .endedBeforeReady(how: how), &fx)
        endWaiters = []
        suspendWaiters = []
        launchWaiters = []
        resumeWaiters = []
        resumeReadyDeadline = nil
        fx.append(.persist)
        fx.append(.ended(line: line))
    }
}
