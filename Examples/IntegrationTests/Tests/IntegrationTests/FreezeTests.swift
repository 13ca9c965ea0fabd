import Foundation
import IceboxCore
import Testing

/// A real app, launched through icebox as a library, suspended, resumed and evicted, with
/// every step checked against what the kernel says rather than what icebox reports.
///
/// The Supervisor runs icebox's engine inside this test process: no icebox executable is
/// involved, and the first test makes sure none could be found on PATH.
@Suite(
    .serialized,
    .enabled(if: Host.problem == nil, "\(Host.problem ?? "")"),
    .timeLimit(.minutes(1))
)
struct FreezeTests {
    init() {
        Host.removeIceboxFromPath()
    }

    @Test("sleep: frozen 1 while suspended, frozen 0 and running after a resume, gone after an eviction")
    func sleepThroughTheLifecycle() throws {
        #expect(Host.resolve("icebox") == nil, "no icebox executable on PATH")
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }

        // A relative command name, found on PATH by the engine.
        let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
        let cgroup = try #require(app.cgroup)
        #expect(Kernel.processes(in: cgroup) == [app.pid])

        try supervisor.suspend("nap", grace: .zero)
        #expect(Kernel.events(of: cgroup)["frozen"] == "1")
        #expect(try supervisor.state(of: "nap") == .suspended)

        try supervisor.resume("nap")
        #expect(Kernel.events(of: cgroup)["frozen"] == "0")
        let state = try #require(Kernel.state(of: app.pid))
        #expect(state != "T" && state != "Z", "the process runs again (state \(state))")

        try supervisor.evict("nap")
        #expect(Kernel.state(of: app.pid) == nil, "the process is gone")
        #expect(!FileManager.default.fileExists(atPath: cgroup), "the cgroup is removed")
        #expect(try supervisor.state(of: "nap") == .evicted)

        // stop() throws if the engine left a process, a cgroup or a directory behind.
        try supervisor.stop()
    }

    @Test(
        "a python app that counts stops counting while frozen and counts again after a resume",
        .enabled(if: Host.resolve("python3") != nil, "needs python3 on PATH"))
    func pythonCounter() async throws {
        let python = try #require(Host.resolve("python3"))
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let counter = supervisor.paths.stateDir + "/count"
        let script = """
            import time
            n = 0
            while True:
                n += 1
                with open('\(counter)', 'w') as f:
                    f.write(str(n))
                time.sleep(0.01)
            """
        // Follow the app's events from here on: launch, freeze, thaw, eviction.
        let events = try supervisor.events(for: "counter")
        let app = try await supervisor.launch(LaunchOptions(name: "counter", command: [python, "-c", script]))
        let cgroup = try #require(app.cgroup)
        #expect(Kernel.waitUntil { Kernel.count(counter) > 0 }, "the app counts")

        try await supervisor.suspend("counter", grace: .zero)
        #expect(Kernel.events(of: cgroup)["frozen"] == "1")
        let frozenAt = Kernel.count(counter)
        try await Task.sleep(for: .milliseconds(200))
        #expect(Kernel.count(counter) == frozenAt, "a frozen app does not run")

        try await supervisor.resume("counter")
        #expect(Kernel.events(of: cgroup)["frozen"] == "0")
        #expect(Kernel.waitUntil { Kernel.count(counter) > frozenAt }, "the app counts again")

        try await supervisor.evict("counter")
        #expect(Kernel.state(of: app.pid) == nil)
        #expect(!FileManager.default.fileExists(atPath: cgroup))

        var kinds: [EventKind] = []
        for await event in events {
            kinds.append(event.kind)
            if event.kind == .evict { break }
        }
        #expect(kinds.filter { [.spawn, .freeze, .thaw, .evict].contains($0) } == [.spawn, .freeze, .thaw, .evict])
        try supervisor.stop()
    }
}
