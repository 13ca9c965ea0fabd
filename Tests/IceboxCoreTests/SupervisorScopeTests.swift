import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `Supervisor.with { … }`: the supervisor is stopped when the body returns and when it
/// throws, so a failing test leaves no app, cgroup or directory behind.
@Suite(.enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct SupervisorScopeTests {
    struct Planted: Error {}

    /// What a supervisor made, to look for once it is gone.
    struct Made {
        var pid: pid_t
        var paths: [String]
    }

    func launchNap(_ supervisor: Supervisor) throws -> Made {
        let app = try supervisor.launch(LaunchOptions(name: "nap", command: ["sleep", "100000"]))
        try supervisor.suspend("nap", grace: .zero)
        let cgroup = try #require(app.cgroup)
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1")
        return Made(pid: app.pid, paths: [cgroup, supervisor.paths.runtimeDir, supervisor.paths.stateDir])
    }

    func expectGone(_ made: Made?) throws {
        let made = try #require(made)
        #expect(Kernel.processState(made.pid) == nil, "the frozen app is still there")
        for path in made.paths { #expect(!FileIO.exists(path), "\(path) is left") }
    }

    @Test("the body's result comes back and everything is gone")
    func returns() throws {
        var made: Made?
        let name = try Supervisor.with { supervisor in
            made = try launchNap(supervisor)
            return "done"
        }
        #expect(name == "done")
        try expectGone(made)
    }

    @Test("a body that throws: its error comes back, and everything is gone, the frozen app too")
    func throwsFromTheBody() throws {
        var made: Made?
        #expect(throws: Planted.self) {
            try Supervisor.with { supervisor in
                made = try launchNap(supervisor)
                throw Planted()
            }
        }
        try expectGone(made)
    }

    @Test("the async form, throwing after an await")
    func asyncBodyThrows() async throws {
        nonisolated(unsafe) var made: Made?  // written inside the body, read after it returned
        await #expect(throws: Planted.self) {
            try await Supervisor.with { (supervisor: Supervisor) async throws -> Void in
                made = try launchNap(supervisor)
                try await Task.sleep(for: .milliseconds(1))
                throw Planted()
            }
        }
        try expectGone(made)
    }
}
