import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// A checkpoint's or restore's program past its deadline is killed without the loop waiting
/// for it: `CriuRun.kill` sends SIGKILL and moves the deadline, and the end comes through the
/// pidfd the loop watches. A task in a frozen v1 freezer cgroup dies of SIGKILL only once
/// thawed: the case where the old kill held the loop for its whole 2 s.
@Suite(
    .enabled(
        if: Sandbox.writableMounts.freezerV1 != nil,
        "needs a writable v1 freezer hierarchy (a frozen v1 task outlives SIGKILL until thawed)"))
struct CriuRunKillTests {
    @Test("a kill returns at once, says why and moves the deadline; the run ends through its pidfd once the kernel lets it")
    func killDoesNotWait() throws {
        let box = Sandbox("criu-kill")
        defer { box.close() }
        let freezer = try #require(box.freezerRoot) + "/run"
        try FileIO.makeDirectories(freezer)
        let run = try CriuRun.start("/bin/sleep", ["100"], output: box.dir + "/sleep.out", timeoutNanos: 0)
        defer { _ = try? run.handle.send(SIGKILL) }
        try FileIO.write(freezer + "/cgroup.procs", "\(run.pid)")
        try FileIO.write(freezer + "/freezer.state", "FROZEN")
        #expect(Scenario.eventually(seconds: 5) { Kernel.frozen(freezer) }, "the v1 freezer never said FROZEN")

        let before = Clock.monotonicNanos()
        run.kill(because: "past its deadline", now: before)
        let took = Clock.monotonicNanos() - before
        #expect(took < 1_000_000_000, "kill waited \(DurationText.format(took)) for a task that cannot die yet")
        #expect(run.killedBecause == "past its deadline")
        #expect(run.deadline == before + CriuRun.killWaitNanos)
        #expect(run.ended() == nil, "a frozen v1 task died of SIGKILL before its thaw")

        try FileIO.write(freezer + "/freezer.state", "THAWED")
        let ready = try Poll.wait(run.handle.pidfd, events: Int16(POLLIN), timeoutNanos: 5_000_000_000)
        #expect(ready & Int16(POLLIN) != 0, "no end through the pidfd within 5 s of the thaw")
        #expect(run.ended() == .signaled(SIGKILL))
    }
}
