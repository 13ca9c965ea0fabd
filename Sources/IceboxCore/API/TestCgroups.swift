import Glibc
import IceboxSystem
import Synchronization

/// The cgroup roots of an engine started for a test (a ``Supervisor``'s, an ``IceboxDaemon``'s,
/// `Supervisor.hostProblem`'s probe): a fresh root of its own unless one is given, and which
/// roots were made for it, so that its stop (or its sweeper) removes exactly those.
enum TestCgroups {
    /// Discovers (and makes) the roots for `given` (nil: `<cgroup2 mount>/<prefix>-PID-N`);
    /// appends the ones that did not exist before to `owned`.
    static func discover(_ given: String?, prefix: String, owned: inout [String]) -> HostFacts {
        let mounts = CgroupMounts.read()
        var root = given
        if root == nil, let unified = mounts.unified {
            // Numbered in this process, for roots no other engine of it shares.
            root = unified + "/\(prefix)-\(getpid())-\(next.add(1, ordering: .relaxed).newValue)"
        }
        // The v1 freezer directory discovery makes mirrors the v2 root's relative path.
        let mirrored = root.flatMap { r in mounts.unified.flatMap { r.hasPrefix($0 + "/") ? String(r.dropFirst($0.count)) : nil } }
        let freezerExisted = mirrored.flatMap { rel in mounts.freezerV1.map { FileIO.exists($0 + rel) } } ?? true
        let rootExisted = root.map(FileIO.exists) ?? true
        let facts = HostFacts.discover(cgroupRootOverride: root, explicit: given != nil)
        if let root = facts.cgroupRoot, !rootExisted { owned.append(root) }
        if let v1 = facts.freezerV1Root, !freezerExisted { owned.append(v1) }
        // Per-app v1 memory cgroups (hybrid hosts) go under a directory named like the root.
        if let memory = facts.memoryV1Root, !FileIO.exists(memory), given == nil { owned.append(memory) }
        return facts
    }

    /// What the sweeper removes if the test process dies: the roots made for the engine
    /// whole, the trees below the ones it was given, and `directories`.
    static func sweep(_ facts: HostFacts, ownedRoots: [String], directories: [String]) -> SupervisorSweeper.Targets {
        var targets = SupervisorSweeper.Targets(cgroupTrees: ownedRoots, directories: directories)
        targets.cgroupParents = [facts.cgroupRoot, facts.freezerV1Root, facts.memoryV1Root].compactMap { $0 }.filter {
            !ownedRoots.contains($0)
        }
        return targets
    }

    private static let next = Atomic<Int>(0)
}
