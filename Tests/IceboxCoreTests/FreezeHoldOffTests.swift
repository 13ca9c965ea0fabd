import Glibc
import IceboxCore
import IceboxSystem
import Testing

/// A freeze told how long the kernel will take at least (`expectDuration(atLeast:)`, from the
/// app's recent freezes) looks once right after its write, then not again before that time,
/// and is still confirmed. Real processes, real cgroups: the task to freeze waits in a v1
/// memory cgroup's OOM wait (state D), where no freezer reaches it, until the test lets it go.
@Suite(
    .enabled(
        if: CgroupTestRoots.hasV2 && CgroupTestRoots.hasMemoryV1 && ScriptChild.available,
        "needs root, cgroup2, a cgroup v1 memory hierarchy (its OOM wait holds a task unfrozen) and python3"),
    .timeLimit(.minutes(1)))
struct FreezeHoldOffTests {
    static let holdOff: UInt64 = 3_000_000

    @Test("cgroup2: no re-read before the expected time; the freeze is confirmed")
    func cgroup2() throws { try check(.cgroup2) }

    @Test(
        "v1 freezer: no re-read before the expected time, and none sooner (no notification); confirmed",
        .enabled(if: CgroupTestRoots.hasFreezerV1, "needs a cgroup v1 freezer hierarchy"))
    func cgroup1() throws { try check(.cgroup1) }

    func check(_ backend: BackendKind) throws {
        let roots = CgroupTestRoots()
        defer { roots.cleanup() }
        let cgroups = try AppCgroups.create(
            name: "app", v2Root: roots.v2, freezerV1Root: backend == .cgroup1 ? roots.freezerV1 : nil, memoryV1Root: nil,
            backend: backend)
        let (child, trap) = try roots.childInOOMWait(in: cgroups)
        defer { withExtendedLifetime(child) {} }  // killed and reaped (deinit) when the test ends
        let freezer: any Freezer =
            backend == .cgroup1
            ? try #require(cgroups.freezerV1) : Cgroup2Freezer(cgroup: Cgroup2(path: try #require(cgroups.v2Path)))
        var held = false
        for _ in 0..<4 where !held {
            try #require(
                eventually { CgroupTestRoots.waitsInOOM(child, trap: trap) }, "the child never got stuck in the OOM wait (D state)")
            let start = Clock.monotonicNanos()
            var op = freezer.beginFreeze(now: start, deadline: start + 5_000_000_000)
            op.expectDuration(atLeast: Self.holdOff)
            guard case .waiting(let recheckAt, _) = op.step(now: Clock.monotonicNanos()) else {
                // The OOM wait ended on its own and the task froze: thaw and try again.
                _ = try op.wait()
                _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
                continue
            }
            held = true
            #expect(recheckAt >= start + Self.holdOff, "the next look waits for the expected time")
            try FileIO.write(trap + "/memory.limit_in_bytes", "-1")
            let report = try op.wait()
            if backend == .cgroup1 {
                #expect(report.durationNanos >= Self.holdOff, "with no notification, nothing looks sooner")
            }
            _ = try freezer.thaw(deadline: Clock.monotonicNanos() + 5_000_000_000)
        }
        #expect(held, "the task left the OOM wait on its own in every try")
    }
}
