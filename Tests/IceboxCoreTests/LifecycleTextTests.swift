import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// The lifecycle's words, rendered in one place from typed outcomes: each grace ending and
/// each end renders the line `icebox suspend` / `icebox terminate` print (the CLI tests compare
/// these lines on real apps), and the lifecycle's client lines are these renderings.
@Suite("LifecycleText: the lines, from typed outcomes")
struct LifecycleTextTests {
    static let frozen = FreezeOutcome(backend: .cgroup2, durationNanos: 80_000, tasks: 1)

    @Test func eachGraceEndingRendersItsLine() {
        #expect(
            LifecycleText.frozen(.ready, graceUsedNanos: 5_000_000, extensions: 0, Self.frozen)
                == "grace ended after 5.00 ms (READY=1), frozen in 80.0 µs (cgroup2, 1 process)")
        #expect(
            LifecycleText.frozen(.expired, graceUsedNanos: 4_100_000_000, extensions: 2, Self.frozen)
                == "grace ended after 4.1s (expired, extended 2×), frozen in 80.0 µs (cgroup2, 1 process)")
        #expect(
            LifecycleText.frozen(.zero, graceUsedNanos: 0, extensions: 0, FreezeOutcome(backend: .signal, durationNanos: 212_000, tasks: 3))
                == "no grace (grace 0), frozen in 212 µs (signal, 3 threads)")
        #expect(
            LifecycleText.frozen(
                .expired, graceUsedNanos: 1_000_000_000, extensions: 0, FreezeOutcome(backend: .cgroup1, durationNanos: 999, tasks: 2))
                == "grace ended after 1.0s (expired), frozen in 999 ns (cgroup1, 2 processes)")
    }

    @Test func eachNoticeRendersItsLine() {
        #expect(
            LifecycleText.notice(.signal(SIGUSR1, why: "the app handles it"), graceNanos: 5_000_000_000)
                == "SIGUSR1 sent (the app handles it); grace 5.0s")
        #expect(LifecycleText.notice(.disabled, graceNanos: 0) == "no notice (--background-signal none); grace 0: freezing at once")
        #expect(LifecycleText.notice(.noHandler, graceNanos: 1_500) == "no notice (the app has no SIGUSR1 handler); grace 1.50 µs")
        #expect([NoticeSent.signal(SIGUSR2, why: ""), .disabled, .noHandler].map(\.reason) == ["SIGUSR2", "none", "no-handler"])
    }

    @Test func eachEndRendersItsLine() {
        let how = LifecycleText.how(.signaled(SIGTERM), adopted: false)
        #expect(how == "killed by SIGTERM")
        #expect(
            LifecycleText.ended(
                .terminated(.signaled(SIGTERM), by: .sigterm, since: 0), how: how, tookNanos: 5_000_000, leftovers: 0, startLimitHit: nil,
                problems: []) == "terminated in 5.00 ms; killed by SIGTERM")
        #expect(
            LifecycleText.ended(
                .evicted(.signaled(SIGKILL), since: 0), how: "killed by SIGKILL", tookNanos: 212_000, leftovers: 2, startLimitHit: nil,
                problems: ["rmdir: EBUSY"])
                == "evicted without notice: killed and reaped in 212 µs; killed by SIGKILL; killed 2 remaining processes; cleanup: rmdir: EBUSY"
        )
        #expect(
            LifecycleText.ended(
                .exited(.exited(0)), how: LifecycleText.how(.exited(0), adopted: false), tookNanos: 60_000_000_000, leftovers: 1,
                startLimitHit: "start limit hit: 5 restarts in 10s", problems: [])
                == "exited with status 0 after 1m00s; killed 1 remaining process; start limit hit: 5 restarts in 10s, not restarted")
        #expect(LifecycleText.how(nil, adopted: true) == "exited (status unknown: adopted, icebox is not its parent)")
        #expect(LifecycleText.how(nil, adopted: false) == "ended (exit status unknown: re-adopted after a daemon restart)")
    }

    @Test func stepsAndFailuresRenderTheirLines() {
        #expect(LifecycleText.step("web", from: .background, to: .suspended, "x") == "web  background → suspended  x")
        #expect(LifecycleText.nothingToDo("web", already: .suspended) == "web  already suspended (nothing to do)")
        #expect(
            LifecycleText.failure("web", .endedBeforeFrozen(how: "killed by SIGKILL"))
                == "icebox: web ended before it was frozen: killed by SIGKILL")
        #expect(LifecycleText.failure("web", .freezeFailed("not frozen after 10s")) == "icebox: web: freeze failed: not frozen after 10s")
        #expect(LifecycleText.failure("web", .beingStopped(suspending: true)) == "icebox: web is being stopped; not suspending it")
        #expect(
            LifecycleText.thawed(
                FreezeOutcome(backend: .cgroup2, durationNanos: 12_340, tasks: 1), foreground: SIGUSR2, afterCompaction: true)
                == "thawed in 12.3 µs (cgroup2); SIGUSR2 sent; first resume after a compaction")
        #expect(
            LifecycleText.resumedDuringGrace(foreground: nil) == (
                "resumed during its grace period", "resumed during its grace period; not frozen"
            ))
    }

    /// The lifecycle's client lines are the renderer's, from the outcome it decided: a suspend
    /// ended by READY=1 says so, and the result the library builds from its steps says the same.
    @Test func theLifecycleSpeaksThroughTheRenderer() {
        var l = AppLifecycleTests.lifecycle(in: .active)
        var fx = l.handle(.suspend(waiter: 1, notice: AppLifecycleTests.usr1), now: 10_000)
        _ = l.handle(.notify(NotifyMessage.parse("READY=1")), now: 5_000_000)
        let notice = fx.compactMap {
            if case .report(1, let line, false, let e?) = $0 { return IceboxClient.Step(line: line, event: e) } else { return nil }
        }
        fx = l.handle(.freezeConfirmed(Self.frozen), now: 5_090_000)
        let freeze = fx.compactMap {
            if case .settle(1, let line?, false, let e?) = $0 { return IceboxClient.Step(line: line, event: e) } else { return nil }
        }
        #expect(
            notice.map(\.line) == [
                LifecycleText.step(
                    "web", from: .active, to: .background,
                    LifecycleText.notice(.signal(SIGUSR1, why: "the app handles it"), graceNanos: 5_000_000_000))
            ])
        #expect(
            freeze.map(\.line) == [
                LifecycleText.step(
                    "web", from: .background, to: .suspended,
                    LifecycleText.frozen(.ready, graceUsedNanos: 5_000_000, extensions: 0, Self.frozen))
            ])
        let result = SuspendResult(name: "web", steps: notice + freeze)
        #expect(result.graceEnd == .ready && result.graceUsed == .milliseconds(5) && result.notice == .signal(SIGUSR1))
        #expect(
            result.description
                == "web  active → background  SIGUSR1 sent (the app handles it); grace 5.0s\nweb  background → suspended  grace ended after 5.00 ms (READY=1), frozen in 80.0 µs (cgroup2, 1 process)"
        )
    }
}
