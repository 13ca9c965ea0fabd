import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Synchronization
import Testing

/// The `async` forms: a suspend waiting out a grace holds no thread of the cooperative pool,
/// and a cancelled one returns at once, the app left in a state the kernel agrees with.
@Suite(
    "Supervisor: async calls", .serialized,
    .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"))
struct SupervisorAsyncTests {
    /// More suspends at once than the cooperative pool has threads (one a CPU), each waiting
    /// out a 10 s grace (the apps never answer their notice): had each held a pool thread,
    /// the ones past the pool's width could only begin when one of the first ended, 10 s
    /// later. The daemon's notice events say when each began. (Counting another task's
    /// progress instead measured the rest of the test run: its synchronous tests hold the
    /// pool's threads for seconds at a time.)
    @Test("more async suspends than the pool has threads are all under way at once")
    func suspendsDoNotBlockThePool() async throws {
        try await Supervisor.with { supervisor in
            let count = ProcessInfo.processInfo.activeProcessorCount + 2
            var cgroups: [String] = []
            for i in 0..<count {
                let app = try await supervisor.launch(LaunchOptions(name: "nap\(i)", command: ["sleep", "100000"]))
                cgroups.append(try #require(app.cgroup))
            }
            let results = try await withThrowingTaskGroup(of: SuspendResult.self) { group in
                for i in 0..<count { group.addTask { try await supervisor.suspend("nap\(i)", grace: .seconds(10)) } }
                var results: [SuspendResult] = []
                for try await result in group { results.append(result) }
                return results
            }
            let notices = results.compactMap { $0.events.first { $0.kind == .notice }?.monotonicNanos }
            try #require(notices.count == count, "\(results)")
            let spread = Double(notices.max()! - notices.min()!) / 1e9
            #expect(spread < 5, "the notices went out over \(spread) s: the suspends did not all begin together")
            for result in results { #expect(result.graceEnd == .expired, "\(result)") }
            for cgroup in cgroups { #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1") }
        }
    }

    @Test("a cancelled suspend returns promptly; the daemon finishes it, and the kernel agrees with the state")
    func cancelledSuspend() async throws {
        try await Supervisor.with { supervisor in
            let app = try await supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
            let cgroup = try #require(app.cgroup)
            let events = try supervisor.events(for: "nap")
            let task = Task { try await supervisor.suspend("nap", grace: .seconds(20)) }
            // Cancelled once the notice is out (the daemon is in the grace, the call waiting).
            for await event in events where event.kind == .notice { break }
            let clock = ContinuousClock()
            let start = clock.now
            task.cancel()
            let outcome = await task.result
            let took = clock.now - start
            // Well before the grace's end (20 s), though not at once on a loaded run: the
            // awaiting task needs a thread of the pool the other tests share.
            #expect(took < .seconds(10), "returned \(took) after the cancel, not at the grace's end")
            #expect(throws: IceboxError.self) { try outcome.get() }
            if case .failure(let error as IceboxError) = outcome { #expect(error.message.contains("may or may not have been done")) }
            // The suspend goes on in the daemon: the app is in its grace, not frozen; a resume
            // ends the grace, and the kernel agrees with every state.
            #expect(try await supervisor.state(of: "nap") == .background)
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0", "not frozen during the grace")
            let resumed = try await supervisor.resume("nap")
            #expect(resumed.how == .resumedDuringGrace, "\(resumed)")
            #expect(try await supervisor.state(of: "nap") == .active)
            #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0")
        }
    }

    @Test("a task cancelled before its call connects throws at once and sends nothing")
    func cancelledBeforehand() async throws {
        try await Supervisor.with { supervisor in
            _ = try await supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
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
