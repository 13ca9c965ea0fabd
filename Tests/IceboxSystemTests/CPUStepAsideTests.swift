import Dispatch
import Foundation
import Glibc
import Testing

@testable import IceboxSystem

/// The CPUs a process or thread may run on, read and set as other programs do.
enum ThreadCPUs {
    /// The CPUs a process or thread may run on, from its Cpus_allowed_list ("0-1", "0,2-3").
    static func allowed(pid: pid_t) -> Set<Int> { allowed(status: "/proc/\(pid)/status") }

    static func allowedHere() -> Set<Int> { allowed(status: "/proc/thread-self/status") }

    static func allowed(status path: String) -> Set<Int> {
        guard let status = try? String(contentsOfFile: path, encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return [] }
        var cpus: Set<Int> = []
        for part in line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces).split(separator: ",") {
            let ends = part.split(separator: "-").compactMap { Int($0) }
            if let first = ends.first { cpus.formUnion(first...(ends.last ?? first)) }
        }
        return cpus
    }

    /// Sets the calling thread's CPUs from outside it, as another program would: taskset,
    /// given the thread's id (sched_setaffinity is not in Swift's Glibc).
    static func setAllowed(_ cpus: Set<Int>) throws {
        let thread = try #require(FileIO.readLink("/proc/thread-self")?.split(separator: "/").last)
        let taskset = Process()
        taskset.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        taskset.arguments = ["-p", "-c", cpus.sorted().map(String.init).joined(separator: ","), String(thread)]
        taskset.standardOutput = FileHandle.nullDevice
        try taskset.run()
        taskset.waitUntilExit()
        try #require(taskset.terminationStatus == 0, "taskset exited \(taskset.terminationStatus)")
    }
}

/// CPUStepAside on a thread of the test's own, so the CPUs it takes away and gives back are
/// never those of a thread other tests run on.
@Suite(
    "The daemon's thread off its CPU while a freeze waits",
    .enabled(if: ThreadCPUs.allowed(pid: getpid()).count >= 2, "needs two CPUs or more to step aside to"),
    .enabled(if: access("/usr/bin/taskset", X_OK) == 0, "needs taskset (util-linux) to change a thread's CPUs from outside"))
struct CPUStepAsideTests {
    struct Seen: Sendable {
        var before: Set<Int> = [], aside: Set<Int> = [], asideFlag = false, after: Set<Int> = []
        var afterFlag = true
    }

    @Test("aside: every CPU but one (the one it ran on); back: the set it had")
    func stepsAsideAndBack() throws {
        let seen = try OwnThread.run {
            var seen = Seen()
            seen.before = ThreadCPUs.allowedHere()
            let step = CPUStepAside(enabled: true)
            step.settle(freezeWaits: true)
            seen.aside = ThreadCPUs.allowedHere()
            seen.asideFlag = CPUStepAside.isAside
            step.settle(freezeWaits: true)  // already aside: nothing more is taken
            guard ThreadCPUs.allowedHere() == seen.aside else { throw Failure("a second settle changed the set") }
            step.settle(freezeWaits: false)
            seen.after = ThreadCPUs.allowedHere()
            seen.afterFlag = CPUStepAside.isAside
            return seen
        }
        #expect(seen.aside.isSubset(of: seen.before) && seen.aside.count == seen.before.count - 1, "\(seen.before) → \(seen.aside)")
        #expect(seen.asideFlag)
        #expect(seen.after == seen.before)
        #expect(!seen.afterFlag)
    }

    @Test("disabled (an engine embedded in a test process): the thread keeps its CPUs")
    func disabledChangesNothing() {
        let (before, after) = OwnThread.run {
            let before = ThreadCPUs.allowedHere()
            CPUStepAside(enabled: false).settle(freezeWaits: true)
            return (before, ThreadCPUs.allowedHere())
        }
        #expect(after == before)
    }

    /// Apps spawned while a freeze waits (a launch served meanwhile) start with the daemon's
    /// own CPUs, not the narrowed set: the spawn steps the thread back first.
    @Test("a spawn while aside: the child gets the set the thread had, and the thread is back")
    func spawnGivesTheChildTheWholeSet() throws {
        let (before, child, thread, flag) = try OwnThread.run {
            let before = ThreadCPUs.allowedHere()
            CPUStepAside(enabled: true).settle(freezeWaits: true)
            guard CPUStepAside.isAside else { throw Failure("did not step aside") }
            let spawned = try Spawner.spawn(SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "100"], environment: []))
            defer {
                _ = try? spawned.handle.send(SIGKILL)
                _ = try? spawned.handle.wait(until: Clock.monotonicNanos() &+ 5_000_000_000)
            }
            return (before, ThreadCPUs.allowed(pid: spawned.handle.pid), ThreadCPUs.allowedHere(), CPUStepAside.isAside)
        }
        #expect(child == before, "the app's CPUs")
        #expect(thread == before, "the spawner's CPUs after the spawn")
        #expect(!flag)
    }

    @Test("a set someone else gave the thread meanwhile is left as it is")
    func leavesAnotherSetAlone() throws {
        let (chosen, after) = try OwnThread.run {
            let before = ThreadCPUs.allowedHere()
            CPUStepAside(enabled: true).settle(freezeWaits: true)
            // The CPU it stepped away from: a set unlike the one it was given.
            let chosen: Set<Int> = [try #require(before.subtracting(ThreadCPUs.allowedHere()).first)]
            try ThreadCPUs.setAllowed(chosen)
            defer { try? ThreadCPUs.setAllowed(before) }
            CPUStepAside(enabled: true).settle(freezeWaits: false)
            return (chosen, ThreadCPUs.allowedHere())
        }
        #expect(after == chosen)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
