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
        let app = try supervisor.launch(LaunchOptions(name: "counter", command: [python, "-c", script]))
        let cgroup = try #require(app.cgroup)
        #expect(Kernel.waitUntil { Kernel.count(counter) > 0 }, "the app counts")

        try supervisor.suspend("counter", grace: .zero)
        #expect(Kernel.events(of: cgroup)["frozen"] == "1")
        let frozenAt = Kernel.count(counter)
        try await Task.sleep(for: .milliseconds(200))
        #expect(Kernel.count(counter) == frozenAt, "a frozen app does not run")

        try supervisor.resume("counter")
        #expect(Kernel.events(of: cgroup)["frozen"] == "0")
        #expect(Kernel.waitUntil { Kernel.count(counter) > frozenAt }, "the app counts again")

        try supervisor.evict("counter")
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

/// What this host offers, and the PATH the tests run with.
enum Host {
    /// Why the tests cannot run here (printed as the skip reason), or nil: they need a
    /// cgroup v2 hierarchy this process may create cgroups in (root, or a delegated subtree).
    static let problem: String? = {
        guard let unified = CgroupMounts.read().unified else { return "no cgroup2 filesystem is mounted" }
        let probe = unified + "/icebox-example-probe-\(getpid())"
        let facts = HostFacts.discover(cgroupRootOverride: probe)
        rmdir(probe)
        if let v1 = facts.freezerV1Root { rmdir(v1) }
        return facts.cgroup2Usable ? nil : "no usable cgroup v2 root: \(facts.cgroupRootProblem ?? "unknown")"
    }()

    /// Drops from PATH every directory holding an `icebox` executable, so that nothing
    /// could run one by accident.
    static func removeIceboxFromPath() {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let kept = path.split(separator: ":").filter { !FileManager.default.isExecutableFile(atPath: "\($0)/icebox") }
        setenv("PATH", kept.joined(separator: ":"), 1)
    }

    /// The program `name` as PATH finds it, or nil.
    static func resolve(_ name: String) -> String? {
        let path = String(cString: getenv("PATH"))
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// The kernel's view, read from /sys and /proc.
enum Kernel {
    /// The keys of the cgroup's `cgroup.events` ("populated", "frozen").
    static func events(of cgroup: String) -> [String: String] {
        let text = (try? String(contentsOfFile: cgroup + "/cgroup.events", encoding: .utf8)) ?? ""
        var keys: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { keys[String(parts[0])] = String(parts[1]) }
        }
        return keys
    }

    static func processes(in cgroup: String) -> [Int32] {
        let text = (try? String(contentsOfFile: cgroup + "/cgroup.procs", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { Int32($0) }
    }

    /// The state letter of /proc/PID/stat (R running, S sleeping, T stopped, Z zombie), or
    /// nil if there is no such process.
    static func state(of pid: Int32) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(end, offsetBy: 2)]
    }

    static func count(_ file: String) -> Int {
        Int((try? String(contentsOfFile: file, encoding: .utf8)) ?? "") ?? 0
    }

    /// Checks a condition every 10 ms for up to 10 s: the app's progress has no event to wait on.
    static func waitUntil(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
