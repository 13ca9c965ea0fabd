import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A cgroup2 freeze told that the kernel's notification will be prompt (cgroup.events unchanged
/// for longer than the kernel's rate limit) re-reads only as a safety net, and the kernel's
/// notification confirms it, as the daemon now relies on. How soon it comes is a speed figure
/// (benchmarks/RESULTS.md), not checked here. Real processes, real cgroups.
@Suite(.enabled(if: CgroupTestRoots.hasV2, "needs root and cgroup2"), .timeLimit(.minutes(1)))
struct PromptNotificationTests {
    @Test("after a quiet spell, the safety re-read waits 1 ms and the kernel's notification confirms the freeze")
    func quietFreezeIsConfirmedByTheNotification() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try AppCgroups.create(name: "app", v2Root: roots.v2, freezerV1Root: nil, memoryV1Root: nil, backend: .cgroup2)
        let child = try CgroupChild(["exec sleep 1000"], in: cgroups)
        defer { withExtendedLifetime(child) {} }  // killed and reaped (deinit) when the test ends
        let freezer = Cgroup2Freezer(cgroup: Cgroup2(path: try #require(cgroups.v2Path)))
        // Up to four tries: a freeze the kernel finishes before the first read has nothing to
        // wait for.
        var waited = 0
        for _ in 0..<4 where waited == 0 {
            // The quiet spell: the last change (the spawn, or the last try's thaw, whose own
            // notification may have been held back up to 16 ms) ended 30 ms ago.
            usleep(30_000)
            let deadline = Clock.monotonicNanos() + 5_000_000_000
            var op = freezer.beginFreeze(now: Clock.monotonicNanos(), deadline: deadline)
            op.expectPromptNotification()
            let firstLook = Clock.monotonicNanos()
            if case .waiting(let recheckAt, let watch) = op.step(now: firstLook) {
                waited += 1
                #expect(recheckAt >= firstLook + Backoff.safetyNet, "the re-read is only a safety net")
                let fd = try #require(watch, "a cgroup2 freeze waits on cgroup.events")
                // The first look re-armed the notification: POLLPRI now means a change since.
                let revents = FileIO.poll(fd: fd, events: Int16(POLLPRI), timeoutNanos: 2_000_000_000)
                #expect(revents & Int16(POLLPRI) != 0, "the kernel announced the freeze")
                guard case .confirmed = op.step(now: Clock.monotonicNanos()) else {
                    Issue.record("not confirmed after the kernel's notification")
                    return
                }
            }
            _ = try op.wait()
            _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
        }
        #expect(waited == 1, "every freeze was done before the first read")
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
