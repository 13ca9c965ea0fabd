import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A cgroup2 freeze told that the kernel's notification will be prompt (cgroup.events unchanged
/// for longer than the kernel's rate limit) re-reads only as a safety net, and the kernel's
/// notification confirms it, as the daemon now relies on. How soon it comes is a speed figure
/// (benchmarks/RESULTS.md), not checked here. Real processes, real cgroups.
@Suite(.enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"), .timeLimit(.minutes(5)))
struct PromptNotificationTests {
    @Test(
        "after a quiet spell, the safety re-read waits 1 ms and the kernel's notification confirms the freeze",
        .enabled(
            if: CgroupTestRoots.hasMemoryV1 && ScriptChild.available,
            "needs a cgroup v1 memory hierarchy (its OOM wait holds a task unfrozen) and python3"))
    func quietFreezeIsConfirmedByTheNotification() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try AppCgroups.create(name: "app", v2Root: roots.v2, freezerV1Root: nil, memoryV1Root: nil, backend: .cgroup2)
        // The task waits in the memory cgroup's OOM wait (state D), where no freezer reaches
        // it: the freeze is still under way at the first look, however late a loaded machine
        // makes that look (an idle task froze before it in every try of a CI run), and it
        // ends when the test lifts the limit.
        let (child, trap) = try roots.childInOOMWait(in: cgroups)
        defer { withExtendedLifetime(child) {} }  // killed and reaped (deinit) when the test ends
        let freezer = Cgroup2Freezer(cgroup: Cgroup2(path: try #require(cgroups.v2Path)))
        var waited = false
        for _ in 0..<4 where !waited {
            try #require(
                eventually { CgroupTestRoots.waitsInOOM(child, trap: trap) }, "the child never got stuck in the OOM wait (D state)")
            // The quiet spell: the last change (the spawn, or the last try's thaw, whose own
            // notification may have been held back up to 16 ms) ended 30 ms ago.
            usleep(30_000)
            let deadline = Clock.monotonicNanos() + 5_000_000_000
            var op = freezer.beginFreeze(now: Clock.monotonicNanos(), deadline: deadline)
            op.expectPromptNotification()
            let firstLook = Clock.monotonicNanos()
            guard case .waiting(let recheckAt, let watch) = op.step(now: firstLook) else {
                // The OOM wait can end on its own (memory uncharged elsewhere in the trap wakes
                // the waiter, which passes the freezer's trap on its way): thaw, let it fall
                // back into the wait, and try again.
                _ = try op.wait()
                _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
                continue
            }
            waited = true
            #expect(recheckAt >= firstLook + Backoff.safetyNet, "the re-read is only a safety net")
            let fd = try #require(watch, "a cgroup2 freeze waits on cgroup.events")
            // Let the task go: it freezes on its way back to user space. The first look
            // re-armed the notification, so POLLPRI now means a change since.
            try FileIO.write(trap + "/memory.limit_in_bytes", "-1")
            let revents = try Poll.wait(fd, events: Int16(POLLPRI), timeoutNanos: 5_000_000_000)
            #expect(revents & Int16(POLLPRI) != 0, "the kernel announced the freeze")
            guard case .confirmed = op.step(now: Clock.monotonicNanos()) else {
                Issue.record("not confirmed after the kernel's notification")
                return
            }
            _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
        }
        #expect(waited, "the task left the OOM wait on its own in every try")
    }

    @Test("a raised floor spaces the re-reads; the schedule's other terms stay")
    func raisedFloor() {
        var b = Backoff(cap: 10_000_000)
        b.raiseFloor(to: Backoff.safetyNet)
        let start: UInt64 = 1_000_000_000
        #expect(b.next(now: start, deadline: .max) == start + 1_000_000)
        #expect(b.next(now: start + 40_000_000, deadline: .max) == start + 42_000_000, "5% of 40 ms is more than 1 ms")
        #expect(b.next(now: start + 50_000_000, deadline: .max, lookCost: 1_000_000) == start + 54_000_000, "4x the look")
        var again = Backoff(cap: 10_000_000)
        again.raiseFloor(to: Backoff.safetyNet)
        again.raiseFloor(to: Backoff.reread)
        #expect(again.next(now: start, deadline: .max) == start + 1_000_000, "a floor is never lowered")
    }
}
