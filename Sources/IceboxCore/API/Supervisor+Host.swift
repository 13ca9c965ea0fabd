import Glibc

extension Supervisor {
    /// Why a supervisor started now would find no usable cgroup v2 root (no cgroup2 mount, or
    /// no right to make cgroups in it), or nil. For a suite to skip with the reason:
    ///
    /// ```swift
    /// @Suite(.enabled(if: Supervisor.hostProblem == nil, "\(Supervisor.hostProblem ?? "")"))
    /// struct FreezeTests { ... }
    /// ```
    ///
    /// It tries for real: a probe cgroup is made where ``start(runtimeDirectory:stateDirectory:cgroupRoot:readyTimeout:)``
    /// would make its root, then removed.
    public static var hostProblem: String? {
        guard CgroupMounts.read().unified != nil else { return "no cgroup2 filesystem is mounted" }
        var made: [String] = []
        let facts = TestCgroups.discover(nil, prefix: "icebox-probe", owned: &made)
        for root in made { rmdir(root) }
        return facts.cgroup2Usable ? nil : "no usable cgroup v2 root: \(facts.cgroupRootProblem ?? "unknown")"
    }
}
