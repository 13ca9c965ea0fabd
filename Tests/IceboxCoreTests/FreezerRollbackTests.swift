import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A freeze that misses its deadline is rolled back and names the tasks that did not freeze:
/// never left half-frozen. Real processes, real cgroups.
@Suite(.enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"), .timeLimit(.minutes(5)))
struct FreezerRollbackTests {
    @Test("SIGSTOP cannot stop a kernel thread: time-out, rolled back, the thread named")
    func signalTimeout() throws {
        // kthreadd (pid 2) ignores SIGSTOP, so the freeze can never be confirmed.
        let freezer = SignalFreezer { [2] }
        #expect {
            _ = try freezer.freeze(deadline: Clock.monotonicNanos() + 50_000_000)
        } throws: { error in
            guard case .timeout(let t) = error as? FreezeFailure else { return false }
            return t.stuck.contains { $0.pid == 2 } && t.description.contains("rolled back")
        }
    }

    @Test("a cgroup2 freeze past its deadline is rolled back: cgroup.freeze reads 0 again")
    func cgroup2Rollback() throws {
        let root = CgroupMounts.read().unified! + "/icebox-test-rollback-\(getpid())"
        let cg = Cgroup2(path: root)
        try cg.create()
        defer {
            try? cg.kill(); _ = try? cg.waitForEvents(until: Clock.monotonicNanos() + 5_000_000_000) { !$0.populated }; try? cg.remove()
        }
        // Many busy threads take a while to freeze; a deadline already passed cannot be met.
        var req = SpawnRequest(
            executable: "/usr/bin/env",
            arguments: [
                "env", "python3", "-c",
                "import threading\nfor _ in range(200): threading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()",
            ],
            environment: ["PATH=/usr/local/bin:/usr/bin:/bin"])
        req.cgroupDirFD = try cg.openDirectory()
        defer { close(req.cgroupDirFD) }
        let child = try Spawner.spawn(req)
        defer {
            try? cg.setFrozen(false)
            try? cg.kill()
            _ = try? child.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)  // reaped: no zombie
        }
        let freezer = Cgroup2Freezer(cgroup: cg)
        do {
            _ = try freezer.freeze(deadline: Clock.monotonicNanos())
            // The kernel was quicker than one read: then it must really be frozen.
            #expect(try cg.events().frozen)
            _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
        } catch {
            guard case .timeout? = error as? FreezeFailure else { Issue.record("unexpected \(error)"); return }
            #expect(!freezer.freezeStarted(), "cgroup.freeze must read 0 after a rollback")
            #expect(try !cg.events().frozen)
        }
    }
}

extension Cgroup2 {
    /// cgroup.events, read by path (the freezer reads its kept descriptor).
    fileprivate func events() throws(SystemError) -> CgroupEvents { CgroupEvents.parse(try FileIO.read(file("cgroup.events"))) }
}
