import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A cgroup2 freeze told that the kernel's notification will be prompt (cgroup.events unchanged
/// for longer than the kernel's rate limit) re-reads only as a safety net, and it is the
/// kernel's notification that confirms it, as the daemon now relies on. Real processes, real
/// cgroups.
@Suite(.enabled(if: getuid() == 0 && CgroupMounts.read().unified != nil, "needs root and cgroup2"), .timeLimit(.minutes(1)))
struct PromptNotificationTests {
    @Test("after a quiet spell, the kernel's notification confirms a freeze before the safety re-read")
    func quietFreezeIsConfirmedByTheNotification() throws {
        let cg = Cgroup2(path: CgroupMounts.read().unified! + "/icebox-test-prompt-\(getpid())")
        try cg.create()
        defer {
            try? cg.setFrozen(false)
            try? cg.kill()
            _ = try? cg.waitForEvents(until: Clock.monotonicNanos() + 5_000_000_000) { !$0.populated }
            try? cg.remove()
        }
        var req = SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "1000"], environment: [])
        req.cgroupDirFD = try cg.openDirectory()
        defer { close(req.cgroupDirFD) }
        let child = try Spawner.spawn(req)
        defer {
            try? cg.setFrozen(false)
            try? cg.kill()
            _ = try? child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)  // reaped: no zombie
        }
        let freezer = Cgroup2Freezer(cgroup: cg)
        // Four tries: a freeze the kernel finishes before the first read has nothing to wait
        // for, and a wake-up held up by other tests' load may miss the 1 ms.
        var confirmedByNotification = 0
        for _ in 0..<4 {
            // The quiet spell: the last change (the spawn, or the last try's thaw, whose own
            // notification may have been held back up to 10 ms) ended 30 ms ago.
            usleep(30_000)
            let deadline = Clock.monotonicNanos() + 5_000_000_000
            var op = freezer.beginFreeze(now: Clock.monotonicNanos(), deadline: deadline)
            op.expectPromptNotification()
            let firstLook = Clock.monotonicNanos()
            switch op.step(now: firstLook) {
            case .confirmed:
                break
            case .failed(let failure):
                Issue.record("the freeze failed: \(failure)")
            case .waiting(let recheckAt, let watch):
                #expect(recheckAt >= firstLook + Backoff.safetyNet, "the re-read is only a safety net")
                guard let watch else {
                    Issue.record("a cgroup2 freeze waits on cgroup.events")
                    break
                }
                let now = Clock.monotonicNanos()
                let revents = FileIO.poll(fd: watch, events: Int16(POLLPRI), timeoutNanos: recheckAt.saturatingSub(now))
                if revents & Int16(POLLPRI) != 0, case .confirmed = op.step(now: Clock.monotonicNanos()) {
                    confirmedByNotification += 1
                }
            }
            _ = try op.wait()
            _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
        }
        #expect(confirmedByNotification >= 1, "no freeze of the four was announced by the kernel within the safety re-read")
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
