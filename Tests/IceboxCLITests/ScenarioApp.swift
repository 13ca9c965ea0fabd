import Foundation
import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// The suites that play the kernel's cgroup selftests and the peer regressions, one test at a
/// time: each blocks a thread of the test runner's small pool while it waits on the kernel,
/// and run side by side they would starve the async tests of other suites.
@Suite(.serialized) enum KernelScenarios {}

/// An app icebox launched for one of the kernel's cgroup selftest scenarios, with the kernel's
/// view of it: the directory whose freezer the backend drives (the app's v2 cgroup for
/// cgroup2, its v1 freezer directory for cgroup1, none for signal), and reads of that state
/// straight from the kernel, never from icebox's output.
struct ScenarioApp {
    let box: Sandbox
    let name: String
    let backend: BackendKind
    let record: AppRecord
    var pid: pid_t { record.pid }
    /// The app's v2 cgroup: where icebox finds its processes, whatever the backend.
    let cgroup: String
    /// The directory the backend freezes: the v2 cgroup or the v1 freezer directory; nil for
    /// signal (SIGSTOP has no directory).
    let freezerDir: String?

    /// Launches `ScenarioProgram args` as `name` with `--grace 0` (no notice, an immediate
    /// freeze) on `backend`, and waits until its v2 cgroup holds `processes` processes (nil:
    /// any number, for a fork bomb).
    init(_ box: Sandbox, _ name: String, backend: BackendKind, _ args: [String], processes: Int? = 1) throws {
        self.box = box
        self.name = name
        self.backend = backend
        let launched = try box.icebox(
            ["launch", "--backend", backend.rawValue, "--grace", "0", "--background-signal", "none", name, "--", ScenarioProgram.path]
                + args)
        try #require(launched.status == 0, "\(launched.output)")
        let launchedRecord = try #require(try box.apps()[name])
        record = launchedRecord
        cgroup = try #require(launchedRecord.cgroup)
        switch backend {
        case .cgroup2: freezerDir = cgroup
        case .cgroup1:
            let v1: String = try #require(launchedRecord.freezerV1)
            freezerDir = v1
        case .signal: freezerDir = nil
        }
        let wanted = processes
        let path = cgroup
        try #require(
            Scenario.eventually { wanted.map { CgroupTree.processes(path).count == $0 } ?? true },
            "\(name) never had \(wanted ?? 0) processes: \(CgroupTree.processes(path).count)")
    }

    /// Every process of the app (sub-cgroups included).
    var members: [pid_t] { CgroupTree.processes(cgroup) }

    @discardableResult
    func suspend() throws -> Sandbox.Result { try run("suspend") }
    @discardableResult
    func resume() throws -> Sandbox.Result { try run("resume") }
    @discardableResult
    func evict() throws -> Sandbox.Result { try run("evict") }

    /// Runs `icebox COMMAND NAME` and requires it to succeed.
    @discardableResult
    func run(_ command: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Sandbox.Result {
        let r = try box.icebox([command, name])
        try #require(r.status == 0, "icebox \(command) \(name): \(r.output)", sourceLocation: sourceLocation)
        return r
    }

    /// What `icebox ps` says of the app.
    var state: AppState? { (try? box.apps())?[name]?.state }

    /// Whether the kernel holds the whole app frozen: the freezer directory reads frozen and,
    /// for signal, every thread of every process is stopped.
    var kernelFrozen: Bool {
        if let freezerDir { return Scenario.frozen(freezerDir, backend) }
        let pids = members
        return !pids.isEmpty && pids.allSatisfy(Scenario.stopped)
    }

    /// Whether every process of the app runs again (no thread stopped, the directory thawed).
    var kernelThawed: Bool {
        if let freezerDir, Scenario.frozen(freezerDir, backend) { return false }
        return members.allSatisfy { !Scenario.stopped($0) }
    }
}

/// Reads and writes of the kernel's freezer state for the scenarios, per backend, and the
/// bounded waits they need.
enum Scenario {
    /// Whether the cgroup reads frozen: `frozen 1` in cgroup.events (v2), `FROZEN` (v1).
    static func frozen(_ dir: String, _ backend: BackendKind) -> Bool {
        backend == .cgroup1 ? Kernel.freezerState(dir) == "FROZEN" : Kernel.cgroupFrozen(dir)
    }

    /// Freezes or thaws a cgroup directly, as the kernel's test does to its sub-cgroups.
    static func setFrozen(_ dir: String, _ backend: BackendKind, _ frozen: Bool) throws {
        if backend == .cgroup1 {
            try (frozen ? "FROZEN" : "THAWED").write(toFile: dir + "/freezer.state", atomically: false, encoding: .utf8)
        } else {
            try (frozen ? "1" : "0").write(toFile: dir + "/cgroup.freeze", atomically: false, encoding: .utf8)
        }
    }

    /// Waits (bounded) until the cgroup's frozen state is `expected`: on cgroup.events
    /// (POLLPRI) for v2, by re-reading freezer.state for v1 (it has no notification).
    static func waitFrozen(_ dir: String, _ backend: BackendKind, _ expected: Bool, seconds: Double = 5) -> Bool {
        if backend == .cgroup1 { return eventually(seconds: seconds) { frozen(dir, backend) == expected } }
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        return (try? Cgroup2(path: dir).waitForEvents(until: deadline) { $0.frozen == expected }.satisfied) ?? false
    }

    static func move(_ pid: pid_t, to dir: String) throws {
        try String(pid).write(toFile: dir + "/cgroup.procs", atomically: false, encoding: .utf8)
    }

    static func makeCgroup(_ dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
    }

    /// Every thread of the process stopped (T, or t when traced): what SIGSTOP does.
    static func stopped(_ pid: pid_t) -> Bool {
        let threads = ProcFS.threads(of: pid)
        return !threads.isEmpty && threads.allSatisfy { ["T", "t"].contains(ProcFS.state(pid: pid, tid: $0) ?? "?") }
    }

    /// Open pidfds for the processes, taken before they are killed, so their end is read
    /// from the kernel (POLLIN) rather than from a pid that could be reused.
    static func handles(_ pids: [pid_t]) -> [ProcessHandle] { pids.compactMap { try? ProcessHandle(adopting: $0) } }

    /// Waits (bounded) until every process has ended, on their pidfds.
    static func allEnded(_ handles: [ProcessHandle], seconds: Double = 10) -> Bool {
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        for h in handles {
            while !Poll.ready(h.pidfd, Int16(POLLIN)) {
                let now = Clock.monotonicNanos()
                if now >= deadline { return false }
                _ = try? Poll.wait(h.pidfd, events: Int16(POLLIN), timeoutNanos: deadline - now)
            }
        }
        return true
    }

    /// Checks `condition` every 2 ms until it holds or `seconds` pass: for what the kernel
    /// gives no notification of (a process count, a thread's state, freezer.state).
    static func eventually(seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
        while Clock.monotonicNanos() < deadline {
            if try condition() { return true }
            usleep(2_000)
        }
        return try condition()
    }

    /// The app's frozen time so far in µs (`frozen_usec` in cgroup.stat.local, Linux 6.17),
    /// nil where the kernel does not keep it.
    static func frozenMicros(_ dir: String) -> Int? {
        let text = (try? String(contentsOfFile: dir + "/cgroup.stat.local", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") where line.hasPrefix("frozen_usec ") {
            return Int(line.dropFirst("frozen_usec ".count))
        }
        return nil
    }
}
