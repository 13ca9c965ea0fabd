import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `LaunchOptions.pidNamespace` through the library: the engine in this process runs the
/// init from the executable that carries it (this test binary links the `icebox`
/// executable's C target, as the `icebox` program does; a program that only links the
/// library uses the `icebox` on its PATH), and terminate reaches the app through it.
@Suite(
    .serialized, .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"),
    .enabled(if: getuid() == 0, "a new PID namespace needs CAP_SYS_ADMIN"), .timeLimit(.minutes(5)))
struct SupervisorPIDNamespaceTests {
    @Test("a Supervisor launches an app under an init in its own PID namespace and terminates it through the init")
    func launchAndTerminate() async throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        var options = LaunchOptions(name: "ns", command: ["sleep", "100000"])
        options.environment = ["PATH=/usr/local/bin:/usr/bin:/bin"]
        options.pidNamespace = true
        let app = try await supervisor.launch(options)
        let status = try FileIO.read("/proc/\(app.pid)/status")
        #expect(ProcFS.statusField("NSpid", in: status)?.split(whereSeparator: { $0 == "\t" || $0 == " " }).last == "1", "\(status)")
        let cgroup = try #require(app.cgroup)
        let deadline = Clock.monotonicNanos() + 5_000_000_000
        while Kernel.cgroupProcs(cgroup).count < 2, Clock.monotonicNanos() < deadline { usleep(1_000) }
        #expect(Kernel.cgroupProcs(cgroup).count == 2, "the init and the app: \(Kernel.cgroupProcs(cgroup))")
        let end = try await supervisor.terminate("ns", timeout: .seconds(5))
        #expect(end.exitStatus == 143, "\(end)")
        #expect(Kernel.processState(app.pid) == nil)
        #expect(!FileIO.exists(cgroup))
    }
}
