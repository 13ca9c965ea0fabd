import Glibc
import IceboxCore
import IceboxSystem
import IceboxTestSupport

/// Uniquely named cgroup roots for one test, one per hierarchy this host has
/// (`<cgroup2 mount>/icebox-test-<pid>-<random>`, the same under the v1 freezer and memory
/// mounts), found through /proc/self/mountinfo. `cleanup()` kills whatever is inside (thawing
/// v1 freezers and lifting v1 memory limits so nothing stays stuck) and removes it all,
/// sub-cgroups first: call it in a defer, so a failing test leaves nothing behind.
final class CgroupTestRoots {
    static let mounts = CgroupMounts.read()
    static var hasV2: Bool { v2Unavailable == nil }
    /// Why this host gives a test no cgroup2 root of its own (not root, no cgroup2 mount, a
    /// read-only one), or nil.
    static var v2Unavailable: String? { cgroup2Unwritable(mounts.unified) }
    static var hasFreezerV1: Bool { hasV2 && mounts.freezerV1 != nil }
    static var hasMemoryV1: Bool { hasV2 && mounts.memoryV1 != nil }

    let v2: String
    let freezerV1: String?
    let memoryV1: String?

    init() {
        let name = "icebox-test-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
        v2 = Self.mounts.unified! + "/" + name
        freezerV1 = Self.mounts.freezerV1.map { $0 + "/" + name }
        memoryV1 = Self.mounts.memoryV1.map { $0 + "/" + name }
    }

    /// A directory under the v1 memory root with a hard limit and the OOM killer off: a process
    /// in it that allocates past the limit waits in uninterruptible sleep (state D) until the
    /// limit is raised. The way to make a task no freezer can freeze.
    func oomTrap(limit: String = "16M") throws -> String {
        guard let memoryV1 else { throw SystemError("find the v1 memory hierarchy", errno: ENOENT) }
        let dir = memoryV1 + "/oom-trap"
        try FileIO.makeDirectories(dir)
        try FileIO.write(dir + "/memory.limit_in_bytes", limit)
        try FileIO.write(dir + "/memory.oom_control", "1")
        return dir
    }

    /// A python3 child in `cgroups` and in the OOM trap (`oomTrap()`), touching 64 MiB page by
    /// page against its 16 MiB: it waits in the memory cgroup's OOM wait (state D) until the
    /// trap's limit is raised (`trap` + "/memory.limit_in_bytes" to -1).
    func childInOOMWait(in cgroups: AppCgroups) throws -> (child: CgroupChild, trap: String) {
        let trap = try oomTrap()
        let trapProcs = try FileIO.openDescriptor(trap + "/cgroup.procs", flags: O_WRONLY)
        defer { close(trapProcs) }
        let child = try CgroupChild(
            [
                ScriptChild.python, "-c",
                "b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nimport time; time.sleep(3600)",
            ], in: cgroups, v1MemoryProcsFD: trapProcs)
        return (child, trap)
    }

    /// Whether the child waits in the trap's OOM wait now: the trap under OOM and the child in
    /// D (a D alone may be a page-in during start-up).
    /// Asks the kernel again to wake the trap's OOM waiters (memcg_oom_recover, through a 0
    /// written to memory.oom_control: with the limit lifted nothing is killed) while `child` is
    /// still in the OOM wait. Lifting the limit wakes them once, and that wake-up can be lost:
    /// the rollback's thaw wakes the waiter too (a cgroup2 thaw wakes even a killable sleep), it
    /// retries its charge against the old limit, and if that fails just before the limit is
    /// lifted it queues itself for the wait after the wake-up went out. A CI run found it so,
    /// in mem_cgroup_oom_synchronize with under_oom 1, 30 s after the limit was lifted.
    static func wakeOOMWaiter(_ child: CgroupChild, trap: String) {
        guard readFile("/proc/\(child.pid)/wchan") == "mem_cgroup_oom_synchronize" else { return }
        // A write refused leaves the waiter as it was, which the caller's check then reports.
        try? FileIO.write(trap + "/memory.oom_control", "0")
    }

    static func waitsInOOM(_ child: CgroupChild, trap: String) -> Bool {
        readFile(trap + "/memory.oom_control")?.contains("under_oom 1") == true && ProcFS.stat(pid: child.pid)?.state == "D"
    }

    func cleanup() {
        // Release OOM waiters first: a task stuck in D state cannot act on SIGKILL.
        if let memoryV1 {
            for dir in CgroupTree.directoriesBottomUp(memoryV1) where FileIO.exists(dir + "/memory.limit_in_bytes") {
                try? FileIO.write(dir + "/memory.limit_in_bytes", "-1")
            }
        }
        if FileIO.exists(v2 + "/cgroup.kill") { try? FileIO.write(v2 + "/cgroup.kill", "1") }
        let deadline = Clock.monotonicNanos() + 10_000_000_000
        while Clock.monotonicNanos() < deadline {
            let pids = [v2, freezerV1, memoryV1].compactMap { $0 }.flatMap { CgroupTree.processes($0) }
            if pids.isEmpty { break }
            for pid in pids { kill(pid, SIGKILL) }
            if let freezerV1 {
                for dir in CgroupTree.directoriesBottomUp(freezerV1) { try? FileIO.write(dir + "/freezer.state", "THAWED") }
            }
            usleep(2_000)
        }
        for root in [v2, freezerV1, memoryV1].compactMap({ $0 }) {
            for problem in CgroupTree.remove(root) { print("cleanup: \(problem)") }
        }
    }
}

/// A child spawned straight into an app's cgroups (through `AppCgroups.spawnDescriptors`).
/// SIGKILLed and reaped in deinit; its own children die with the test's cgroups.
final class CgroupChild {
    let handle: ProcessHandle
    var pid: pid_t { handle.pid }

    /// `sh -c script` (or any program) in the cgroups; `v1MemoryProcsFD` overrides the
    /// memory cgroup to join (an OOM trap).
    init(_ arguments: [String], in cgroups: AppCgroups, v1MemoryProcsFD: Int32 = -1) throws {
        let executable = arguments[0].contains("/") ? arguments[0] : "/bin/sh"
        let argv = arguments[0].contains("/") ? arguments : ["sh", "-c", arguments.joined(separator: " ")]
        var request = SpawnRequest(
            executable: executable, arguments: argv, environment: ["PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONUNBUFFERED=1"])
        let descriptors = try cgroups.spawnDescriptors()
        descriptors.apply(to: &request)
        if v1MemoryProcsFD >= 0 { request.v1MemoryProcsFD = v1MemoryProcsFD }
        handle = try Spawner.spawn(request).handle
        descriptors.close()
    }

    var isAlive: Bool {
        guard let state = ProcFS.stat(pid: pid)?.state else { return false }
        return state != "Z" && state != "X"
    }

    deinit {
        _ = try? handle.send(SIGKILL)
        _ = try? handle.wait(until: Clock.monotonicNanos() + 10_000_000_000)
    }
}

/// Steps an operation the way an event loop would: step, then wait in poll(2) on the watch
/// descriptor until the re-check time. Records how long each step took, less the time this
/// thread spent runnable but waiting for a CPU (its run-queue delay in
/// /proc/thread-self/schedstat): a step that blocks still counts whole, while a test process
/// descheduled for 300 ms by a loaded machine (the whole suite runs in parallel on 2 CPUs)
/// does not make a non-blocking step look slow.
struct Stepper {
    var steps = 0
    var waits = 0
    var longestStepNanos: UInt64 = 0

    /// Nanoseconds this thread has waited on a run queue so far (0 where schedstat is absent).
    static func runQueueWait() -> UInt64 {
        let text = (try? FileIO.read("/proc/thread-self/schedstat")) ?? ""
        let fields = text.split(separator: " ")
        return fields.count > 1 ? UInt64(fields[1]) ?? 0 : 0
    }

    /// How long `body` took, less its run-queue wait.
    static func timed<T>(_ body: () -> T) -> (T, UInt64) {
        let before = Clock.monotonicNanos(), queuedBefore = runQueueWait()
        let result = body()
        let wall = Clock.monotonicNanos() - before
        return (result, wall.saturatingSub(runQueueWait().saturatingSub(queuedBefore)))
    }

    mutating func run(_ operation: inout FreezeOperation) -> FreezeProgress {
        run(from: timedStep { operation.step(now: Clock.monotonicNanos()) }) { now in operation.step(now: now) }
    }

    mutating func run(destroy cgroups: AppCgroups, first: DestroyProgress) -> DestroyProgress {
        run(from: first) { now in cgroups.stepDestroy(now: now) }
    }

    /// The product's driver (`Stepping.run`), each later step timed and counted.
    private mutating func run<P: StepProgress>(from first: P, step: (UInt64) -> P) -> P {
        Stepping.run(from: first) { now in
            waits += 1
            return timedStep { step(now) }
        }
    }

    private mutating func timedStep<P>(_ step: () -> P) -> P {
        let (progress, took) = Self.timed(step)
        longestStepNanos = max(longestStepNanos, took)
        steps += 1
        return progress
    }
}

/// Waits (bounded) until `condition` holds, re-checking every millisecond.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Clock.monotonicNanos() + UInt64(seconds * 1e9)
    while Clock.monotonicNanos() < deadline {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

/// Every thread of the process in state T (stopped), read from /proc.
func allThreadsStopped(_ pid: pid_t) -> Bool {
    let threads = ProcFS.threads(of: pid)
    return !threads.isEmpty && threads.allSatisfy { ProcFS.state(pid: pid, tid: $0) == "T" }
}

func anyThreadStopped(_ pid: pid_t) -> Bool {
    ProcFS.threads(of: pid).contains { ProcFS.state(pid: pid, tid: $0) == "T" }
}

func inode(_ path: String) -> UInt64? {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_ino) : nil
}
