import Foundation
import IceboxCore
import Testing

/// The async API: in an `async` test the same calls are awaited, and a suspend that waits
/// out a grace holds no thread another task needs.
@Suite(
    .serialized,
    .enabled(if: Host.problem == nil, "\(Host.problem ?? "")"),
    .timeLimit(.minutes(1))
)
struct AsyncTests {
    @Test("two apps suspended concurrently, each through its grace, while the test goes on")
    func concurrentSuspends() async throws {
        try await Supervisor.with { supervisor in
            var cgroups: [String] = []
            for name in ["a", "b"] {
                var options = LaunchOptions(name: name, command: ["sleep", "100"])
                options.grace = .seconds(1)
                cgroups.append(try #require(try await supervisor.launch(options).cgroup))
            }
            async let a = supervisor.suspend("a")
            async let b = supervisor.suspend("b")
            let results = try await [a, b]
            #expect(results.map(\.graceEnd) == [.expired, .expired])
            for cgroup in cgroups { #expect(Kernel.events(of: cgroup)["frozen"] == "1") }

            let resumed = try await supervisor.resume("a")
            #expect(resumed.how == .thawed && Kernel.events(of: cgroups[0])["frozen"] == "0")
        }
    }

    @Test("a cancelled suspend returns at once; the app is then in its grace or frozen, as the kernel shows")
    func cancellation() async throws {
        try await Supervisor.with { supervisor in
            var options = LaunchOptions(name: "nap", command: ["sleep", "100"])
            options.grace = .seconds(2)
            let cgroup = try #require(try await supervisor.launch(options).cgroup)
            let events = try supervisor.events(for: "nap")
            let suspend = Task { try await supervisor.suspend("nap") }
            for await event in events where event.kind == .notice { break }
            suspend.cancel()
            await #expect(throws: IceboxError.self) { try await suspend.value }
            // The daemon finishes what it began: the state and the kernel agree.
            let state = try await supervisor.state(of: "nap")
            #expect(state == .background || state == .suspended)
            #expect(Kernel.events(of: cgroup)["frozen"] == (state == .suspended ? "1" : "0"))
        }
    }
}
