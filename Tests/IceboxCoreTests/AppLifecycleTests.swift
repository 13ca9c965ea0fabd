import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// The lifecycle's transition table, without root, a kernel or a binary: every phase ×
/// every input, and the scenarios that matter one by one.
@Suite("AppLifecycle: the transition table")
struct AppLifecycleTests {
    static let second: UInt64 = 1_000_000_000
    static let usr1 = LifecycleInput.Notice(signal: SIGUSR1, why: "the app handles it")

    static func record(ready: ReadyMode = .exec, grace: UInt64 = 5 * second, maxGrace: UInt64 = 30 * second) -> AppRecord {
        var o = LaunchOptions(name: "web", command: ["sleep", "100"])
        o.ready = ready
        o.graceNanos = grace
        o.maxGraceNanos = maxGrace
        return AppRecord(
            name: "web", options: o, pid: 4242, state: .launching, sinceMonotonicNanos: 0, sinceWall: "", launchedWall: "",
            backend: .cgroup2)
    }

    static let frozen = FreezeOutcome(backend: .cgroup2, durationNanos: 80_000, tasks: 1)

    /// The phases by name, each reached through the inputs a real app goes through.
    enum Named: String, CaseIterable {
        case launching, active, background, freezing, suspended, thawing, checkpointing, terminating, evicting, cleaningUp, ended
    }

    static func lifecycle(in named: Named, ready: ReadyMode = .notify) -> AppLifecycle {
        var l = AppLifecycle(record: record(ready: ready), launchStart: 1_000)
        let t: UInt64 = 2_000
        func go(_ input: LifecycleInput) { _ = l.handle(input, now: t) }
        if named == .launching { return l }
        go(ready == .notify ? .notify(NotifyMessage.parse("READY=1")) : .ready)
        switch named {
        case .launching, .active: break
        case .background: go(.suspend(waiter: nil, notice: usr1))
        case .freezing:
            go(.suspend(waiter: nil, notice: usr1))
            go(.notify(NotifyMessage.parse("READY=1")))
        case .suspended:
            go(.suspend(waiter: nil, notice: usr1))
            go(.notify(NotifyMessage.parse("READY=1")))
            go(.freezeConfirmed(frozen))
        case .thawing:
            go(.suspend(waiter: nil, notice: usr1))
            go(.notify(NotifyMessage.parse("READY=1")))
            go(.freezeConfirmed(frozen))
            go(.resume(waiter: nil))
        case .checkpointing:
            go(.suspend(waiter: nil, notice: usr1))
            go(.notify(NotifyMessage.parse("READY=1")))
            go(.freezeConfirmed(frozen))
            go(.evictToDisk(waiter: nil))
        case .terminating: go(.terminate(waiter: nil, timeout: second))
        case .evicting: go(.evict(waiter: nil))
        case .cleaningUp:
            go(.evict(waiter: nil))
            go(.exited(.signaled(SIGKILL)))
        case .ended:
            go(.evict(waiter: nil))
            go(.exited(.signaled(SIGKILL)))
            go(.cleanedUp(leftovers: 0, problems: []))
        }
        return l
    }

    static func named(_ phase: AppLifecycle.Phase) -> Named {
        switch phase {
        case .launching: return .launching
        case .active: return .active
        case .background: return .background
        case .freezing: return .freezing
        case .suspended: return .suspended
        case .thawing: return .thawing
        case .checkpointing: return .checkpointing
        case .ending(.terminate, _, _): return .terminating
        case .ending(.evict, _, _): return .evicting
        case .cleaningUp: return .cleaningUp
        case .ended: return .ended
        }
    }

    static let inputs: [(String, LifecycleInput)] = [
        ("ready", .ready),
        ("READY=1", .notify(NotifyMessage.parse("READY=1"))),
        ("EXTEND", .notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=2000000"))),
        ("suspend", .suspend(waiter: 1, notice: usr1)),
        ("resume", .resume(waiter: 2)),
        ("terminate", .terminate(waiter: 3, timeout: second)),
        ("evict", .evict(waiter: 4)),
        ("victim", .policyVictim(grace: second, notice: usr1)),
        ("freezeConfirmed", .freezeConfirmed(frozen)),
        ("freezeFailed", .freezeFailed("not frozen after 10s")),
        ("thawConfirmed", .thawConfirmed(frozen)),
        ("thawFailed", .thawFailed("boom")),
        ("exited", .exited(.exited(0))),
        ("cleanedUp", .cleanedUp(leftovers: 0, problems: [])),
        ("tick", .tick),
        ("leftCgroup", .leftCgroup(to: "/sys/fs/cgroup/elsewhere")),
        ("thawedOutside", .thawedOutside(how: "its cgroup.freeze reads 0")),
        ("frozenOutside", .frozenOutside(how: "its cgroup.freeze reads 1")),
        ("toDisk", .evictToDisk(waiter: 5)),
        ("victimToDisk", .policyVictim(grace: second, notice: usr1, toDisk: true)),
        ("written", .checkpointEnded(.written(CheckpointLifecycleTests.written))),
        ("dumpFailed", .checkpointEnded(.failed("Error (criu/sk-unix.c:123): Can't dump half of stream unix connection"))),
    ]

    /// Where each phase goes on each input (phase, input) → phase. What is not listed stays.
    static let table: [Named: [String: Named]] = [
        .launching: [
            "ready": .active, "READY=1": .active, "terminate": .terminating, "evict": .evicting, "victim": .evicting,
            "exited": .cleaningUp, "victimToDisk": .evicting,
        ],
        .active: [
            "suspend": .background, "terminate": .terminating, "evict": .evicting, "victim": .background, "exited": .cleaningUp,
            "frozenOutside": .suspended, "victimToDisk": .background,
        ],
        .background: [
            "READY=1": .freezing, "resume": .active, "terminate": .terminating, "evict": .evicting, "exited": .cleaningUp,
        ],
        .freezing: [
            "resume": .active, "terminate": .terminating, "evict": .evicting, "freezeConfirmed": .suspended,
            "freezeFailed": .active, "exited": .cleaningUp, "leftCgroup": .active,
        ],
        .suspended: [
            "resume": .thawing, "terminate": .terminating, "evict": .evicting, "victim": .evicting, "exited": .cleaningUp,
            "leftCgroup": .active, "thawedOutside": .active, "toDisk": .checkpointing, "victimToDisk": .checkpointing,
        ],
        .thawing: [
            "terminate": .terminating, "evict": .evicting, "victim": .evicting, "thawConfirmed": .active, "thawFailed": .suspended,
            "exited": .cleaningUp, "victimToDisk": .evicting,
        ],
        // CRIU holds the tree: the dump's end decides (a terminate or eviction waits for it,
        // and the main process's end, which the dump causes, is expected).
        .checkpointing: ["dumpFailed": .evicting],
        .terminating: ["evict": .evicting, "exited": .cleaningUp],
        .evicting: ["exited": .cleaningUp],
        .cleaningUp: ["cleanedUp": .ended],
        .ended: [:],
    ]

    @Test(arguments: Named.allCases)
    func everyPhaseTimesEveryInput(_ start: Named) {
        for (label, input) in Self.inputs {
            var l = Self.lifecycle(in: start)
            #expect(Self.named(l.phase) == start, "setup of \(start)")
            let fx = l.handle(input, now: 3_000)
            let expected = Self.table[start]?[label] ?? start
            #expect(Self.named(l.phase) == expected, "\(start) × \(label) went to \(Self.named(l.phase)), not \(expected)")
            // Nothing is done to the kernel for an app that has gone.
            if start == .ended || start == .cleaningUp {
                #expect(
                    !fx.contains {
                        switch $0 {
                        case .signal, .signalMembers, .freeze, .thaw, .killAll, .thawAside: return true
                        default: return false
                        }
                    }, "\(start) × \(label): \(fx)")
            }
            // The transition's events come before anything done: a done effect may log an
            // event of its own, stamped later (the log stays in time order).
            if let firstDone = fx.firstIndex(where: { !$0.isLog }) {
                #expect(!fx[firstDone...].contains { $0.isLog }, "\(start) × \(label): \(fx)")
            }
            // Every waiter named in the input hears back or is kept: never answered twice.
            var settled: [Int: Int] = [:]
            for case .settle(let id, _, _, _) in fx { settled[id, default: 0] += 1 }
            #expect(settled.values.allSatisfy { $0 == 1 }, "\(start) × \(label): \(fx)")
        }
    }

    @Test func coldStartThenSuspendWithNoticeGraceAndREADY() {
        var l = AppLifecycle(record: Self.record(ready: .notify), launchStart: 1_000)
        l.waitForLaunch(7)
        #expect(l.handle(.notify(NotifyMessage.parse("STATUS=starting")), now: 5_000) == [.persist], "not ready without READY=1")
        var fx = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 9_000)
        #expect(l.state == .active && l.record.coldStartNanos == 8_000)
        #expect(fx.contains { if case .settle(7, l.launchedLine, false, let e?) = $0 { return e.kind == .ready } else { return false } })
        fx = l.handle(.suspend(waiter: 1, notice: Self.usr1), now: 10_000)
        #expect(l.state == .background)
        #expect(Self.firstAction(fx) == .signal(SIGUSR1))
        #expect(l.nextDeadline == 10_000 + 5 * Self.second)
        #expect(fx.contains(.persist), "the grace deadline is recorded for a daemon that takes over")
        fx = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 20_000)
        #expect(fx == [.freeze(deadline: 20_000 + 10 * Self.second)])
        #expect(l.state == .background, "still background until the kernel confirms")
        fx = l.handle(.freezeConfirmed(Self.frozen), now: 120_000)
        #expect(l.state == .suspended && l.record.lastFreezeNanos == 80_000)
        #expect(fx.contains { if case .settle(1, let line?, false, _) = $0 { return line.contains("(READY=1)") } else { return false } })
        #expect(fx.contains(.frozen))
        let freeze = fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }.first
        #expect(freeze?.kind == .freeze && freeze?.backend == .cgroup2 && freeze?.tasks == 1 && freeze?.reason == "READY=1")
    }

    @Test func graceExpiresAtItsDeadline() {
        var l = Self.lifecycle(in: .background)
        let deadline = l.nextDeadline!
        #expect(l.handle(.tick, now: deadline - 1).isEmpty)
        #expect(l.handle(.tick, now: deadline) == [.freeze(deadline: deadline + 10 * Self.second)])
    }

    @Test func extendTimeoutDuringTheGraceAndPastMaxGrace() {
        var l = AppLifecycle(record: Self.record(grace: 1 * Self.second, maxGrace: 3 * Self.second), launchStart: 0)
        _ = l.handle(.ready, now: 0)
        _ = l.handle(.suspend(waiter: nil, notice: Self.usr1), now: 0)
        #expect(l.nextDeadline == 1 * Self.second)
        var fx = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=2000000")), now: 500_000_000)
        #expect(l.nextDeadline == 2_500_000_000)
        #expect(l.grace?.extensions == 1)
        #expect(fx.contains(.persist))
        // Past --max-grace: capped, and the log says so (a second after the last line).
        fx = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=60000000")), now: 1_600_000_000)
        #expect(l.nextDeadline == 3 * Self.second)
        #expect(fx.contains { if case .log(let e) = $0 { return e.detail.contains("capped by --max-grace") } else { return false } })
        // An extension never shortens the grace.
        _ = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=1")), now: 1_700_000_000)
        #expect(l.grace?.deadline == 3 * Self.second)
        // A huge one saturates rather than trapping or wrapping.
        _ = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=18446744073709551615")), now: UInt64.max - 5)
        #expect(l.grace?.deadline == 3 * Self.second)
    }

    @Test func hugeDurationsSaturate() {
        var l = AppLifecycle(record: Self.record(grace: .max, maxGrace: .max), launchStart: .max - 10)
        _ = l.handle(.ready, now: .max - 5)
        _ = l.handle(.suspend(waiter: nil, notice: Self.usr1), now: .max - 5)
        #expect(l.nextDeadline == .max)
        var t = AppLifecycle(record: Self.record(), launchStart: 0)
        _ = t.handle(.terminate(waiter: nil, timeout: .max), now: 10)
        #expect(t.nextDeadline == .max)
    }

    @Test func withoutANoticeTheGraceStillRunsItsCourse() {
        var l = Self.lifecycle(in: .active)
        let fx = l.handle(.suspend(waiter: 1, notice: nil), now: 50)
        #expect(!fx.contains { if case .signal = $0 { return true } else { return false } })
        #expect(!fx.contains { if case .freeze = $0 { return true } else { return false } }, "not frozen before the grace ends")
        #expect(l.state == .background)
        #expect(l.nextDeadline == 50 + 5 * Self.second)
        #expect(l.handle(.tick, now: 50 + 5 * Self.second - 1).isEmpty)
        #expect(l.handle(.tick, now: 50 + 5 * Self.second).last == .freeze(deadline: 50 + 15 * Self.second))
    }

    @Test func graceZeroFreezesAtOnceWithOrWithoutANotice() {
        for notice in [Self.usr1, nil] {
            var l = AppLifecycle(record: Self.record(grace: 0), launchStart: 0)
            _ = l.handle(.ready, now: 10)
            let fx = l.handle(.suspend(waiter: 1, notice: notice), now: 50)
            #expect(fx.last == .freeze(deadline: 50 + 10 * Self.second))
            #expect(fx.contains { if case .report(1, let line, false, _) = $0 { return line.contains("grace 0") } else { return false } })
        }
    }

    @Test func suspendWhileInTheBackgroundJoinsTheWait() {
        var l = Self.lifecycle(in: .background)
        #expect(l.handle(.suspend(waiter: 9, notice: Self.usr1), now: 50).isEmpty, "no second notice")
        _ = l.handle(.tick, now: l.nextDeadline!)
        let fx = l.handle(.freezeConfirmed(Self.frozen), now: .max)
        #expect(fx.contains { if case .settle(9, _, false, _) = $0 { return true } else { return false } })
    }

    @Test func suspendedAppSuspendedAgainIsANoOp() {
        var l = Self.lifecycle(in: .suspended)
        #expect(
            l.handle(.suspend(waiter: 3, notice: Self.usr1), now: 9) == [
                .settle(waiter: 3, line: "web  already suspended (nothing to do)", failed: false)
            ])
    }

    @Test func freezeDeadlineMissedLeavesTheAppActiveAndTellsTheWaiter() {
        var l = Self.lifecycle(in: .active)
        _ = l.handle(.suspend(waiter: 5, notice: nil), now: 10)
        _ = l.handle(.tick, now: l.nextDeadline!)
        let fx = l.handle(.freezeFailed("not frozen after 10s (cgroup2); rolled back, the app runs"), now: 20)
        #expect(l.state == .active)
        #expect(fx.contains { if case .settle(5, let line?, true, _) = $0 { return line.contains("freeze failed") } else { return false } })
    }

    @Test func exitDuringAFreezeCancelsItAndEndsTheApp() {
        var l = Self.lifecycle(in: .freezing)
        l.waitForLaunch(99)  // a late waiter is told too
        var fx = l.handle(.exited(.exited(3)), now: 50)
        #expect(fx == [.cancelFreeze, .destroy])
        fx = l.handle(.cleanedUp(leftovers: 2, problems: []), now: 60)
        #expect(l.state == .exited && l.record.exitStatus == 3)
        #expect(
            fx.contains {
                if case .log(let e) = $0 {
                    return e.kind == .exit && e.detail.contains("killed 2 remaining processes")
                } else {
                    return false
                }
            })
        #expect(fx.contains { if case .settle(99, _, true, _) = $0 { return true } else { return false } })
        #expect(fx.last.map { if case .ended = $0 { return true } else { return false } } == true)
        // A freeze confirmation that arrives late changes nothing.
        #expect(l.handle(.freezeConfirmed(Self.frozen), now: 70).isEmpty)
    }

    @Test func terminateWhileSuspendedThawsFirstThenSIGTERMThenSIGKILL() {
        var l = Self.lifecycle(in: .suspended)
        var fx = l.handle(.terminate(waiter: 1, timeout: Self.second), now: 100)
        // Its event first, stamped now: the thaw, which the kernel may confirm within its write,
        // logs its own (later) one when it is carried out. It was appended after the thaw's.
        #expect(fx.first.map(\.isLog) == true && Self.events(fx).map(\.kind) == [.terminate], "\(fx)")
        #expect(Self.events(fx).allSatisfy { $0.monotonicNanos == 100 })
        #expect(
            fx.filter { !$0.isLog }.prefix(3) == [.persist, .thawAside(.forTermination), .signalMembers(SIGTERM)],
            "the intent recorded first")
        #expect(l.state == .suspended, "the state changes when the app is gone")
        #expect(l.nextDeadline == 100 + Self.second)
        fx = l.handle(.tick, now: 100 + Self.second)
        #expect(fx.contains(.killAll))
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 200 + Self.second)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 300 + Self.second)
        #expect(l.state == .terminated && l.record.killedWhileSuspended)
        #expect(
            fx.contains {
                if case .settle(1, let line?, false, _) = $0 { return line.hasPrefix("web  suspended → terminated") } else { return false }
            })
    }

    @Test func terminateDuringTheGraceWithdrawsTheFreezeAndFailsTheSuspend() {
        var l = Self.lifecycle(in: .active)
        _ = l.handle(.suspend(waiter: 1, notice: Self.usr1), now: 10)
        var fx = l.handle(.terminate(waiter: 2, timeout: Self.second), now: 20)
        #expect(!fx.contains(.thawAside(.forTermination)), "never frozen")
        #expect(l.grace == nil && l.nextDeadline == 20 + Self.second, "the grace deadline is gone")
        _ = l.handle(.exited(.signaled(SIGTERM)), now: 30)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 40)
        #expect(
            fx.contains {
                if case .settle(1, let line?, true, _) = $0 { return line.contains("ended before it was frozen") } else { return false }
            })
        #expect(fx.contains { if case .settle(2, _, false, _) = $0 { return true } else { return false } })
        #expect(l.state == .terminated)
    }

    @Test func evictWhileSuspendedKillsWithoutThawAndRecordsRestore() {
        var l = Self.lifecycle(in: .suspended)
        let fx = l.handle(.evict(waiter: 1), now: 10)
        #expect(fx == [.persist, .killAll], "the intent recorded, then the kill")
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 20)
        _ = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 30)
        #expect(l.state == .evicted && l.record.killedWhileSuspended)
    }

    @Test func evictDuringTheGraceAndDuringAFreeze() {
        var g = Self.lifecycle(in: .background)
        #expect(g.handle(.evict(waiter: nil), now: 10) == [.persist, .killAll])
        var f = Self.lifecycle(in: .freezing)
        #expect(f.handle(.evict(waiter: nil), now: 10) == [.cancelFreeze, .persist, .killAll])
    }

    @Test func evictDuringATerminateBecomesAnEviction() {
        var l = Self.lifecycle(in: .terminating)
        #expect(l.handle(.evict(waiter: 1), now: 10) == [.persist, .killAll])
        #expect(l.persistentRecord.endIntent == .evict)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 20)
        _ = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 30)
        #expect(l.state == .evicted)
    }

    @Test func resumeDuringTheGraceOrTheFreeze() {
        var g = Self.lifecycle(in: .background)
        var fx = g.handle(.resume(waiter: 1), now: 10)
        #expect(g.state == .active && g.nextDeadline == nil)
        #expect(fx.contains { if case .log(let e) = $0 { return e.kind == .resume } else { return false } })
        var f = Self.lifecycle(in: .freezing)
        fx = f.handle(.resume(waiter: 1), now: 10)
        #expect(Self.firstAction(fx) == .cancelFreeze && f.state == .active)
    }

    @Test func resumeThenWaitReadyForAHotStart() {
        var l = Self.lifecycle(in: .suspended, ready: .notify)
        var fx = l.handle(.resume(waiter: 4, waitReady: true), now: 1_000)
        #expect(fx == [.thaw(deadline: 1_000 + 10 * Self.second)])
        // A second resume while the thaw is in flight waits for the same thaw.
        #expect(l.handle(.resume(waiter: 5), now: 1_001).isEmpty)
        fx = l.handle(.thawConfirmed(Self.frozen), now: 2_000)
        #expect(l.state == .active && l.record.lastThawNanos == 80_000)
        #expect(fx.contains { if case .report(4, _, false, _) = $0 { return true } else { return false } })
        #expect(fx.contains { if case .settle(5, _, false, _) = $0 { return true } else { return false } })
        fx = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 5_000)
        #expect(
            fx.contains {
                if case .settle(4, let line?, false, _) = $0 { return line.contains("resume → ready in 4.00 µs") } else { return false }
            })
    }

    @Test func resumeWaitReadyTimesOut() {
        var l = Self.lifecycle(in: .suspended, ready: .notify)
        _ = l.handle(.resume(waiter: 4, waitReady: true), now: 1_000)
        _ = l.handle(.thawConfirmed(Self.frozen), now: 2_000)
        let deadline = l.nextDeadline!
        let fx = l.handle(.tick, now: deadline)
        #expect(
            fx.contains {
                if case .settle(4, let line?, true, _) = $0 { return line.contains("did not say READY=1") } else { return false }
            })
    }

    @Test func readyTimeoutTerminatesAndKeepsTheLaunchWaiterUntilTheEnd() {
        var l = AppLifecycle(record: Self.record(ready: .tcp(8000)), launchStart: 0)
        l.waitForLaunch(3)
        let deadline = l.nextDeadline!
        var fx = l.handle(.tick, now: deadline)
        #expect(fx.contains(.stopProbe) && fx.contains(.signalMembers(SIGTERM)))
        #expect(fx.contains { if case .report(3, _, true, _) = $0 { return true } else { return false } })
        #expect(!fx.contains { if case .settle(3, _, _, _) = $0 { return true } else { return false } })
        _ = l.handle(.exited(.signaled(SIGTERM)), now: deadline + 1)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: deadline + 2)
        #expect(fx.contains { if case .settle(3, _, _, _) = $0 { return true } else { return false } })
    }

    @Test func suspendedAppWhoseMainProcessLeftItsCgroupIsActiveAndTheRestThawed() {
        var l = Self.lifecycle(in: .suspended)
        let fx = l.handle(.leftCgroup(to: "/sys/fs/cgroup/other"), now: 5_000)
        #expect(l.state == .active && l.phase == .active(resumedAt: nil))
        #expect(l.record.sinceMonotonicNanos == 5_000)
        #expect(fx.contains(.thawAside(.remainder)) && fx.contains(.persist))
        let event = fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }.first
        #expect(event?.kind == .thaw && event?.from == .suspended && event?.to == .active && event?.reason == "left-cgroup")
        #expect(event?.detail.contains("pid 4242 left the app's cgroup for /sys/fs/cgroup/other") == true, "\(String(describing: event))")
        // Running again, it can be suspended again (the daemon checks the cgroup before freezing).
        #expect(l.handle(.suspend(waiter: 1, notice: nil, grace: 0), now: 6_000).contains(.freeze(deadline: 6_000 + l.freezeTimeout)))
    }

    @Test func freezeOfAnAppWhoseMainProcessLeftItsCgroupFailsAndTellsTheWaiter() {
        var l = Self.lifecycle(in: .active)
        _ = l.handle(.suspend(waiter: 7, notice: nil, grace: 0), now: 3_000)
        #expect(l.phase == .freezing(grace: Grace(now: 3_000, length: 0, maxLength: 30 * Self.second), ended: .zero, victim: nil))
        let fx = l.handle(.leftCgroup(to: "/elsewhere"), now: 3_100)
        #expect(l.state == .active)
        #expect(Self.firstAction(fx) == .cancelFreeze)
        let told = fx.contains {
            if case .settle(7, let line?, true, _) = $0 { return line.contains("not in the app's cgroup") }
            return false
        }
        #expect(told, "\(fx)")
    }

    @Test func leavingTheCgroupChangesNothingOutsideSuspendedAndFreezing() {
        for named in [Named.active, .background, .thawing, .terminating] {
            var l = Self.lifecycle(in: named)
            let before = l.phase
            #expect(l.handle(.leftCgroup(to: "/elsewhere"), now: 9_000).isEmpty, "\(named)")
            #expect(l.phase == before)
        }
    }

    @Test func aSuspendedAppThawedOutsideIsActiveToldAndCanBeSuspendedAgain() {
        var l = Self.lifecycle(in: .suspended)
        l.update { $0.options.foregroundSignal = SIGUSR2 }
        let fx = l.handle(.thawedOutside(how: "its cgroup.freeze reads 0"), now: 5_000)
        #expect(l.state == .active && l.phase == .active(resumedAt: nil))
        #expect(l.record.sinceMonotonicNanos == 5_000)
        #expect(fx.contains(.signal(SIGUSR2)), "told it is in the foreground, as a resume would: \(fx)")
        #expect(fx.contains(.persist))
        let event = fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }.first
        #expect(event?.kind == .thaw && event?.from == .suspended && event?.to == .active && event?.reason == "outside")
        #expect(event?.detail.contains("thawed outside icebox (its cgroup.freeze reads 0)") == true, "\(String(describing: event))")
        #expect(l.handle(.suspend(waiter: 1, notice: nil, grace: 0), now: 6_000).contains(.freeze(deadline: 6_000 + l.freezeTimeout)))
    }

    @Test func anActiveAppFrozenOutsideIsSuspendedUntoldAndResumeThawsIt() {
        var l = Self.lifecycle(in: .active)
        let fx = l.handle(.frozenOutside(how: "its cgroup.freeze reads 1"), now: 5_000)
        #expect(l.state == .suspended && l.phase == .suspended(compacted: false))
        #expect(l.record.sinceMonotonicNanos == 5_000)
        #expect(!fx.contains { if case .signal = $0 { return true } else { return false } }, "a frozen app cannot be told")
        #expect(fx.contains(.persist) && fx.contains(.frozen), "\(fx)")
        let event = fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }.first
        #expect(event?.kind == .freeze && event?.from == .active && event?.to == .suspended && event?.reason == "outside")
        #expect(l.handle(.resume(waiter: 1), now: 6_000).contains(.thaw(deadline: 6_000 + l.freezeTimeout)))
    }

    /// An outside freeze acts on an active app only, an outside thaw on a suspended one: in any
    /// other phase an operation of icebox's reads the kernel itself, or the app is going.
    @Test func aFreezerWrittenOutsideDoesNothingInAnyOtherPhase() {
        for (input, phase) in [(LifecycleInput.frozenOutside(how: "x"), Named.active), (.thawedOutside(how: "x"), .suspended)] {
            for named in Named.allCases where named != phase {
                var l = Self.lifecycle(in: named)
                let before = l.phase
                #expect(l.handle(input, now: 9_000).isEmpty, "\(input) in \(named)")
                #expect(l.phase == before)
            }
        }
    }

    @Test func thawFailedStaysSuspended() {
        var l = Self.lifecycle(in: .thawing)
        _ = l.handle(.thawFailed("EACCES"), now: 10)
        #expect(l.state == .suspended)
    }

    @Test func policyVictimNotYetSuspendedGoesThroughAShortGraceThenIsEvicted() {
        var l = Self.lifecycle(in: .active)
        var fx = l.handle(.policyVictim(grace: 100, notice: Self.usr1), now: 1_000)
        #expect(Self.firstAction(fx) == .signal(SIGUSR1))
        #expect(l.nextDeadline == 1_100, "the grace is cut to the eviction grace")
        fx = l.handle(.tick, now: 1_100)
        fx = l.handle(.freezeConfirmed(Self.frozen), now: 1_200)
        #expect(fx.last == .killAll, "evicted once frozen: \(fx)")
        #expect(!fx.contains(.frozen))
    }

    @Test func policyVictimInTheGraceHasItCut() {
        var l = Self.lifecycle(in: .background)
        _ = l.handle(.policyVictim(grace: 10, notice: nil), now: 3_000)
        #expect(l.nextDeadline == 3_010)
    }

    @Test func policyVictimWhoseFreezeFailsIsKilledAnyway() {
        var l = Self.lifecycle(in: .freezing)
        _ = l.handle(.policyVictim(grace: 10, notice: nil), now: 3_000)
        let fx = l.handle(.freezeFailed("D state"), now: 4_000)
        #expect(fx.last == .killAll)
    }

    @Test func adoptedAppInItsGraceKeepsTheRecordedDeadline() {
        var r = Self.record()
        r.state = .background
        r.graceStartNanos = 100
        r.graceDeadlineNanos = 900
        r.graceCapNanos = 2_000
        let l = AppLifecycle(adopting: r, now: 500)
        #expect(l.nextDeadline == 900 && l.adopted)
        #expect(l.persistentRecord.graceDeadlineNanos == 900)
    }

    @Test func adoptedAppEndsWithUnknownStatus() {
        var r = Self.record()
        r.state = .active
        var l = AppLifecycle(adopting: r, now: 0)
        _ = l.handle(.exited(nil), now: 10)
        let fx = l.handle(.cleanedUp(leftovers: 0, problems: ["rmdir: EBUSY"]), now: 20)
        #expect(l.record.exitStatus == nil && l.record.ending?.contains("exit status unknown") == true)
        #expect(fx.contains { if case .log(let e) = $0 { return e.detail.contains("cleanup: rmdir: EBUSY") } else { return false } })
    }

    /// An app `icebox adopt` took over is never icebox's child: it ends "exited (status
    /// unknown)", evicted or terminated all the same, and the policy's kill is recorded as
    /// SIGKILL (icebox sent it).
    @Test func appTakenOverByAdoptEndsExitedWithStatusUnknown() {
        var r = Self.record()
        r.state = .active
        r.adoptedFrom = "/sys/fs/cgroup/user.d"
        var l = AppLifecycle(adopting: r, now: 0)
        #expect(l.adopted && l.state == .active)
        _ = l.handle(.exited(nil), now: 10)
        let fx = l.handle(.cleanedUp(leftovers: 2, problems: []), now: 20)
        #expect(l.record.state == .exited && l.record.exitStatus == nil)
        #expect(l.record.ending?.hasPrefix("exited (status unknown") == true, "\(l.record.ending ?? "")")
        #expect(fx.contains { if case .log(let e) = $0 { return e.detail.contains("killed 2 remaining processes") } else { return false } })

        var evicted = AppLifecycle(adopting: r, now: 0)
        _ = evicted.handle(.evict(waiter: nil), now: 5)
        _ = evicted.handle(.exited(nil), now: 10)
        _ = evicted.handle(.cleanedUp(leftovers: 0, problems: []), now: 20)
        #expect(evicted.record.state == .evicted && evicted.record.ending == "killed by SIGKILL")
    }

    @Test func statusAndStoppingAreRecorded() {
        var l = Self.lifecycle(in: .active)
        let fx = l.handle(.notify(NotifyMessage.parse("STATUS=count 10\nSTOPPING=1")), now: 10)
        #expect(l.record.statusText == "count 10")
        #expect(fx.contains(.persist))
        #expect(fx.contains { if case .log(let e) = $0 { return e.kind == .notify } else { return false } })
    }

    @Test func graceArithmetic() {
        var g = Grace(now: 10, length: 5, maxLength: 20)
        #expect(g.deadline == 15 && g.cap == 30)
        let firstCapped = g.extend(by: 10, now: 12)
        #expect(!firstCapped)
        #expect(g.deadline == 22)
        let secondCapped = g.extend(by: 100, now: 12)
        #expect(secondCapped)
        #expect(g.deadline == 30 && g.extensions == 2)
        g.cut(to: 25)
        #expect(g.deadline == 25 && g.length == 15)
        #expect(Grace(now: .max, length: .max, maxLength: 0).cap == .max)
    }

    /// The watchdog interval of `watched`: the least there is.
    static let w = LaunchOptions.leastWatchdogNanos

    static func watched(_ action: WatchdogAction? = nil) -> AppLifecycle {
        var r = record()
        r.options.watchdogNanos = w
        r.options.watchdogAction = action
        var l = AppLifecycle(record: r, launchStart: 0)
        _ = l.handle(.ready, now: 1_000)
        return l
    }

    @Test func watchdogArmsWhenActiveAndPingsPushItBack() {
        let w = Self.w
        var l = Self.watched()
        #expect(l.watchdogDeadline == 1_000 + w)
        _ = l.handle(.notify(NotifyMessage.parse("WATCHDOG=1")), now: 1_050)
        #expect(l.watchdogDeadline == 1_050 + w)
        let fx = l.handle(.tick, now: 1_050 + w)
        #expect(fx.contains { if case .log(let e) = $0 { return e.kind == .watchdog } else { return false } })
        #expect(l.state == .active && l.watchdogDeadline == nil, "log only, once, until the next ping")
        _ = l.handle(.notify(NotifyMessage.parse("WATCHDOG=1")), now: 1_200 + w)
        #expect(l.watchdogDeadline == 1_200 + 2 * w)
    }

    @Test func watchdogIsPausedFromTheNoticeThroughTheFreezeAndRestartsOnResume() {
        var l = Self.watched()
        _ = l.handle(.suspend(waiter: nil, notice: Self.usr1), now: 1_010)
        #expect(l.watchdogDeadline == nil)
        _ = l.handle(.tick, now: l.nextDeadline!)
        _ = l.handle(.freezeConfirmed(Self.frozen), now: 9_000)
        // Suspended far longer than the interval: no watchdog event.
        #expect(l.nextDeadline == nil)
        #expect(l.handle(.tick, now: 100 * Self.w).isEmpty)
        _ = l.handle(.resume(waiter: nil), now: 200 * Self.w)
        _ = l.handle(.thawConfirmed(Self.frozen), now: 200 * Self.w + 10)
        #expect(l.watchdogDeadline == 201 * Self.w + 10)
    }

    @Test func watchdogKillAndRestart() {
        var k = Self.watched(.kill)
        var fx = k.handle(.tick, now: 1_000 + Self.w)
        #expect(fx.last == .killAll && !k.restartWhenEnded)
        _ = k.handle(.exited(.signaled(SIGKILL)), now: 1_200)
        _ = k.handle(.cleanedUp(leftovers: 0, problems: []), now: 1_300)
        #expect(k.state == .terminated)
        var r = Self.watched(.restart)
        fx = r.handle(.notify(NotifyMessage.parse("WATCHDOG=trigger")), now: 1_010)
        #expect(fx.last == .killAll && r.restartWhenEnded)
    }

    @Test func watchdogUsecFromTheAppSetsTheIntervalNeverBelowTheLeast() {
        var l = Self.watched()
        _ = l.handle(.notify(NotifyMessage.parse("WATCHDOG_USEC=2000000")), now: 1_020)
        #expect(l.watchdogInterval == 2 * Self.second && l.watchdogDeadline == 1_020 + 2 * Self.second)
        // 1 µs would fire on every turn of the loop: raised to the least, and said so.
        let fx = l.handle(.notify(NotifyMessage.parse("WATCHDOG_USEC=1")), now: 2_000)
        #expect(l.watchdogInterval == LaunchOptions.leastWatchdogNanos)
        #expect(l.watchdogDeadline == 2_000 + LaunchOptions.leastWatchdogNanos)
        #expect(Self.lines(fx).contains { $0.contains("below the least interval") })
        // A --watchdog below the least (a record from a hand-made request) is raised too.
        var r = Self.record()
        r.options.watchdogNanos = 1
        #expect(AppLifecycle(record: r, launchStart: 0).watchdogInterval == LaunchOptions.leastWatchdogNanos)
    }

    static func lines(_ fx: [LifecycleEffect]) -> [String] {
        fx.compactMap { if case .log(let e) = $0 { return e.detail } else { return nil } }
    }

    /// The first effect that acts (the transition's events come before it).
    static func firstAction(_ fx: [LifecycleEffect]) -> LifecycleEffect? { fx.first { !$0.isLog } }

    static func events(_ fx: [LifecycleEffect]) -> [Event] {
        fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }
    }

    // MARK: What an app can repeat (NotifyRepeats)

    @Test func repeatedStoppingAndWatchdogTriggerWriteALineASecondThenOneSummary() {
        var l = Self.lifecycle(in: .active)
        var logged: [String] = []
        for i in 0..<1_000 {
            let fx = l.handle(.notify(NotifyMessage.parse(i % 2 == 0 ? "STOPPING=1" : "WATCHDOG=trigger")), now: 10_000 + UInt64(i))
            logged += Self.lines(fx)
        }
        #expect(logged.count == 2, "\(logged)")
        #expect(l.state == .active, "--watchdog-action log: the app runs on")
        let due = try! #require(l.nextDeadline)
        #expect(due == 10_000 + Self.second, "the summary is a loop deadline, a second after the first line")
        let summaries = Self.lines(l.handle(.tick, now: due + 1))
        #expect(summaries.contains("STOPPING=1 sent 499 more times (logged at most once a second)"), "\(summaries)")
        #expect(summaries.contains("the watchdog fired 499 more times (logged at most once a second)"), "\(summaries)")
        #expect(l.nextDeadline == nil, "nothing held back any more")
        // A second later, a message is logged again at once.
        #expect(Self.lines(l.handle(.notify(NotifyMessage.parse("STOPPING=1")), now: due + Self.second + 2)) == ["STOPPING=1"])
    }

    @Test func statusIsKeptAtOnceAndWrittenAtABoundedRateTheLatestLast() {
        var l = Self.lifecycle(in: .active)
        var persists = 0
        let start: UInt64 = 10_000
        for i in 0..<1_000 {
            let fx = l.handle(.notify(NotifyMessage.parse("STATUS=step \(i)")), now: start + UInt64(i) * 100)
            persists += fx.filter { $0 == .persist }.count
            #expect(l.record.statusText == "step \(i)", "ps shows every change at once")
        }
        #expect(persists == 1, "the first change is written at once, the rest wait")
        let due = try! #require(l.nextDeadline)
        #expect(due == start + NotifyRepeats.recordIntervalNanos)
        var fx = l.handle(.tick, now: due)
        #expect(fx.contains(.persist) && l.persistentRecord.statusText == "step 999", "the latest is written when the interval ends")
        // The flood is said once, when its second ends.
        let summary = try! #require(l.nextDeadline)
        #expect(summary == start + 100 + Self.second, "a second after the first change held back")
        fx = l.handle(.tick, now: summary)
        #expect(Self.lines(fx).contains { $0.hasPrefix("STATUS= changed 999 times") }, "\(Self.lines(fx))")
        #expect(!fx.contains(.persist) && l.nextDeadline == nil)
        // A status now and then is written at once, and logs nothing.
        fx = l.handle(.notify(NotifyMessage.parse("STATUS=idle")), now: summary + Self.second)
        #expect(fx == [.persist])
    }

    @Test func aStatusFloodThatGoesOnPastItsSecondIsStillSaid() {
        // Under a flood the loop reads the socket before it runs its deadline work: a change
        // that arrives after the second ended, before the tick, must not wipe the count.
        var l = Self.lifecycle(in: .active)
        let start: UInt64 = 10_000
        for i in 0..<300 { _ = l.handle(.notify(NotifyMessage.parse("STATUS=step \(i)")), now: start + UInt64(i) * 1_000) }
        let late = start + 2 * Self.second
        for i in 0..<10 { _ = l.handle(.notify(NotifyMessage.parse("STATUS=late \(i)")), now: late + UInt64(i)) }
        let fx = l.handle(.tick, now: late + 20)
        #expect(Self.lines(fx).contains { $0.hasPrefix("STATUS= changed 3") }, "\(Self.lines(fx))")
    }

    @Test func aStatusThatWaitsGoesWithTheNextRecordWrite() {
        var l = Self.lifecycle(in: .active)
        _ = l.handle(.notify(NotifyMessage.parse("STATUS=a")), now: 10_000)
        _ = l.handle(.notify(NotifyMessage.parse("STATUS=b")), now: 10_001)
        #expect(l.nextDeadline == 10_000 + NotifyRepeats.recordIntervalNanos)
        let fx = l.handle(.suspend(waiter: nil, notice: Self.usr1), now: 10_002)
        #expect(fx.contains(.persist) && l.persistentRecord.statusText == "b")
        #expect(l.nextDeadline == 10_002 + 5 * Self.second, "only the grace is left to wait for")
    }

    @Test func repeatedExtensionsAreGrantedButLoggedAndWrittenAtABoundedRate() {
        var l = Self.lifecycle(in: .background)
        var logged = 0, persists = 0
        for i in 0..<100 {
            let fx = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=10000000")), now: 3_000 + UInt64(i))
            logged += Self.lines(fx).count
            persists += fx.filter { $0 == .persist }.count
        }
        #expect(logged == 1 && persists == 1)
        #expect(l.grace?.deadline == 3_099 + 10 * Self.second, "every extension counts")
        let fx = l.handle(.tick, now: 3_000 + NotifyRepeats.recordIntervalNanos)
        #expect(fx.contains(.persist) && l.persistentRecord.graceDeadlineNanos == 3_099 + 10 * Self.second)
    }

    @Test func whatWasHeldBackIsSaidBeforeTheEnd() {
        var l = Self.lifecycle(in: .active)
        for i in 0..<10 { _ = l.handle(.notify(NotifyMessage.parse("STOPPING=1")), now: 10_000 + UInt64(i)) }
        _ = l.handle(.exited(.exited(0)), now: 20_000)
        let lines = Self.lines(l.handle(.cleanedUp(leftovers: 0, problems: []), now: 30_000))
        #expect(lines.first == "STOPPING=1 sent 9 more times (logged at most once a second)", "\(lines)")
    }

    // MARK: A policy victim's grace

    @Test func policyVictimCannotExtendItsGrace() {
        var l = Self.lifecycle(in: .active)
        _ = l.handle(.policyVictim(grace: Self.second, notice: Self.usr1), now: 10_000)
        var logged: [String] = []
        for i in 0..<50 {
            logged += Self.lines(l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=60000000")), now: 10_100 + UInt64(i)))
        }
        #expect(l.nextDeadline == 10_000 + Self.second, "the eviction grace stands")
        #expect(logged.count == 1 && logged[0].hasPrefix("EXTEND_TIMEOUT_USEC ignored: chosen for eviction"), "\(logged)")
        _ = l.handle(.tick, now: 10_000 + Self.second)
        let fx = l.handle(.freezeConfirmed(Self.frozen), now: 10_000 + Self.second + 100)
        #expect(fx.last == .killAll)
    }

    @Test func policyVictimInALongGraceHasItCutForGood() {
        var l = Self.lifecycle(in: .background)  // a client's suspend: grace 5 s, extensible to 30 s
        _ = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=20000000")), now: 2_500)
        _ = l.handle(.policyVictim(grace: Self.second, notice: nil), now: 3_000)
        #expect(l.nextDeadline == 3_000 + Self.second)
        _ = l.handle(.notify(NotifyMessage.parse("EXTEND_TIMEOUT_USEC=20000000")), now: 3_500)
        #expect(l.nextDeadline == 3_000 + Self.second)
        // The cut is in the record too: a daemon that takes over keeps it.
        #expect(l.persistentRecord.graceCapNanos == 3_000 + Self.second)
        var g = Grace(now: 0, length: 10, maxLength: 100)
        g.cut(to: 5)
        #expect(!g.extend(by: 50, now: 1) || g.deadline == 5)
        #expect(g.deadline == 5 && g.cap == 5)
    }

    // MARK: The start limit of --watchdog-action restart

    @Test func watchdogRestartStopsAtTheStartLimit() {
        // Five restarts in the last 10 s (the defaults): the sixth is refused.
        var r = Self.record()
        r.options.watchdogNanos = Self.second
        r.options.watchdogAction = .restart
        let now = 100 * Self.second
        r.restartTimesNanos = (1...5).map { now - UInt64($0) * Self.second }
        var l = AppLifecycle(record: r, launchStart: now - 500)
        _ = l.handle(.ready, now: now - 400)
        var fx = l.handle(.notify(NotifyMessage.parse("WATCHDOG=trigger")), now: now)
        #expect(fx.last == .killAll && !l.restartWhenEnded)
        #expect(Self.lines(fx).contains { $0.contains("start limit hit: 5 restarts in 10 s") }, "\(Self.lines(fx))")
        _ = l.handle(.exited(.signaled(SIGKILL)), now: now + 10)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: now + 20)
        #expect(l.record.ending == "killed by SIGKILL; start limit hit: 5 restarts in 10 s, not restarted", "\(l.record.ending ?? "")")
        #expect(Self.lines(fx).contains { $0.contains("start limit hit") })

        // Older restarts fall out of the interval: one more is allowed, and carried on.
        r.restartTimesNanos = [now - 30 * Self.second, now - 3 * Self.second]
        l = AppLifecycle(record: r, launchStart: now - 500)
        _ = l.handle(.ready, now: now - 400)
        fx = l.handle(.notify(NotifyMessage.parse("WATCHDOG=trigger")), now: now)
        #expect(l.restartWhenEnded && l.restartTimes == [now - 3 * Self.second, now])

        // --start-limit-interval 0: no limit, nothing carried.
        r.options.startLimitIntervalNanos = 0
        l = AppLifecycle(record: r, launchStart: now - 500)
        _ = l.handle(.ready, now: now - 400)
        _ = l.handle(.notify(NotifyMessage.parse("WATCHDOG=trigger")), now: now)
        #expect(l.restartWhenEnded && l.restartTimes.isEmpty)
    }

    @Test func startLimitDecisions() {
        let s = Self.second
        #expect(StartLimit.decide(previous: [], now: 100 * s, limit: (5, 10 * s)) == .restart(times: [100 * s]))
        #expect(StartLimit.decide(previous: [95 * s], now: 100 * s, limit: (1, 10 * s)) == .hit("start limit hit: 1 restart in 10 s"))
        #expect(StartLimit.decide(previous: [90 * s], now: 100 * s, limit: (1, 10 * s)) == .restart(times: [100 * s]))
        // A time from the future (a corrupt record) is not counted.
        #expect(StartLimit.decide(previous: [200 * s], now: 100 * s, limit: (1, 10 * s)) == .restart(times: [100 * s]))
        var o = LaunchOptions(name: "x", command: ["true"])
        #expect(o.startLimit! == (5, 10 * s))
        o.startLimitBurst = 1_000_000
        #expect(o.startLimit!.burst == LaunchOptions.maxStartLimitBurst)
    }
}

/// Every request that can reach an app still launching (issue 33: a suspend stranded the
/// launch client and lost the ready deadline): each is refused, with nothing done and the
/// deadline kept, or carried through with the launch client answered.
@Suite("AppLifecycle: launching × every request")
struct LaunchingRequestTests {
    static let second = AppLifecycleTests.second
    static let start: UInt64 = 1_000
    static let launchWaiter = 7

    /// Launched with --ready notify --ready-timeout 5s, its launch client waiting.
    static func launching(_ ready: ReadyMode = .notify) -> AppLifecycle {
        var r = AppLifecycleTests.record(ready: ready)
        r.options.readyTimeoutNanos = 5 * second
        var l = AppLifecycle(record: r, launchStart: start)
        l.waitForLaunch(launchWaiter)
        return l
    }

    static func answered(_ fx: [LifecycleEffect], _ id: Int, failed: Bool) -> String? {
        for effect in fx {
            switch effect {
            case .settle(id, let line, failed, _): return line ?? ""
            case .report(id, let line, failed, _): return line
            case .refuse(id, let line, _) where failed: return line
            default: continue
            }
        }
        return nil
    }

    @Test func suspendIsRefusedTheDeadlineKeptAndTheLaunchGoesOn() {
        var l = Self.launching()
        let deadline = l.nextDeadline
        let now = Self.start + Self.second / 2
        let fx = l.handle(.suspend(waiter: 1, notice: AppLifecycleTests.usr1), now: now)
        #expect(
            fx == [
                .refuse(
                    waiter: 1, line: "icebox: web is still launching (waiting for READY=1, 4.5s left); try again when it is active",
                    code: .tryAgain)
            ])
        #expect(l.phase == .launching(readyDeadline: deadline) && l.state == .launching && l.nextDeadline == Self.start + 5 * Self.second)
        #expect(l.launchWaiters == [Self.launchWaiter] && l.suspendWaiters.isEmpty)
        // It becomes ready as if nothing had been asked, and its launch client hears so.
        let ready = l.handle(.notify(NotifyMessage.parse("READY=1")), now: now + 10)
        #expect(Self.answered(ready, Self.launchWaiter, failed: false)?.contains("launched") == true)
        #expect(l.state == .active)
    }

    @Test func suspendOfAProbedLaunchNamesItsProbe() {
        var l = Self.launching(.tcp(8080))
        let fx = l.handle(.suspend(waiter: 1, notice: nil, grace: 0), now: Self.start + 4 * Self.second)
        #expect(
            Self.answered(fx, 1, failed: true)
                == "icebox: web is still launching (waiting for --ready tcp:8080, 1.0s left); try again when it is active"
        )
        #expect(!fx.contains { if case .freeze = $0 { return true } else { return false } })
    }

    @Test func switchAwayIsASuspendAndRefusedTheSameWay() {
        // `switch other` resumes other and suspends each app active or launching.
        var l = Self.launching()
        let fx = l.handle(.suspend(waiter: 2, notice: nil), now: Self.start)
        #expect(fx.count == 1 && Self.answered(fx, 2, failed: true) != nil)
        #expect(l.state == .launching && l.nextDeadline == Self.start + 5 * Self.second)
    }

    @Test func resumeIsANoOpThatKeepsTheDeadline() {
        var l = Self.launching()
        let fx = l.handle(.resume(waiter: 1, waitReady: true), now: Self.start + 1)
        #expect(Self.answered(fx, 1, failed: false) == "web  already launching (nothing to do)")
        #expect(fx.count == 1 && l.state == .launching && l.nextDeadline == Self.start + 5 * Self.second)
        #expect(l.launchWaiters == [Self.launchWaiter])
    }

    @Test func terminateFailsTheLaunchAtOnceAndAnswersBothClientsAtTheEnd() {
        var l = Self.launching()
        var fx = l.handle(.terminate(waiter: 3, timeout: Self.second), now: Self.start + 10)
        #expect(fx.contains(.stopProbe))
        #expect(Self.answered(fx, Self.launchWaiter, failed: true)?.contains("web was terminated before it was ready") == true)
        // The intent (and its kill deadline) is written before the SIGTERM goes.
        let persist = fx.firstIndex(of: .persist), term = fx.firstIndex(of: .signalMembers(SIGTERM))
        #expect(persist != nil && term != nil && persist! < term!)
        #expect(l.persistentRecord.endIntent == .terminate && l.persistentRecord.killDeadlineNanos == Self.start + 10 + Self.second)
        #expect(l.nextDeadline == Self.start + 10 + Self.second, "the kill deadline replaces the ready deadline")
        #expect(l.launchWaiters.isEmpty && Set(l.endWaiters) == [3, Self.launchWaiter])
        _ = l.handle(.exited(.signaled(SIGTERM)), now: Self.start + 20)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: Self.start + 30)
        #expect(Self.answered(fx, 3, failed: false)?.contains("launching → terminated") == true)
        #expect(Self.answered(fx, Self.launchWaiter, failed: false) != nil, "its wait ends with the app")
        #expect(l.state == .terminated)
    }

    @Test func evictFailsTheLaunchAndKillsAtOnce() {
        var l = Self.launching()
        var fx = l.handle(.evict(waiter: 4), now: Self.start + 10)
        #expect(Self.answered(fx, Self.launchWaiter, failed: true)?.contains("web was evicted before it was ready") == true)
        #expect(fx.contains(.stopProbe) && fx.last == .killAll && fx.firstIndex(of: .persist)! < fx.firstIndex(of: .killAll)!)
        #expect(l.persistentRecord.endIntent == .evict)
        _ = l.handle(.exited(.signaled(SIGKILL)), now: Self.start + 20)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: Self.start + 30)
        #expect(Self.answered(fx, 4, failed: false)?.contains("launching → evicted") == true)
        #expect(Self.answered(fx, Self.launchWaiter, failed: false) != nil)
        #expect(l.state == .evicted)
    }

    @Test func thePolicysVictimIsKilledNotFrozenUnready() {
        var l = Self.launching()
        let fx = l.handle(.policyVictim(grace: Self.second, notice: AppLifecycleTests.usr1), now: Self.start + 10)
        #expect(!fx.contains(.signal(SIGUSR1)) && !fx.contains { if case .freeze = $0 { return true } else { return false } })
        #expect(fx.last == .killAll && l.isEvicting)
        #expect(Self.answered(fx, Self.launchWaiter, failed: true)?.contains("evicted by the memory policy before it was ready") == true)
        // A resume now cannot make it active without ever being ready.
        _ = l.handle(.resume(waiter: 5), now: Self.start + 20)
        #expect(l.isEvicting)
    }

    @Test func theWatchdogIsNotArmedUntilReady() {
        var r = AppLifecycleTests.record(ready: .notify)
        r.options.watchdogNanos = 100
        r.options.watchdogAction = .kill
        var l = AppLifecycle(record: r, launchStart: Self.start)
        l.waitForLaunch(Self.launchWaiter)
        #expect(l.watchdogDeadline == nil)
        #expect(l.handle(.notify(NotifyMessage.parse("WATCHDOG=trigger")), now: Self.start + 500).isEmpty)
        #expect(l.handle(.tick, now: Self.start + 500).isEmpty, "no watchdog, and the ready deadline is not due")
        #expect(l.state == .launching && l.launchWaiters == [Self.launchWaiter])
    }

    @Test func theReadyDeadlineFailsTheLaunchAndTerminates() {
        var l = Self.launching()
        let fx = l.handle(.tick, now: Self.start + 5 * Self.second)
        #expect(Self.answered(fx, Self.launchWaiter, failed: true) == "icebox: web was not ready (notify) within 5.0s; terminating it")
        #expect(fx.contains(.signalMembers(SIGTERM)) && l.persistentRecord.endIntent == .terminate)
    }

    @Test func anExitDuringTheLaunchAnswersItsClient() {
        var l = Self.launching()
        _ = l.handle(.exited(.exited(3)), now: Self.start + 10)
        let fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: Self.start + 20)
        #expect(Self.answered(fx, Self.launchWaiter, failed: true)?.contains("ended before it was ready") == true)
    }

    /// The property: whatever comes in, the launch client is answered (now or with the app's
    /// end) or still waits on a launch whose ready deadline is unchanged.
    @Test(arguments: AppLifecycleTests.inputs.map(\.0))
    func noInputStrandsTheLaunchClient(_ label: String) {
        let input = AppLifecycleTests.inputs.first { $0.0 == label }!.1
        var l = Self.launching()
        let fx = l.handle(input, now: Self.start + 10)
        switch l.phase {
        case .launching(let ready):
            #expect(ready == Self.start + 5 * Self.second, "\(label): the ready deadline is kept")
            #expect(l.launchWaiters == [Self.launchWaiter], "\(label)")
            #expect(l.state == .launching)
        case .active:
            #expect(Self.answered(fx, Self.launchWaiter, failed: false) != nil, "\(label): ready, and told so")
        case .ending, .cleaningUp:
            #expect(
                Self.answered(fx, Self.launchWaiter, failed: true) != nil || l.endWaiters.contains(Self.launchWaiter)
                    || l.launchWaiters == [Self.launchWaiter], "\(label)")
            #expect(
                l.nextDeadline != nil || l.isEvicting || { if case .cleaningUp = l.phase { return true } else { return false } }(),
                "\(label)")
        default:
            Issue.record("\(label): launching went to \(l.phase)")
        }
    }
}

/// A terminate or eviction in flight survives a daemon crash (issue 33): its intent and kill
/// deadline are in the record, and an adopting lifecycle finishes it.
@Suite("AppLifecycle: an ending survives a daemon crash")
struct EndingAcrossACrashTests {
    static let second = AppLifecycleTests.second

    static func recorded(_ how: AppLifecycle.Ending, start: UInt64, kill: UInt64, state: AppState = .active) -> AppRecord {
        var r = AppLifecycleTests.record()
        r.state = state
        r.endIntent = how
        r.endStartNanos = start
        r.killDeadlineNanos = kill
        return r
    }

    @Test func theRecordCarriesTheIntentUntilTheEnd() {
        var l = AppLifecycleTests.lifecycle(in: .active)
        #expect(l.persistentRecord.endIntent == nil)
        _ = l.handle(.terminate(waiter: nil, timeout: 2 * Self.second), now: 10_000)
        var r = l.persistentRecord
        #expect(r.endIntent == .terminate && r.endStartNanos == 10_000 && r.killDeadlineNanos == 10_000 + 2 * Self.second)
        _ = l.handle(.tick, now: 10_000 + 2 * Self.second)  // SIGKILL sent
        #expect(l.persistentRecord.killDeadlineNanos! <= 10_000 + 2 * Self.second, "killed again at once by a successor")
        _ = l.handle(.exited(.signaled(SIGKILL)), now: 20_000 + 2 * Self.second)
        #expect(l.persistentRecord.endIntent == .terminate, "still, while its leftovers are killed")
        _ = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 30_000 + 2 * Self.second)
        r = l.persistentRecord
        #expect(r.endIntent == nil && r.killDeadlineNanos == nil && r.state == .terminated)
    }

    @Test func anAdoptedTerminateBeforeItsDeadlineIsSignalledAgainAndKilledOnTime() {
        let r = Self.recorded(.terminate, start: 1_000, kill: 1_000 + 2 * Self.second, state: .suspended)
        var l = AppLifecycle(adopting: r, now: 1_000 + Self.second)
        #expect(l.isEnding && l.nextDeadline == 1_000 + 2 * Self.second)
        var fx = l.handle(.resumeEnding(frozen: true), now: 1_000 + Self.second)
        #expect(fx.first.map(\.isLog) == true, "its event before the thaw, which logs its own: \(fx)")
        #expect(fx.filter { !$0.isLog }.prefix(2) == [.thawAside(.forTermination), .signalMembers(SIGTERM)])
        #expect(!fx.contains(.killAll))
        #expect(l.handle(.tick, now: 1_000 + Self.second + 1).isEmpty, "not before the deadline")
        fx = l.handle(.tick, now: 1_000 + 2 * Self.second)
        #expect(fx.contains(.killAll))
        _ = l.handle(.exited(nil), now: 1_000 + 3 * Self.second)
        fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 1_000 + 3 * Self.second)
        #expect(l.state == .terminated && l.record.killedWhileSuspended == false, "exit status unknown: not known to be SIGKILL")
    }

    @Test func anAdoptedTerminatePastItsDeadlineIsKilledAtOnce() {
        var l = AppLifecycle(adopting: Self.recorded(.terminate, start: 1_000, kill: 2_000), now: 5_000)
        let fx = l.handle(.resumeEnding(frozen: false), now: 5_000)
        #expect(fx.last == .killAll && !fx.contains(.signalMembers(SIGTERM)))
        #expect(
            fx.contains { if case .log(let e) = $0 { return e.detail.contains("its SIGKILL deadline has passed") } else { return false } })
    }

    @Test func anAdoptedEvictionIsKilledAtOnceAndRecordedEvicted() {
        var l = AppLifecycle(adopting: Self.recorded(.evict, start: 1_000, kill: 1_000), now: 5_000)
        #expect(l.isEvicting)
        let fx = l.handle(.resumeEnding(frozen: true), now: 5_000)
        #expect(fx.last == .killAll && !fx.contains(.thawAside(.forTermination)))
        _ = l.handle(.exited(nil), now: 6_000)
        _ = l.handle(.cleanedUp(leftovers: 0, problems: []), now: 7_000)
        #expect(l.state == .evicted)
    }

    @Test func resumeEndingOutsideAnEndingDoesNothing() {
        var l = AppLifecycleTests.lifecycle(in: .active)
        #expect(l.handle(.resumeEnding(frozen: true), now: 5_000).isEmpty && l.phase == .active(resumedAt: nil))
    }

    @Test func anAdoptedLaunchKeepsItsReadyDeadline() {
        var r = AppLifecycleTests.record(ready: .notify)
        r.options.readyTimeoutNanos = 10 * Self.second
        r.launchStartNanos = 50 * Self.second
        let l = AppLifecycle(adopting: r, now: 52 * Self.second)
        #expect(l.nextDeadline == 60 * Self.second)
    }
}

/// The lifecycle reads no clock: every timestamp it writes (an event's `time` and
/// `monotonicNanos`, the record's `sinceWall` and `sinceMonotonicNanos`) is the instant of the
/// input that made it. Instants decades in the past make a clock read show at once.
@Suite("AppLifecycle: stamped with the instant it is given")
struct AppLifecycleInstantTests {
    static let second: UInt64 = 1_000_000_000

    static func logged(_ fx: [LifecycleEffect]) -> [Event] {
        fx.compactMap { if case .log(let e) = $0 { return e } else { return nil } }
    }

    @Test func eachTransitionCarriesItsOwnInstant() {
        var l = AppLifecycle(record: AppLifecycleTests.record(ready: .notify), launchStart: 1_000)
        // 1970-01-01T00:00:00Z, 1970-01-01T00:00:01.5Z, 1973-03-03T09:46:40Z: no clock gives these today.
        let ready = Instant(monotonicNanos: 9_000, wallNanos: 0)
        let notice = Instant(monotonicNanos: 10_000, wallNanos: 1_500_000_000)
        let frozen = Instant(monotonicNanos: 130_000, wallNanos: 100_000_000_000_000_000)
        var fx = l.handle(.notify(NotifyMessage.parse("READY=1")), now: ready)
        #expect(Self.logged(fx).map(\.time) == ["1970-01-01T00:00:00.000000Z"])
        #expect(Self.logged(fx).map(\.monotonicNanos) == [9_000])
        #expect(l.record.sinceWall == "1970-01-01T00:00:00.000000Z" && l.record.sinceMonotonicNanos == 9_000)
        #expect(l.record.coldStartNanos == 8_000, "launch at 1 000 → ready at 9 000")

        fx = l.handle(.suspend(waiter: 1, notice: AppLifecycleTests.usr1), now: notice)
        #expect(Self.logged(fx).map(\.time) == ["1970-01-01T00:00:01.500000Z"])
        #expect(l.record.sinceWall == "1970-01-01T00:00:01.500000Z" && l.record.sinceMonotonicNanos == 10_000)
        #expect(l.grace?.start == 10_000 && l.grace?.deadline == 10_000 + 5 * Self.second)

        _ = l.handle(.notify(NotifyMessage.parse("READY=1")), now: Instant(monotonicNanos: 40_000, wallNanos: 7))
        fx = l.handle(.freezeConfirmed(AppLifecycleTests.frozen), now: frozen)
        let freeze = Self.logged(fx).first
        #expect(freeze?.time == "1973-03-03T09:46:40.000000Z" && freeze?.monotonicNanos == 130_000)
        // From the notice (10 000) to the freeze's start (130 000 − its 80 000).
        #expect(freeze?.graceNanos == 40_000)
        #expect(l.record.sinceWall == "1973-03-03T09:46:40.000000Z" && l.record.sinceMonotonicNanos == 130_000)
        #expect(l.persistentRecord.sinceWall == l.record.sinceWall)
    }

    @Test func anEndIsStampedAtItsCleanupAndTimedFromItsRequest() {
        var l = AppLifecycleTests.lifecycle(in: .active)
        _ = l.handle(.terminate(waiter: 3, timeout: Self.second), now: Instant(monotonicNanos: 50_000, wallNanos: 1_000))
        _ = l.handle(.exited(.signaled(SIGTERM)), now: Instant(monotonicNanos: 60_000, wallNanos: 2_000))
        let fx = l.handle(.cleanedUp(leftovers: 0, problems: []), now: Instant(monotonicNanos: 75_000, wallNanos: 86_400_000_000_000))
        let end = Self.logged(fx).last
        #expect(end?.kind == .exit && end?.time == "1970-01-02T00:00:00.000000Z" && end?.monotonicNanos == 75_000)
        #expect(end?.durationNanos == 25_000, "from the terminate (50 000) to the cleanup (75 000)")
        #expect(l.record.sinceWall == "1970-01-02T00:00:00.000000Z" && l.state == .terminated)
    }

    @Test func anAdoptedGraceRunsOnFromItsRecordAndTheInstantGiven() {
        var r = AppLifecycleTests.record()
        r.state = .background
        r.graceStartNanos = nil
        r.graceDeadlineNanos = nil
        let l = AppLifecycle(adopting: r, now: Instant(monotonicNanos: 77, wallNanos: 0))
        #expect(l.grace?.start == 77 && l.nextDeadline == 77, "no recorded grace: over at the instant of adoption")
    }
}

/// How a grace ended and why an app ended are types the lifecycle decides with; the wire
/// keeps the words it has always written (`reason`: "READY=1", "expired", "grace 0";
/// "SIGTERM", "SIGKILL"), and the library reads them back through the same types.
@Suite("AppLifecycle: typed outcomes")
struct AppLifecycleOutcomeTests {
    static let second = AppLifecycleTests.second

    static func logged(_ fx: [LifecycleEffect]) -> [Event] { AppLifecycleInstantTests.logged(fx) }

    /// Suspends an active app with `grace`, ends its grace with `input` at 1 s, confirms the freeze.
    static func freeze(grace: UInt64, ending input: LifecycleInput?) -> (AppLifecycle.Phase, Event?) {
        var l = AppLifecycleTests.lifecycle(in: .active)
        _ = l.handle(.suspend(waiter: 1, notice: AppLifecycleTests.usr1, grace: grace), now: 10_000)
        if let input { _ = l.handle(input, now: Self.second) }
        let freezing = l.phase
        let fx = l.handle(.freezeConfirmed(AppLifecycleTests.frozen), now: 2 * Self.second)
        return (freezing, logged(fx).first { $0.kind == .freeze })
    }

    @Test(arguments: [GraceEnding.ready, .expired, .zero])
    func eachGraceEndingIsTypedAndWrittenAsBefore(_ ending: GraceEnding) {
        let (phase, event): (AppLifecycle.Phase, Event?)
        switch ending {
        case .ready: (phase, event) = Self.freeze(grace: 5 * Self.second, ending: .notify(NotifyMessage.parse("READY=1")))
        case .expired: (phase, event) = Self.freeze(grace: Self.second - 10_000, ending: .tick)
        case .zero: (phase, event) = Self.freeze(grace: 0, ending: nil)
        }
        guard case .freezing(_, let how, nil) = phase else {
            Issue.record("not freezing: \(phase)")
            return
        }
        #expect(how == ending)
        #expect(event?.reason == ["READY=1", "expired", "grace 0"][GraceEnding.allCases.firstIndex(of: ending)!])
        let result = SuspendResult(name: "web", steps: [IceboxClient.Step(line: "", event: event)])
        #expect(result.graceEnd == [.ready, .expired, .zero][GraceEnding.allCases.firstIndex(of: ending)!])
    }

    /// Ends an app `how` and returns the end it was given and the end event.
    static func end(_ steps: [(LifecycleInput, UInt64)], adopted: Bool = false) -> (AppEnd?, Event?) {
        var r = AppLifecycleTests.record()
        r.state = .active
        var l = adopted ? AppLifecycle(adopting: r, now: 1_000) : AppLifecycleTests.lifecycle(in: .active)
        var fx: [LifecycleEffect] = []
        for (input, at) in steps { fx = l.handle(input, now: at) }
        guard case .ended(let end) = l.phase else { return (nil, nil) }
        return (end, logged(fx).last)
    }

    @Test func eachEndIsTypedAndItsReasonWrittenAsBefore() {
        let cleaned = LifecycleInput.cleanedUp(leftovers: 0, problems: [])
        var (end, e) = Self.end([(.exited(.exited(3)), 9_000), (cleaned, 9_000)])
        #expect(end == .exited(.exited(3)) && e?.reason == nil && e?.exitStatus == 3 && e?.to == .exited)

        (end, e) = Self.end([
            (.terminate(waiter: nil, timeout: Self.second), 5_000), (.exited(.signaled(SIGTERM)), 6_000), (cleaned, 7_000),
        ])
        #expect(end == .terminated(.signaled(SIGTERM), by: .sigterm, since: 5_000) && e?.reason == "SIGTERM" && e?.durationNanos == 2_000)

        (end, e) = Self.end([
            (.terminate(waiter: nil, timeout: Self.second), 5_000), (.tick, 5_000 + Self.second),
            (.exited(.signaled(SIGKILL)), 2 * Self.second),
            (cleaned, 2 * Self.second),
        ])
        #expect(end == .terminated(.signaled(SIGKILL), by: .sigkill, since: 5_000) && e?.reason == "SIGKILL")

        (end, e) = Self.end([(.evict(waiter: nil), 5_000), (.exited(nil), 6_000), (cleaned, 6_000)])
        #expect(end == .evicted(.signaled(SIGKILL), since: 5_000) && e?.reason == "SIGKILL" && e?.exitStatus == 137 && e?.kind == .evict)
        #expect(EndResult(name: "web", steps: [IceboxClient.Step(line: "", event: e)]).how == .evicted)

        // Re-adopted, so how it ended is unknown; terminated past its time-out, it was SIGKILLed.
        (end, e) = Self.end(
            [(.terminate(waiter: nil, timeout: 10), 2_000), (.tick, 2_010), (.exited(nil), 3_000), (cleaned, 3_000)], adopted: true)
        #expect(end == .terminated(nil, by: .sigkill, since: 2_000) && e?.reason == "SIGKILL" && e?.exitStatus == nil)
        #expect(EndResult(name: "web", steps: [IceboxClient.Step(line: "", event: e)]).how == .sigkillAfterTimeout)
    }
}

/// A compaction is a fact of one suspension (`Phase.suspended(compacted:)`): the resume that
/// ends it says so, a failed thaw keeps it, and it goes with the phase when the app runs again
/// some other way.
@Suite("AppLifecycle: a compaction belongs to its suspension")
struct CompactionInThePhaseTests {
    static func thawLine(_ fx: [LifecycleEffect]) -> String? {
        fx.compactMap { if case .log(let e) = $0, e.kind == .thaw { return e.detail } else { return nil } }.first
    }

    @Test func theResumeAfterACompactionSaysSoOnceAndAFailedThawKeepsIt() {
        var l = AppLifecycleTests.lifecycle(in: .suspended)
        _ = l.handle(.compacted, now: 3_000)
        #expect(l.phase == .suspended(compacted: true))
        _ = l.handle(.resume(waiter: 1), now: 4_000)
        _ = l.handle(.thawFailed("EBUSY"), now: 5_000)
        #expect(l.phase == .suspended(compacted: true), "still the same suspension")
        _ = l.handle(.resume(waiter: 2), now: 6_000)
        var fx = l.handle(.thawConfirmed(AppLifecycleTests.frozen), now: 7_000)
        #expect(Self.thawLine(fx)?.hasSuffix("; first resume after a compaction") == true)
        _ = l.handle(.suspend(waiter: nil, notice: nil, grace: 0), now: 8_000)
        _ = l.handle(.freezeConfirmed(AppLifecycleTests.frozen), now: 9_000)
        _ = l.handle(.resume(waiter: 3), now: 10_000)
        fx = l.handle(.thawConfirmed(AppLifecycleTests.frozen), now: 11_000)
        #expect(Self.thawLine(fx)?.contains("compaction") == false, "said once")
    }

    @Test func aThawOutsideIceboxEndsTheSuspensionAndItsCompaction() {
        var l = AppLifecycleTests.lifecycle(in: .suspended)
        _ = l.handle(.compacted, now: 3_000)
        _ = l.handle(.thawedOutside(how: "its cgroup.freeze reads 0"), now: 4_000)
        _ = l.handle(.suspend(waiter: nil, notice: nil, grace: 0), now: 5_000)
        _ = l.handle(.freezeConfirmed(AppLifecycleTests.frozen), now: 6_000)
        #expect(l.phase == .suspended(compacted: false), "a new suspension, not compacted")
        _ = l.handle(.resume(waiter: 1), now: 7_000)
        let fx = l.handle(.thawConfirmed(AppLifecycleTests.frozen), now: 8_000)
        #expect(Self.thawLine(fx)?.contains("compaction") == false)
    }
}

/// The hot start (thaw → READY=1) is timed from the thaw that made the app active: the time
/// is the active phase's own (`Phase.active(resumedAt:)`), gone once the app leaves it.
@Suite("AppLifecycle: a hot start belongs to its thaw")
struct HotStartInThePhaseTests {
    @Test func aHotStartIsTimedFromItsThawAndNotFromAnOlderOne() {
        var l = AppLifecycleTests.lifecycle(in: .suspended)
        _ = l.handle(.resume(waiter: nil), now: 10_000)
        _ = l.handle(.thawConfirmed(AppLifecycleTests.frozen), now: 20_000)
        #expect(l.phase == .active(resumedAt: 10_000))
        // Suspended again before its READY=1, and resumed in that grace: no thaw this time.
        _ = l.handle(.suspend(waiter: nil, notice: AppLifecycleTests.usr1), now: 30_000)
        _ = l.handle(.resume(waiter: nil), now: 40_000)
        #expect(l.phase == .active(resumedAt: nil))
        let fx = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 50_000)
        #expect(
            !fx.contains { if case .log(let e) = $0 { return e.kind == .ready } else { return false } },
            "no hot start of a thaw two steps back")
        // A thaw, then READY=1: timed from that thaw's start.
        _ = l.handle(.suspend(waiter: nil, notice: nil, grace: 0), now: 60_000)
        _ = l.handle(.freezeConfirmed(AppLifecycleTests.frozen), now: 70_000)
        _ = l.handle(.resume(waiter: nil), now: 80_000)
        _ = l.handle(.thawConfirmed(AppLifecycleTests.frozen), now: 90_000)
        let ready = AppLifecycleInstantTests.logged(l.handle(.notify(NotifyMessage.parse("READY=1")), now: 95_000)).first
        #expect(ready?.kind == .ready && ready?.durationNanos == 15_000 && ready?.reason == "READY=1")
    }
}
