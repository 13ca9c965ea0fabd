import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport
import Testing

/// The engine inside the test process, driven through the library's typed API on real
/// processes and real cgroups, checked against what the kernel says. Each test has its own
/// supervisor (its own directories and cgroup root), stopped even when the test fails.
@Suite(
    .serialized, .enabled(if: SupervisorHost.unavailableReason == nil, "\(SupervisorHost.unavailableReason ?? "")"),
    .timeLimit(.minutes(5)))
struct SupervisorTests {
    @Test("launch sleep → suspend (frozen 1) → resume (frozen 0) → terminate; events in order")
    func lifecycle() async throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let root = try #require(supervisor.cgroupRoot, "\(supervisor.cgroupProblem ?? "")")
        let events = try supervisor.events(for: "nap")

        // A relative command, found on a PATH with no icebox on it: nothing here execs icebox.
        var options = LaunchOptions(name: "nap", command: ["sleep", "100000"])
        options.environment = ["PATH=/usr/local/bin:/usr/bin:/bin"]
        #expect(Spawner.resolve("icebox", path: "/usr/local/bin:/usr/bin:/bin") == nil)
        let app = try await supervisor.launch(options)
        #expect(app.record.state == .active)
        #expect(app.output.lines.first?.hasPrefix("nap  launched  pid \(app.pid)") == true)
        let cgroup = try #require(app.cgroup)
        #expect(cgroup == root + "/nap")
        #expect(Kernel.cgroupProcs(cgroup) == [app.pid])

        let suspended = try await supervisor.suspend("nap", grace: .zero)
        #expect(suspended.lines.last?.contains("frozen in") == true, "\(suspended)")
        #expect(suspended.graceEnd == .zero && suspended.backend == .cgroup2 && suspended.tasks == 1, "\(suspended)")
        #expect(suspended.freezeTime > .zero)
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1")
        #expect(try await supervisor.state(of: "nap") == .suspended)

        let resumed = try await supervisor.resume("nap")
        #expect(resumed.lines.last?.contains("thawed in") == true, "\(resumed)")
        #expect(resumed.how == .thawed && resumed.thawTime.map { $0 > .zero } == true, "\(resumed)")
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0")
        #expect(Kernel.processState(app.pid).map { $0 != "T" && $0 != "Z" } == true)
        #expect(try await supervisor.state(of: "nap") == .active)

        try await supervisor.terminate("nap", timeout: .seconds(5))
        #expect(Kernel.processState(app.pid) == nil, "the app's process is gone (and reaped)")
        #expect(!FileIO.exists(cgroup))
        #expect(try await supervisor.state(of: "nap") == .terminated)

        let kinds = await collect(events, through: .exit, within: .seconds(10)).map(\.kind)
        let expected: [EventKind] = [.spawn, .notice, .freeze, .thaw, .exit]
        #expect(kinds.filter(expected.contains) == expected, "events: \(kinds)")

        try supervisor.stop()
        #expect(!FileIO.exists(root))
        #expect(!FileIO.exists(supervisor.paths.runtimeDir))
        #expect(!FileIO.exists(supervisor.paths.stateDir))
    }

    @Test(
        "a python app that counts keeps counting after a resume, and an eviction removes it and its cgroup",
        .enabled(
            if: FileIO.exists("/usr/bin/python3") || FileIO.exists("/usr/local/bin/python3"), "needs python3 (/usr/bin or /usr/local/bin)"))
    func pythonAppResumesAndIsEvicted() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let counter = supervisor.paths.stateDir + "/counter"
        let script = "import time\nn = 0\nwhile True:\n    n += 1\n    open('\(counter)', 'w').write(str(n))\n    time.sleep(0.01)\n"
        let app = try supervisor.launch(LaunchOptions(name: "counter", command: ["python3", "-c", script]))
        let cgroup = try #require(app.cgroup, "\(supervisor.cgroupProblem ?? "")")
        #expect(Kernel.waitUntil(seconds: 10) { Kernel.count(counter) > 0 })

        try supervisor.suspend("counter", grace: .zero)
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "1")
        let frozenAt = Kernel.count(counter)
        // A frozen app does not run: the count stays where it was (its last write may land
        // just before the freeze, hence the reading after).
        _ = Kernel.waitUntil(seconds: 0.2) { false }
        #expect(Kernel.count(counter) == frozenAt)

        try supervisor.resume("counter")
        #expect(Kernel.cgroupEvents(cgroup)["frozen"] == "0")
        #expect(Kernel.waitUntil(seconds: 10) { Kernel.count(counter) > frozenAt }, "counting again")

        let evicted = try supervisor.evict("counter")
        #expect(evicted.lines.contains { $0.contains("evicted") }, "\(evicted)")
        #expect(Kernel.processState(app.pid) == nil)
        #expect(!FileIO.exists(cgroup))
        let record = try #require(try supervisor.apps(all: true).first { $0.name == "counter" })
        #expect(record.state == .evicted)
        #expect(record.exitStatus == 128 + SIGKILL)
        try supervisor.stop()
    }

    @Test("failed requests throw the daemon's message and exit code")
    func errors() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let failures = [
            #expect(throws: IceboxError.self) { try supervisor.suspend("ghost") },
            #expect(throws: IceboxError.self) { try supervisor.resume("ghost") },
            #expect(throws: IceboxError.self) { try supervisor.evict("ghost") },
        ]
        for error in failures {
            #expect(error?.code == .failure)
            #expect(error?.message.hasPrefix("no app named 'ghost'") == true, "\(String(describing: error))")
        }
        #expect(try supervisor.state(of: "ghost") == nil)
        let missing = #expect(throws: IceboxError.self) {
            try supervisor.launch(LaunchOptions(name: "nope", command: ["icebox-no-such-command"]))
        }
        #expect(missing?.code == .notFound)
        #expect(missing?.message.contains("icebox-no-such-command: command not found") == true, "\(String(describing: missing))")
        _ = try supervisor.launch(LaunchOptions(name: "twin", command: ["sleep", "100000"]))
        let twin = #expect(throws: IceboxError.self) { try supervisor.launch(LaunchOptions(name: "twin", command: ["sleep", "100000"])) }
        #expect(twin?.message.contains("already running") == true, "\(String(describing: twin))")
        try supervisor.stop()
    }

    /// The child that failed its exec is this process's own (an embedded engine has no
    /// subreaper): it is reaped before the launch throws, not left a zombie.
    @Test("a launch whose exec fails throws the step and errno, and leaves no zombie child in this process")
    func failedExecIsReaped() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        // Executable, but no format the kernel knows: execve fails with ENOEXEC in the child.
        let path = supervisor.paths.stateDir + "/not-a-program"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        try #require(fd >= 0)
        _ = write(fd, "\u{7f}not a program\n", 15)
        close(fd)
        let failed = #expect(throws: IceboxError.self) { try supervisor.launch(LaunchOptions(name: "bad", command: [path])) }
        #expect(failed?.message.contains("Exec format error") == true, "\(String(describing: failed))")
        // Never exec'd, the child has the name of the thread that spawned it: one of this
        // process's (an app's has its program's).
        let names = Set(
            ((try? FileIO.list("/proc/self/task")) ?? []).compactMap { try? FileIO.read("/proc/self/task/\($0)/comm").trimmed() })
        let zombies = ((try? FileIO.list("/proc")) ?? []).compactMap(pid_t.init).filter { pid in
            guard let stat = ProcFS.stat(pid: pid), stat.state == "Z", stat.ppid == getpid() else { return false }
            return names.contains((try? FileIO.read("/proc/\(pid)/comm").trimmed()) ?? "")
        }
        #expect(zombies.isEmpty, "zombie children of this process: \(zombies)")
    }

    @Test("stop terminates every app, suspended or not, with its children, and removes cgroups and directories")
    func stopLeavesNothing() throws {
        let supervisor = try Supervisor.start()
        defer { try? supervisor.stop() }
        let root = try #require(supervisor.cgroupRoot, "\(supervisor.cgroupProblem ?? "")")
        let tree = try supervisor.launch(LaunchOptions(name: "tree", command: ["sh", "-c", "sleep 1000 & exec sleep 1001"]))
        _ = try supervisor.launch(LaunchOptions(name: "frozen", command: ["sleep", "1002"]))
        try supervisor.suspend("frozen", grace: .zero)
        #expect(Kernel.waitUntil(seconds: 5) { Kernel.cgroupProcs(root + "/tree").count == 2 })
        let pids = Kernel.cgroupProcs(root + "/tree") + Kernel.cgroupProcs(root + "/frozen")
        #expect(pids.count == 3 && pids.contains(tree.pid))

        try supervisor.stop()
        for pid in pids { #expect(Kernel.gone(pid), "pid \(pid) is gone") }
        #expect(!FileIO.exists(root))
        #expect(!FileIO.exists(supervisor.paths.runtimeDir))
        #expect(!FileIO.exists(supervisor.paths.stateDir))
        try supervisor.stop()  // again: nothing to do
        #expect(throws: IceboxError.self) { try supervisor.ping() }
    }

    @Test("a supervisor dropped without stop() still ends its apps and removes its cgroup root")
    func deinitStops() throws {
        var pid: pid_t = 0
        var root = ""
        do {
            let supervisor = try Supervisor.start()
            root = try #require(supervisor.cgroupRoot, "\(supervisor.cgroupProblem ?? "")")
            pid = try supervisor.launch(LaunchOptions(name: "orphan", command: ["sleep", "100000"])).pid
            try supervisor.suspend("orphan", grace: .zero)
        }
        #expect(Kernel.processState(pid) == nil)
        #expect(!FileIO.exists(root))
    }

    @Test("directories given by the caller are used and, if they existed, kept")
    func givenDirectories() throws {
        let base = try FileIO.makeTemporaryDirectory(prefix: "icebox-unit-given-")
        defer { try? FileIO.removeTree(base) }
        let supervisor = try Supervisor.start(runtimeDirectory: base + "/run", stateDirectory: base)
        defer { try? supervisor.stop() }
        #expect(FileIO.exists(base + "/run/icebox.sock"))
        #expect(try supervisor.ping().lines.first?.hasPrefix("icebox daemon pid \(getpid())") == true)
        // A second engine for the same runtime directory is refused, saying why.
        let busy = #expect(throws: IceboxError.self) {
            try Supervisor.start(runtimeDirectory: base + "/run", stateDirectory: base).stop()
        }
        #expect(busy?.message.contains("already serves") == true, "\(String(describing: busy))")
        try supervisor.stop()
        #expect(!FileIO.exists(base + "/run"), "created by the supervisor, so removed")
        #expect(FileIO.exists(base + "/events.jsonl"), "the caller's directory is kept, with the log")
    }
}

enum SupervisorHost {
    static var unavailableReason: String? {
        if getuid() != 0 { return "the Supervisor tests need root (cgroups)" }
        // The tests give each supervisor a cgroup root of its own.
        return cgroup2Unwritable(CgroupMounts.read().unified)
    }
}

/// The events of a stream until one of kind `last` (included), or until `within` passes.
func collect(_ events: AsyncStream<Event>, through last: EventKind, within: Duration) async -> [Event] {
    await withTaskGroup(of: [Event]?.self) { group in
        group.addTask {
            var seen: [Event] = []
            for await event in events {
                seen.append(event)
                if event.kind == last { return seen }
            }
            return seen
        }
        group.addTask {
            try? await Task.sleep(for: within)
            return nil
        }
        var result: [Event] = []
        for await value in group {
            if let value {
                result = value
                break
            }
            Issue.record("no \(last) event within \(within)")
            break
        }
        group.cancelAll()
        return result
    }
}

/// What the kernel says, read directly rather than through icebox.
enum Kernel {
    static func cgroupEvents(_ cgroup: String) -> [String: String] {
        var out: [String: String] = [:]
        for line in ((try? FileIO.read(cgroup + "/cgroup.events")) ?? "").split(separator: "\n") {
            let kv = line.split(separator: " ")
            if kv.count == 2 { out[String(kv[0])] = String(kv[1]) }
        }
        return out
    }

    static func cgroupProcs(_ cgroup: String) -> [pid_t] {
        ((try? FileIO.read(cgroup + "/cgroup.procs")) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    /// The state letter in /proc/PID/stat (R, S, T, Z…), nil if there is no such process.
    static func processState(_ pid: pid_t) -> Character? {
        guard let text = try? FileIO.read("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(close, offsetBy: 2)]
    }

    /// Whether the process no longer runs. A zombie counts as gone unless it is this
    /// process's child (then it is ours to reap, and a leak): an app's orphaned child is
    /// reparented to PID 1 or the nearest subreaper, which this process is not.
    static func gone(_ pid: pid_t) -> Bool {
        guard let stat = ProcFS.stat(pid: pid) else { return true }
        return stat.state == "Z" && stat.ppid != getpid()
    }

    static func count(_ path: String) -> Int { Int(((try? FileIO.read(path)) ?? "").trimmed()) ?? 0 }

    /// Checks `condition` until it holds or `seconds` pass, every 10 ms: for a process
    /// outside icebox whose progress has no event to wait on.
    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while Clock.monotonicNanos() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
