import Glibc
import IceboxCore
import IceboxSystem
import Synchronization
import Testing

/// The `async` forms: a suspend waiting out a grace holds no thread of the cooperative pool,
/// and a cancelled one returns at once, the app left in a state the kernel agrees with.
@Suite("Supervisor: async calls", .serialized)
struct SupervisorAsyncTests {
    @Test("three async suspends waiting out a 3 s grace each do not stop another task from making progress")
    func suspendsDoNotBlockThePool() async throws {
        try await Supervisor.with { supervisor in
            var cgroups: [String] = []
            for i in 0..<3 {
                let app = try await supervisor.launch(LaunchOptions(name: "nap\(i)", command: ["sleep", "100"]))
                cgroups.append(try #require(app.cgroup))
            }
            // More suspends than the pool has threads (one a CPU): were they blocking its
            // threads, the counter below would not move until the graces ended.
            let finished = Finished()
            let progressBeforeAnyEnded = try await withThrowingTaskGroup(of: Int?.self) { group in
                for i in 0..<3 {
                    group.addTask {
                        _ = try await supervisor.suspend("nap\(i)", grace: .seconds(3))
                        finished.count.add(1, ordering: .sequentiallyConsistent)
                        return nil
                    }
                }
                group.addTask {
                    var steps = 0
                    while finished.count.load(ordering: .sequentiallyConsistent) == 0 {
                        steps += 1
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    return steps
                }
                var steps = 0
                for try await value in group { if let value { steps = value } }
                return steps
            }
            #expect(progressBeforeAnyEnded >= 20, "the other task ran \(progressBeforeAnyEnded) steps during the graces")
            for cgroup in cgroups { #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1") }
        }
    }

    @Test("a cancelled suspend returns promptly; the daemon finishes it, and the kernel agrees with the state")
    func cancelledSuspend() async throws {
        try await Supervisor.with { supervisor in
            let app = try await supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
            let cgroup = try #require(app.cgroup)
            let events = try supervisor.events(for: "nap")
            let task = Task { try await supervisor.suspend("nap", grace: .seconds(3)) }
            // Cancelled once the notice is out (the daemon is in the grace, the call waiting).
            for await event in events where event.kind == .notice { break }
            let clock = ContinuousClock()
            let start = clock.now
            task.cancel()
            let outcome = await task.result
            let took = clock.now - start
            #expect(took < .seconds(1), "returned \(took) after the cancel, not at the grace's end")
            #expect(throws: IceboxError.self) { try outcome.get() }
            if case .failure(let error as IceboxError) = outcome { #expect(error.message.contains("may or may not have been done")) }
            // The suspend goes on in the daemon: background now, suspended once the grace ends.
            #expect(try await supervisor.state(of: "nap") == .background)
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0", "not frozen during the grace")
            #expect(Kernel.waitUntil(seconds: 10) { (try? supervisor.state(of: "nap")) == .suspended })
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1", "the kernel says frozen, as the state does")
            let resumed = try await supervisor.resume("nap")
            #expect(resumed.how == .thawed && Kernel.cgroupEvents(cgroup)["frozen"] == "0")
        }
    }

    @Test("a task cancelled before its call connects throws at once and sends nothing")
    func cancelledBeforehand() async throws {
        try await Supervisor.with { supervisor in
            _ = try await supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await supervisor.suspend("nap", grace: .zero)
            }
            await #expect(throws: IceboxError.self) { try await task.value }
            let state = try await supervisor.state(of: "nap")
            #expect(state == .active)
        }
    }
}

/// How many suspends have returned, shared with the task that watches for the first.
private final class Finished: Sendable {
    let count = Atomic<Int>(0)
}
