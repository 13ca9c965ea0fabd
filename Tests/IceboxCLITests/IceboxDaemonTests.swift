import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A real `icebox daemon` process started for a test through the library (`IceboxDaemon`):
/// it listens once started, a client drives it, its stop terminates its apps and removes
/// what was made for it; one that cannot start throws and leaves nothing; the death of the
/// process that started it leaves no daemon, app, cgroup or directory. Judged from
/// /proc, the cgroup trees and the file system.
@Suite(
    .serialized,  // the failed start looks for leftovers by name: no other daemon of this suite beside it
    .enabled(if: Sandbox.cgroup2Missing == nil, "\(Sandbox.cgroup2Missing ?? "")"), .timeLimit(.minutes(5)))
struct IceboxDaemonTests {
    /// Whether `pid` is gone (or a zombie no one has reaped yet: it runs no more).
    static func gone(_ pid: pid_t) -> Bool { SupervisorDeathTests.gone(pid) }

    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// The cgroups and temporary directories of `IceboxDaemon`s this process started.
    static func leftovers() -> [String] {
        var found: [String] = []
        let mounts = Sandbox.mounts
        for root in [mounts.unified, mounts.freezerV1, mounts.memoryV1].compactMap({ $0 }) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
            where name.hasPrefix("icebox-daemon-\(getpid())-") {
                found.append(root + "/" + name)
            }
        }
        return found
    }

    @Test("start → a client launches and suspends an app → stop(terminateApps: true): no app, daemon, cgroup or directory left")
    func lifecycle() throws {
        let before = Self.leftovers()
        let daemon = try IceboxDaemon.start(executable: Sandbox.binary)
        defer { try? daemon.stop() }
        #expect(!Self.gone(daemon.pid))
        let root = try #require(daemon.cgroupRoot, "\(daemon.cgroupProblem ?? "")")
        // Listening: the first request is answered, no waiting or retrying.
        _ = try daemon.client.ping()

        let app = try daemon.client.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
        let cgroup = try #require(app.cgroup)
        #expect(cgroup == root + "/nap")
        #expect(Sandbox.pids(in: cgroup) == [app.pid])
        try daemon.client.suspend("nap", grace: .zero)
        #expect(((try? String(contentsOfFile: cgroup + "/cgroup.events", encoding: .utf8)) ?? "").contains("frozen 1"))

        let made = [
            cgroup, app.record.freezerV1, app.record.memoryV1, root, daemon.paths.runtimeDir, daemon.paths.stateDir, daemon.outputLog,
        ]
        .compactMap { $0 }
        try daemon.stop(terminateApps: true)
        #expect(Self.gone(app.pid), "the app still runs")
        #expect(Self.gone(daemon.pid), "the daemon still runs")
        #expect(made.filter(Self.exists).isEmpty, "left: \(made.filter(Self.exists))")
        #expect(Self.leftovers() == before, "left: \(Self.leftovers())")
        // Stopped once: again does nothing.
        try daemon.stop()
    }

    @Test("given directories and cgroup root: used; the stop removes the apps' cgroups and the directories that did not exist")
    func givenPlaces() throws {
        let unified = try #require(Sandbox.mounts.unified)
        let root = unified + "/icebox-daemon-test-\(getpid())"
        #expect(mkdir(root, 0o755) == 0, "\(String(cString: strerror(errno)))")
        defer { Sandbox.removeCgroupTrees([root]) }
        let dir = try #require(mkdtemp(strdup(NSTemporaryDirectory() + "icebox-daemon-test-XXXXXX")).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let daemon = try IceboxDaemon.start(
            executable: Sandbox.binary, runtimeDirectory: dir + "/run", stateDirectory: dir + "/state", cgroupRoot: root)
        defer { try? daemon.stop() }
        #expect(daemon.paths.controlSocket == dir + "/run/icebox.sock")
        #expect(daemon.cgroupRoot == root)
        let app = try daemon.client.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
        #expect(app.cgroup == root + "/nap")
        #expect(Sandbox.pids(in: root + "/nap") == [app.pid])
        #expect(Self.exists(dir + "/state/events.jsonl"))
        let made = [app.cgroup, app.record.freezerV1, app.record.memoryV1].compactMap { $0 }
        try daemon.stop()
        #expect(Self.gone(app.pid))
        #expect(made.filter(Self.exists).isEmpty, "left: \(made.filter(Self.exists))")
        #expect(!Self.exists(dir + "/run") && !Self.exists(dir + "/state"), "the directories made for it are left")
        // The root itself the daemon removes once empty (`removeEmptyRoots`), as any daemon
        // given --cgroup-root does: the defer removes it if it did not.
    }

    @Test("the scoped form stops the daemon when its body throws; stopDaemon on the client is typed")
    func scoped() throws {
        struct Planned: Error {}
        var pid: pid_t = 0
        var made: [String] = []
        #expect(throws: Planned.self) {
            try IceboxDaemon.with(executable: Sandbox.binary) { daemon in
                pid = daemon.pid
                let app = try daemon.client.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
                made = [app.cgroup, daemon.cgroupRoot, daemon.paths.runtimeDir].compactMap { $0 }
                pid = app.pid
                throw Planned()
            }
        }
        #expect(pid != 0 && Self.gone(pid))
        #expect(made.filter(Self.exists).isEmpty, "left: \(made.filter(Self.exists))")
        // A client's stopDaemon against no daemon: unavailable, typed.
        let dir = NSTemporaryDirectory() + "icebox-nodaemon-\(getpid())"
        let error = #expect(throws: IceboxError.self) {
            try IceboxClient(runtimeDirectory: dir, stateDirectory: dir).stopDaemon(terminateApps: true)
        }
        #expect(error?.reason == .daemonUnavailable)
    }

    @Test("a daemon that cannot start (its runtime directory is a file) throws what it said, and leaves nothing")
    func cannotStart() throws {
        let before = Self.leftovers()
        let dir = try #require(mkdtemp(strdup(NSTemporaryDirectory() + "icebox-daemon-test-XXXXXX")).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/run"
        _ = FileManager.default.createFile(atPath: file, contents: Data("not a directory".utf8))
        let state = dir + "/state"
        let error = #expect(throws: IceboxError.self) {
            try IceboxDaemon.start(executable: Sandbox.binary, runtimeDirectory: file, stateDirectory: state, readyTimeout: .seconds(30))
        }
        #expect(error?.reason == .daemonUnavailable, "\(String(describing: error))")
        #expect(error?.message.contains("exited (status") == true, "\(String(describing: error))")
        #expect(error?.message.contains(file) == true, "the daemon's own words name the file: \(String(describing: error))")
        #expect(!Self.exists(state), "the state directory made for it is left")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "not a directory", "a file it was given is not its to remove")
        #expect(Self.leftovers() == before, "left: \(Self.leftovers())")

        // No such executable: commandNotFound, naming it.
        let missing = #expect(throws: IceboxError.self) { try IceboxDaemon.start(executable: dir + "/no-icebox") }
        #expect(missing?.reason == .commandNotFound(command: dir + "/no-icebox"), "\(String(describing: missing))")
        #expect(Self.leftovers() == before, "left: \(Self.leftovers())")
    }

    /// The program: starts a daemon (the icebox binary its first argument names), launches
    /// an app through it and freezes it, prints what was made, then waits to die.
    /// Another client stays connected to the daemon beyond the program's death (a
    /// terminal's `icebox top`, say): the daemon never goes idle, so it would run on unless
    /// the sweeper kills it.
    static let program = #"""
        import Foundation
        import Glibc
        import IceboxCore

        setvbuf(stdout, nil, _IOLBF, 0)
        let daemon = try IceboxDaemon.start(executable: CommandLine.arguments[1])
        let options = LaunchOptions(name: "app", command: ["sh", "-c", "while :; do sleep 1; done"])
        let app = try daemon.client.launch(options)
        _ = try daemon.client.suspend("app", grace: .zero)
        let other = Process()
        other.executableURL = URL(fileURLWithPath: CommandLine.arguments[2])
        other.arguments = [
            "-c", "import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('connected', flush=True); time.sleep(600)",
            daemon.paths.controlSocket,
        ]
        let said = Pipe()
        other.standardOutput = said
        try other.run()
        _ = said.fileHandleForReading.availableData  // "connected"
        print("client \(other.processIdentifier)")
        print("daemon \(daemon.pid)")
        print("pid \(app.pid)")
        // The app's cgroups, the roots they are in (their parents: in v1 memory, the daemon's
        // spawn stand-ins sit there too), and the daemon's directories.
        let cgroups = [app.cgroup, app.record.freezerV1, app.record.memoryV1].compactMap { $0 }
        let roots = cgroups.map { "/" + $0.split(separator: "/").dropLast().joined(separator: "/") }
        for path in cgroups + roots + [daemon.cgroupRoot, daemon.paths.runtimeDir, daemon.paths.stateDir, daemon.outputLog].compactMap({ $0 }) {
            print("path \(path)")
        }
        print("ready")
        while true { pause() }
        """#

    @Test(
        "the process that started a daemon, SIGKILLed with an app frozen, leaves no daemon, app, cgroup or directory",
        .enabled(if: LibraryBuild.unavailableReason == nil, "\(LibraryBuild.unavailableReason ?? "")"),
        .enabled(if: LibraryBuild.python3 != nil, "needs python3 for a client that outlives the program"))
    func killedWithoutStop() async throws {
        let dir = try #require(mkdtemp(strdup(NSTemporaryDirectory() + "icebox-death-XXXXXX")).map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await LibraryBuild.link(Self.program, named: "owner", in: dir)
        let python = try #require(LibraryBuild.python3)
        let owner = try LibraryBuild.startOwner([dir + "/owner", Sandbox.binary, python], in: dir)
        defer { owner.kill() }
        let ownerPID = owner.pid
        let client = try #require(owner.pid("client"))
        defer { kill(client, SIGKILL) }
        let daemon = try #require(owner.pid("daemon"))
        let app = try #require(owner.pid("pid"))
        let paths = owner.paths
        let text = { owner.lines.joined(separator: "\n") }
        #expect(paths.count >= 4, "\(text())")
        // Whatever happens below, nothing is left by this test.
        defer {
            for pid in [daemon, app] where !Self.gone(pid) { kill(pid, SIGKILL) }
            let cgroups = paths.filter { Self.exists($0 + "/cgroup.procs") }
            Sandbox.removeCgroupTrees(cgroups.reversed())
            for path in paths where !cgroups.contains(path) { try? FileManager.default.removeItem(atPath: path) }
        }
        #expect(!Self.gone(daemon) && !Self.gone(app))
        let frozen = try #require(paths.first)
        #expect(((try? String(contentsOfFile: frozen + "/cgroup.events", encoding: .utf8)) ?? "").contains("frozen 1"))

        kill(ownerPID, SIGKILL)
        _ = try owner.process.handle.wait(until: Clock.monotonicNanos() + 5_000_000_000)
        let start = Clock.monotonicNanos()
        let swept = Scenario.eventually(seconds: 10) {
            Self.gone(daemon) && Self.gone(app) && paths.allSatisfy { !Self.exists($0) }
        }
        let took = Double(Clock.monotonicNanos() - start) / 1e9
        #expect(
            swept,
            "left: daemon \(Self.gone(daemon) ? "gone" : "running"), app \(Self.gone(app) ? "gone" : "running"), \(paths.filter(Self.exists))"
        )
        #expect(took < 3, "swept in \(took) s")
    }
}
