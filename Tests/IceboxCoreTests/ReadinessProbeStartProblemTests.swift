import Glibc
import IceboxSystem
import IceboxTestSupport
import Testing

@testable import IceboxCore

/// A readiness probe that cannot even start is a failed attempt, and says why once (the
/// daemon logs it), instead of the ready timeout saying only "not ready".
@Suite struct ReadinessProbeStartProblemTests {
    @Test func aProbeThatCannotBePutInTheAppsCgroupSaysWhyOnce() throws {
        let dir = makeTemporaryDirectory("probe-start")
        defer { removeTree(dir) }
        let gone = dir + "/removed-cgroup"  // never made: its cgroup.procs cannot be opened
        let cgroups = AppCgroups.adopt(v2: gone, freezerV1: nil, memoryV1: nil)
        defer { cgroups.close() }
        let probe = ReadinessProbe(mode: .command("exit 0"))
        let first = probe.start(environment: ["PATH=/usr/bin:/bin"], cwd: nil, cgroups: cgroups)
        #expect(first == .notReady, "not run outside the app's cgroups")
        let said = try #require(probe.takeStartProblem())
        #expect(said.contains(gone) && said.contains("No such file or directory"), "\(said)")
        #expect(probe.takeStartProblem() == nil, "taken once")
        #expect(probe.start(environment: ["PATH=/usr/bin:/bin"], cwd: nil, cgroups: cgroups) == .notReady)
        #expect(probe.takeStartProblem() == nil, "the same reason is not said again")
        #expect(probe.attempts == 2)
    }
}
