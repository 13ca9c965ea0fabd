import Glibc
import IceboxSystem
import Testing

@testable import IceboxCore

/// `apply` never nests: the inputs effects produce wait in a queue, taken in the order they
/// came once the effects before them are done; and a daemon driven through a path that
/// produces one (a freeze refused because the main process left its cgroup) performs no
/// effect inside another.
struct LifecycleInputQueueTests {
    @Test("one drain at a time; what comes meanwhile is taken first in, first out, and the storage is reused")
    func firstInFirstOut() throws {
        let a = try AppDeadlinesTests.app("a"), b = try AppDeadlinesTests.app("b")
        var queue = LifecycleInputQueue()
        let nothing = queue.take()
        #expect(nothing == nil, "nothing queued")
        let drains = queue.beginDraining(), again = queue.beginDraining()
        #expect(drains && queue.isDraining)
        #expect(!again, "an apply while another drains only enqueues")
        queue.enqueue(.init(app: a, input: .tick, now: nil, settlingWatch: false))
        queue.enqueue(.init(app: b, input: .ready, now: nil, settlingWatch: true))
        let first = queue.take()
        // Queued while the first is taken (its effects produced it): after the ones before it.
        queue.enqueue(.init(app: a, input: .compacted, now: nil, settlingWatch: false))
        let second = queue.take(), third = queue.take(), end = queue.take()
        #expect(first?.app === a && first?.input == .tick && first?.settlingWatch == false)
        #expect(second?.app === b && second?.input == .ready && second?.settlingWatch == true)
        #expect(third?.app === a && third?.input == .compacted)
        #expect(end == nil)
        #expect(!queue.isDraining, "an empty queue ends the drain")
        let next = queue.beginDraining()
        #expect(next, "the next apply drains again")
        queue.enqueue(.init(app: b, input: .tick, now: nil, settlingWatch: false))
        let only = queue.take(), after = queue.take()
        #expect(only?.app === b && after == nil, "nothing left over from the last drain")
    }

    @Test("performing inside performing is counted")
    func nestingIsCounted() {
        var queue = LifecycleInputQueue()
        let before = LifecycleInputQueue.nestedPerforms.load(ordering: .relaxed)
        queue.beginPerforming()
        queue.endPerforming()
        queue.beginPerforming()
        #expect(LifecycleInputQueue.nestedPerforms.load(ordering: .relaxed) == before)
        queue.beginPerforming()
        #expect(LifecycleInputQueue.nestedPerforms.load(ordering: .relaxed) == before + 1)
        queue.endPerforming()
        // Taken back, so that the daemon test below sees only daemons' nestings.
        LifecycleInputQueue.nestedPerforms.subtract(1, ordering: .relaxed)
    }
}

/// The daemon end to end: an input produced by an effect is queued, and no effect runs inside
/// another, checked on a real process moved out of its cgroup.
@Suite(
    .serialized, .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"),
    .timeLimit(.minutes(5)))
struct DaemonApplyNestingTests {
    @Test("a freeze refused inside the suspend's effects (main process moved out) is queued, and nothing nests")
    func leftCgroupIsQueued() async throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let root = try #require(supervisor.cgroupRoot, "\(supervisor.cgroupProblem ?? "")")
        let app = try await supervisor.launch(LaunchOptions(name: "mover", command: ["sleep", "100000"]))
        let cgroup = try #require(app.cgroup)
        // Somewhere else under the same root (removed before the supervisor's stop removes the root).
        let elsewhere = root + "/elsewhere-\(getpid())"
        try FileIO.makeDirectories(elsewhere)
        defer {
            kill(app.pid, SIGKILL)
            _ = Kernel.waitUntil(seconds: 5) { Kernel.cgroupProcs(elsewhere).isEmpty }
            rmdir(elsewhere)
        }
        try FileIO.write(elsewhere + "/cgroup.procs", "\(app.pid)\n")
        #expect(Kernel.cgroupProcs(elsewhere) == [app.pid])

        let deferredBefore = LifecycleInputQueue.deferredInputs.load(ordering: .relaxed)
        // The freeze effect finds the main process outside and feeds `.leftCgroup`: once
        // nested in the suspend's apply, now queued behind it.
        await #expect(throws: IceboxError.self) { try await supervisor.suspend("mover", grace: .zero) }
        #expect(LifecycleInputQueue.deferredInputs.load(ordering: .relaxed) > deferredBefore)
        #expect(LifecycleInputQueue.nestedPerforms.load(ordering: .relaxed) == 0, "an effect was performed inside another")
        // The kernel: nothing froze, and the process runs where it was moved.
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0")
        #expect(Kernel.cgroupEvents(elsewhere)["frozen"] == "0")
        #expect(Kernel.processState(app.pid).map { $0 != "T" && $0 != "Z" } == true)
        #expect(try await supervisor.state(of: "mover") == .active)

        try await supervisor.terminate("mover", timeout: .seconds(5))
        #expect(Kernel.waitUntil(seconds: 5) { Kernel.gone(app.pid) }, "ended through its pidfd, wherever it is")
        #expect(LifecycleInputQueue.nestedPerforms.load(ordering: .relaxed) == 0, "an effect was performed inside another")
    }
}
