import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A test process that owns a `Supervisor` and dies without `stop()` (a runner's SIGKILL at
/// its timeout, a crash, Ctrl-C) leaves nothing behind: its sweeper kills the apps, frozen
/// ones too, and removes the cgroups in every hierarchy and the directories. The dying
/// process is a real program built against the libraries, killed at several points.
@Suite(
    .enabled(if: LibraryBuild.unavailableReason == nil, "\(LibraryBuild.unavailableReason ?? "")"),
    .enabled(if: Sandbox.unavailableReason == nil, "\(Sandbox.unavailableReason ?? "")"), .timeLimit(.minutes(5)))
struct SupervisorDeathTests {
    /// The program: starts a supervisor, brings one app to the point named by its first
    /// argument with the backend its second names, prints what it made, then waits to die.
    static let program = #"""
        import Glibc
        import IceboxCore
        import Foundation

        setvbuf(stdout, nil, _IOLBF, 0)
        let point = CommandLine.arguments[1]
        let supervisor = try Supervisor.start()
        var options = LaunchOptions(name: "app", command: ["sh", "-c", "trap : USR1; while :; do sleep 1; done"])
        options.backend = BackendChoice(rawValue: CommandLine.arguments[2])!
        switch point {
        case "launching":
            options.ready = .notify
            options.readyTimeout = .seconds(600)
            Thread { _ = try? supervisor.launch(options) }.start()
            while (try? supervisor.state(of: "app")) != .launching { usleep(1000) }
        case "frozen":
            _ = try supervisor.launch(options)
            _ = try supervisor.suspend("app", grace: .zero)
        default:  // "grace": the app handles its notice and never answers it
            options.grace = .seconds(600)
            _ = try supervisor.launch(options)
            Thread { _ = try? supervisor.suspend("app") }.start()
            while (try? supervisor.state(of: "app")) != .background { usleep(1000) }
        }
        let app = try supervisor.apps().first { $0.name == "app" }!
        print("pid \(app.pid)")
        // The app's cgroups and the supervisor's roots they are in (their parents).
        let cgroups = [app.cgroup, app.freezerV1, app.memoryV1].compactMap { $0 }
        let roots = cgroups.map { "/" + $0.split(separator: "/").dropLast().joined(separator: "/") }
        for path in cgroups + roots + [supervisor.paths.runtimeDir, supervisor.paths.stateDir,
            "/" + supervisor.paths.runtimeDir.split(separator: "/").dropLast().joined(separator: "/"),  // the supervisor's own
        ].compactMap({ $0 }) {
            print("path \(path)")
        }
        print("ready")
        while true { pause() }
        """#

    /// Whether `pid` is gone (or a zombie no one has reaped yet: it runs no more).
    static func gone(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    /// The v1 freezer's case on its own: a host without a v1 freezer hierarchy skips it, saying why.
    @Test(
        "a supervisor's process killed without stop() while its app is frozen by the v1 freezer leaves nothing behind",
        .enabled(if: Sandbox.writableMounts.freezerV1 != nil, "\(LifecycleTests.freezerV1Reason)"))
    func killedWithoutStopOnCgroup1() async throws { try await killedWithoutStop(point: "frozen", backend: "cgroup1", signal: SIGKILL) }

    @Test(
        "a supervisor's process killed without stop() leaves no app, cgroup or directory behind",
        .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"),
        arguments: [
            ("launching", "cgroup2", SIGKILL), ("frozen", "cgroup2", SIGKILL), ("grace", "cgroup2", SIGTERM),
            ("frozen", "cgroup2", SIGINT), ("frozen", "signal", SIGKILL),
        ])
    func killedWithoutStop(point: String, backend: String, signal: Int32) async throws {
        // The program, built for this case in a directory of its own (a link takes about a second).
        let dir = try #require(mkdtemp(strdup(NSTemporaryDirectory() + "icebox-death-XXXXXX")).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await LibraryBuild.link(Self.program, named: "owner", in: dir)
        // In a session of its own, as a test runner under a terminal is: SIGINT goes to its
        // whole process group, as Ctrl-C sends it.
        let owner = try LibraryBuild.startOwner([dir + "/owner", point, backend], in: dir)
        defer { owner.kill() }
        let ownerPID = owner.pid
        let app = try #require(owner.pid("pid"))
        let paths = owner.paths
        let text = { owner.lines.joined(separator: "\n") }
        #expect(paths.count >= 3, "\(text())")
        // Whatever happens below, nothing is left by this test: the app, the cgroups (the
        // roots, so their trees, with the apps' in every hierarchy), the directories.
        defer {
            if !Self.gone(app) { kill(app, SIGKILL) }
            let cgroups = paths.filter { FileManager.default.fileExists(atPath: $0 + "/cgroup.procs") }
            Sandbox.removeCgroupTrees(cgroups.reversed())
            for path in paths where !cgroups.contains(path) { try? FileManager.default.removeItem(atPath: path) }
        }
        #expect(!Self.gone(app))
        // Under roots of the engine's own, in every hierarchy: a shared one (the default
        // <freezer>/icebox of a host without cgroup2) is not the engine's to remove.
        let cgroups = paths.filter { FileManager.default.fileExists(atPath: $0 + "/cgroup.procs") }
        #expect(!cgroups.isEmpty && cgroups.allSatisfy { $0.contains("/icebox-supervisor-") }, "\(cgroups)")

        kill(signal == SIGINT ? -ownerPID : ownerPID, signal)
        _ = try owner.process.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        let swept = Scenario.eventually(seconds: 10) { Self.gone(app) && paths.allSatisfy { !FileManager.default.fileExists(atPath: $0) } }
        #expect(swept, "left: app \(Self.gone(app) ? "gone" : "running"), \(paths.filter { FileManager.default.fileExists(atPath: $0) })")
    }
}
