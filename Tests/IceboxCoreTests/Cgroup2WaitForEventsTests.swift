import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// `Cgroup2.waitForEvents`, the blocking wait on cgroup.events that `Supervisor` and the tests
/// use, driven by `Stepping.run`. It must end at its deadline with the last state read when the
/// condition never holds, and as soon as it holds (the kernel's notification wakes it).
/// Real processes, a real cgroup.
@Suite(.enabled(if: CgroupTestRoots.hasV2, "\(CgroupTestRoots.v2Unavailable ?? "")"), .timeLimit(.minutes(5)))
struct Cgroup2WaitForEventsTests {
    @Test("false, with the state last read, at its deadline; true once the cgroup empties")
    func deadlineThenCondition() throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroup = Cgroup2(path: roots.v2)
        try cgroup.create()
        var request = SpawnRequest(executable: "/bin/sleep", arguments: ["sleep", "1000"], environment: [])
        request.cgroupDirFD = try cgroup.openDirectory()
        defer { close(request.cgroupDirFD) }
        let child = try Spawner.spawn(request).handle

        let start = Clock.monotonicNanos()
        let waited = try cgroup.waitForEvents(until: start + 100_000_000) { !$0.populated }
        let took = Clock.monotonicNanos() - start
        #expect(!waited.satisfied && waited.events.populated, "\(waited)")
        #expect(took >= 100_000_000, "returned \(took) ns into a wait of 100 ms")
        // Not a speed figure: a bound far above any schedule, against a wait that overruns its
        // deadline (a re-read time past it, a sleep that ignores it).
        #expect(took < 5_000_000_000, "a wait of 100 ms took \(took) ns")

        try child.send(SIGKILL)
        let emptied = try cgroup.waitForEvents(until: Clock.monotonicNanos() + 10_000_000_000) { !$0.populated }
        #expect(emptied.satisfied && !emptied.events.populated, "\(emptied)")
        #expect(try child.wait(until: Clock.monotonicNanos() + 10_000_000_000) != nil)
    }
}
