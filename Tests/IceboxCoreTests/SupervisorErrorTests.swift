import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The typed reasons of the engine's errors, as a test matches on them, on real processes
/// and cgroups: each comes from the daemon's loop over the control socket (the wire form)
/// and is checked beside what the kernel says was (not) done.
@Suite(
    .serialized, .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"),
    .timeLimit(.minutes(5)))
struct SupervisorErrorTests {
    @Test("an unknown app: noSuchApp(name), exit code 1, for suspend, resume, terminate and evict")
    func unknownApp() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let calls: [(Supervisor) throws -> Void] = [
            { _ = try $0.suspend("ghost", grace: .zero) }, { _ = try $0.resume("ghost") }, { _ = try $0.terminate("ghost") },
            { _ = try $0.evict("ghost") },
        ]
        for call in calls {
            let error = #expect(throws: IceboxError.self) { try call(supervisor) }
            #expect(error?.reason == .noSuchApp(name: "ghost"), "\(String(describing: error))")
            #expect(error?.code == .failure)
        }
        // An ended app is in the wrong state for a suspend, not unknown.
        let app = try supervisor.launch(LaunchOptions(name: "brief", command: ["sleep", "100000"]))
        try supervisor.evict("brief")
        #expect(Kernel.gone(app.pid))
        let ended = #expect(throws: IceboxError.self) { try supervisor.suspend("brief", grace: .zero) }
        #expect(ended?.reason == .wrongState(name: "brief", state: .evicted), "\(String(describing: ended))")
        // A relaunch: of an app that runs, the wrong state; of one never launched, no such app.
        _ = try supervisor.launch(LaunchOptions(name: "up", command: ["sleep", "100000"]))
        let running = #expect(throws: IceboxError.self) { try supervisor.relaunch("up") }
        #expect(running?.reason == .wrongState(name: "up", state: .active), "\(String(describing: running))")
        let never = #expect(throws: IceboxError.self) { try supervisor.relaunch("ghost") }
        #expect(never?.reason == .noSuchApp(name: "ghost"), "\(String(describing: never))")
    }

    @Test("a command that is not there: commandNotFound(command), exit code 127, and no process or cgroup left")
    func commandNotFound() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let root = try #require(supervisor.cgroupRoot, "\(supervisor.cgroupProblem ?? "")")
        let error = #expect(throws: IceboxError.self) {
            try supervisor.launch(LaunchOptions(name: "nope", command: ["icebox-no-such-program-\(getpid())"]))
        }
        #expect(error?.reason == .commandNotFound(command: "icebox-no-such-program-\(getpid())"), "\(String(describing: error))")
        #expect(error?.code == .notFound)
        #expect(!FileIO.exists(root + "/nope"), "the failed launch left its cgroup")
        // A file that is there but cannot be run: 126.
        let notExecutable = #expect(throws: IceboxError.self) {
            try supervisor.launch(LaunchOptions(name: "text", command: ["/etc/hostname"]))
        }
        #expect(notExecutable?.reason == .commandNotExecutable(command: "/etc/hostname"), "\(String(describing: notExecutable))")
        #expect(notExecutable?.code == .notExecutable)
    }

    @Test("a name already taken: nameTaken(name), and the running app is untouched")
    func nameTaken() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let app = try supervisor.launch(LaunchOptions(name: "web", command: ["sleep", "100000"]))
        let cgroup = try #require(app.cgroup)
        let error = #expect(throws: IceboxError.self) {
            try supervisor.launch(LaunchOptions(name: "web", command: ["sleep", "200"]))
        }
        #expect(error?.reason == .nameTaken(name: "web"), "\(String(describing: error))")
        #expect(Kernel.cgroupProcs(cgroup) == [app.pid], "only the first app runs in its cgroup")
    }

    @Test("a suspend while the app is launching: busy(name, .launching), exit code 75, and the app is not frozen")
    func suspendWhileLaunching() async throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let events = try supervisor.events(for: "slow")
        // Never says READY=1: it stays launching until its ready time-out (or the terminate below).
        var options = LaunchOptions(name: "slow", command: ["sleep", "100000"])
        options.ready = .notify
        options.readyTimeout = .seconds(30)
        let launch = try JoinableThread { _ = try? supervisor.launch(options) }
        defer { launch.join(until: Clock.monotonicNanos() + 10_000_000_000) }
        let spawn = await collect(events, through: .spawn, within: .seconds(10)).last
        let pid = try #require(spawn?.pid)
        #expect(try await supervisor.state(of: "slow") == .launching)

        let error = await #expect(throws: IceboxError.self) { try await supervisor.suspend("slow", grace: .zero) }
        #expect(error?.reason == .busy(name: "slow", state: .launching), "\(String(describing: error))")
        #expect(error?.code == .tryAgain)
        let cgroup = try #require(try await supervisor.apps().first { $0.name == "slow" }?.cgroup)
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0", "the kernel shows it frozen")
        #expect(Kernel.processState(pid).map { $0 != "T" } == true)

        try await supervisor.terminate("slow", timeout: .seconds(5))
        #expect(Kernel.gone(pid))
    }
}
