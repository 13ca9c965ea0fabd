import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The SIGSTOP backend confirms a freeze one process after another. One seen stopped early
/// can be continued by one stopped later (processes that SIGCONT each other): the freeze
/// must not be confirmed then. Real processes and real signals, stepped by hand so that the
/// order of events is the test's, not the scheduler's.
@Suite(.timeLimit(.minutes(5)))
struct SignalFreezeConfirmationTests {
    /// Waits (up to 5 s) until `pid`'s state, as the kernel tells it, satisfies `test`.
    static func wait(_ pid: pid_t, until test: (Character) -> Bool) -> Bool {
        let deadline = Clock.monotonicNanos() + 5_000_000_000
        while Clock.monotonicNanos() < deadline {
            if let state = ProcFS.state(pid: pid), test(state) { return true }
            usleep(1_000)
        }
        return false
    }

    static func stopped(_ c: Character) -> Bool { c == "T" }

    @Test("a process seen stopped, then continued by another before the last was stopped: not confirmed, stopped again")
    func continuedAfterSeenStopped() throws {
        let a = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: []))
        let b = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: []))
        let pids = [a.handle.pid, b.handle.pid]
        defer {
            for p in [a, b] {
                kill(p.handle.pid, SIGKILL)
                _ = try? p.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
            }
        }
        var steps = SignalFreezeSteps(members: { pids })
        let start = Clock.monotonicNanos(), deadline = start + 30_000_000_000
        steps.begin(with: pids)  // SIGSTOP to both
        try #require(pids.allSatisfy { Self.wait($0, until: Self.stopped) })
        // b is continued (by someone) before the first look: a is seen stopped, b running.
        kill(pids[1], SIGCONT)
        try #require(Self.wait(pids[1]) { !Self.stopped($0) })
        guard case .waiting = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline) else {
            Issue.record("confirmed with b running")
            return
        }
        // b stops; meanwhile a, seen stopped already, was continued by a peer.
        kill(pids[1], SIGSTOP)
        kill(pids[0], SIGCONT)
        try #require(Self.wait(pids[1], until: Self.stopped))
        try #require(Self.wait(pids[0]) { !Self.stopped($0) })
        let second = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline)
        if case .confirmed = second { Issue.record("confirmed while a runs: \(ProcFS.state(pid: pids[0]) ?? "?")") }
        // The next step stops a again; once the kernel says it is stopped, the freeze is confirmed.
        _ = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline)
        #expect(Self.wait(pids[0], until: Self.stopped), "a was not stopped again")
        var confirmed = false
        for _ in 0..<100 where !confirmed {
            if case .confirmed(let report) = steps.step(now: Clock.monotonicNanos(), startedAt: start, deadline: deadline) {
                confirmed = true
                #expect(report.tasks == 2)
            }
        }
        #expect(confirmed)
        #expect(pids.allSatisfy { ProcFS.state(pid: $0) == "T" }, "both stopped when confirmed")
    }
}
