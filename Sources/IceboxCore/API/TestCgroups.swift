import Glibc
import IceboxSystem
import Synchronization

/// The cgroup roots of an engine started for a test (a ``Supervisor``'s, an ``IceboxDaemon``'s,
/// `Supervisor.hostProblem`'s probe): a fresh one unless one is given, and which were made for
/// it, so that its stop (or its sweeper) removes exactly those.
enum TestCgroups {
    /// Discovers (and makes) the roots for `given` (nil: `<cgroup2 mount>/<prefix>-PID-N`, or
    /// on a host without cgroup2 the same name in the v1 freezer hierarchy); appends the ones
    /// that did not exist before to `owned`.
    static func discover(_ given: String?, prefix: String, owned: inout [String]) -> HostFacts {
        let mounts = CgroupMounts.read()
        var root = given
        // Numbered in this process, for roots no other engine of it shares. Without cgroup2 the
        // root is in the v1 freezer: else it would share the host icebox's <freezer>/icebox.
        if root == nil, let mount = mounts.unified ?? mounts.freezerV1 {
            root = mount + "/\(prefix)-\(getpid())-\(next.add(1, ordering: .relaxed).newValue)"
        }
        // The v1 freezer directory discovery makes mirrors the v2 root's relative path, or is
        // the root itself when that is in the v1 freezer hierarchy.
        let mirrored = root.flatMap { r in mounts.unified.flatMap { r.hasPrefix($0 + "/") ? String(r.dropFirst($0.count)) : nil } }
        let inFreezer = root.flatMap { r in mounts.freezerV1.flatMap { r.hasPrefix($0 + "/") ? r : nil } }
        let freezerExisted =
            mirrored.flatMap { rel in mounts.freezerV1.map { FileIO.exists($0 + rel) } } ?? inFreezer.map(FileIO.exists) ?? true
        let rootExisted = root.map(FileIO.exists) ?? true
        let facts = HostFacts.discover(cgroupRootOverride: root, explicit: given != nil)
        if let root = facts.cgroupRoot, !rootExisted { owned.append(root) }
        if let v1 = facts.freezerV1Root, !freezerExisted { owned.append(v1) }
        // Per-app v1 memory cgroups (hybrid hosts) go under a directory named like the root.
        if let memory = facts.memoryV1Root, !FileIO.exists(memory), given == nil { owned.append(memory) }
        return facts
    }

    /// The root to hand the engine: the one given, else the v2 root made for it, else the v1
    /// freezer directory made for it; nil where neither is usable (the engine then falls back
    /// to SIGSTOP rather than failing on a root it was never asked for).
    static func engineRoot(_ given: String?, _ facts: HostFacts) -> String? {
        if let given { return given }
        if facts.cgroup2Usable { return facts.cgroupRoot }
        return facts.cgroup1Usable ? facts.freezerV1Root : nil
    }

    /// What the sweeper removes if the test process dies: the roots made for the engine
    /// whole, the trees below the ones it was given, and `directories`.
    static func sweep(_ facts: HostFacts, ownedRoots: [String], directories: [String]) -> SupervisorSweeper.Targets {
        let given = [facts.cgroupRoot, facts.freezerV1Root, facts.memoryV1Root].compactMap { $0 }.filter { !ownedRoots.contains($0) }
        return SupervisorSweeper.Targets(cgroupTrees: ownedRoots, cgroupParents: given, directories: directories)
    }

    private static let next = Atomic<Int>(0)
}

/// What was made for an engine started for a test (a ``Supervisor``'s, an ``IceboxDaemon``'s)
/// and goes with its stop: its directories, in the order they are removed, its cgroup roots,
/// and the sweeper that removes them if the test process dies first (nil: not started yet).
struct TestCleanup: Sendable {
    var directories: [String]
    var cgroupRoots: [String]
    var sweeper: SupervisorSweeper?

    /// Removes the cgroup roots (killing what the engine left in them) and the directories,
    /// then dismisses the sweeper; returns the problems: what the engine left in the cgroups
    /// and a cgroup that stayed (only if `reportingCgroups`), a directory that stayed.
    func remove(reportingCgroups: Bool = true) -> [String] {
        let left = Supervisor.removeCgroupRoots(cgroupRoots)
        var problems = reportingCgroups ? left : []
        for dir in directories {
            do { try FileIO.removeTree(dir) } catch { problems.append(error.description) }
        }
        sweeper?.dismiss(until: Supervisor.deadline(after: .seconds(2)))
        return problems
    }
}
