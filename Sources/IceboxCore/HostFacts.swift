import Glibc
import IceboxSystem

/// What this host offers icebox, discovered at run time (never assumed): the cgroup
/// hierarchies, where icebox's cgroup root is, and which freezer backends work.
public struct HostFacts: Sendable {
    public var mounts: CgroupMounts
    /// The v2 directory under which icebox makes one cgroup per app.
    public var cgroupRoot: String?
    /// Why the v2 root cannot be used, if it cannot.
    public var cgroupRootProblem: String?
    public var cgroupRootPermissionDenied = false
    /// The v1 freezer directory for icebox's apps (same relative path as the v2 root).
    public var freezerV1Root: String?
    public var freezerV1Problem: String?
    /// Where per-app v1 memory cgroups go on hybrid hosts (no v2 memory controller): under
    /// the daemon's own v1 memory cgroup, so limits set above it still hold.
    public var memoryV1Root: String?

    /// --cgroup-root or ICEBOX_CGROUP_ROOT, else `<cgroup2 mount>/icebox`.
    public static func discover(cgroupRootOverride: String?, mountinfo: String = "/proc/self/mountinfo") -> HostFacts {
        let mounts = CgroupMounts.read(path: mountinfo)
        var facts = HostFacts(mounts: mounts)
        if let unified = mounts.unified {
            let root = cgroupRootOverride ?? unified + "/icebox"
            facts.cgroupRoot = root
            do {
                try FileIO.makeDirectories(root)
                if !FileIO.exists(root + "/cgroup.procs") {
                    facts.cgroupRootProblem = "\(root) is not inside the cgroup2 filesystem at \(unified)"
                } else if access(root + "/cgroup.procs", W_OK) != 0 || access(root, W_OK) != 0 {
                    facts.cgroupRootProblem = "no write permission on \(root)"
                    facts.cgroupRootPermissionDenied = true
                } else if !FileIO.exists(root + "/cgroup.freeze") && cgroupRootOverride == nil {
                    facts.cgroupRootProblem = "the kernel has no cgroup v2 freezer (cgroup.freeze needs Linux 5.2)"
                }
            } catch {
                facts.cgroupRootProblem = error.description
                facts.cgroupRootPermissionDenied = error.isPermissionDenied
            }
        } else {
            facts.cgroupRootProblem = "no cgroup2 filesystem is mounted (see /proc/self/mountinfo)"
        }
        if let memory = mounts.memoryV1, let root = facts.cgroupRoot, !FileIO.exists(root + "/memory.current"),
            let own = try? FileIO.read("/proc/self/cgroup")
        {
            let line = own.split(separator: "\n").first {
                $0.split(separator: ":").dropFirst().first?.split(separator: ",").contains("memory") == true
            }
            let path = line.map { String($0.split(separator: ":", maxSplits: 2).last ?? "/") } ?? "/"
            let base = root.split(separator: "/").last.map(String.init) ?? "icebox"
            facts.memoryV1Root = memory + (path == "/" ? "" : path) + "/" + base
        }
        if let freezer = mounts.freezerV1 {
            var relative = "/icebox"
            if let root = facts.cgroupRoot, let unified = mounts.unified, root.hasPrefix(unified + "/") {
                relative = String(root.dropFirst(unified.count))
            }
            let dir = freezer + relative
            facts.freezerV1Root = dir
            do {
                try FileIO.makeDirectories(dir)
                if access(dir, W_OK) != 0 { facts.freezerV1Problem = "no write permission on \(dir)" }
            } catch {
                facts.freezerV1Problem = error.description
            }
        } else {
            facts.freezerV1Problem = "no cgroup v1 freezer hierarchy is mounted"
        }
        return facts
    }

    public var cgroup2Usable: Bool { cgroupRoot != nil && cgroupRootProblem == nil }
    public var cgroup1Usable: Bool { freezerV1Root != nil && freezerV1Problem == nil }

    /// The backend for a request: `auto` picks cgroup2, else cgroup1, else signal.
    public func resolve(_ requested: BackendChoice) throws(IceboxError) -> BackendKind {
        switch requested {
        case .auto:
            if cgroup2Usable { return .cgroup2 }
            if cgroup1Usable { return .cgroup1 }
            return .signal
        case .cgroup2:
            if cgroup2Usable { return .cgroup2 }
            throw IceboxError(
                cgroupRootPermissionDenied ? .permission : .unavailable,
                "backend cgroup2 is unavailable: \(cgroupRootProblem ?? "unknown")",
                hint: cgroupRootPermissionDenied
                    ? "run as root or point --cgroup-root at a delegated subtree; see icebox doctor"
                    : "use --backend cgroup1 or signal; see icebox doctor")
        case .cgroup1:
            if cgroup1Usable { return .cgroup1 }
            throw IceboxError(
                .unavailable, "backend cgroup1 is unavailable: \(freezerV1Problem ?? "unknown")",
                hint: "mount the v1 freezer (mount -t cgroup -o freezer none /sys/fs/cgroup/freezer) or use --backend cgroup2 or signal")
        case .signal:
            return .signal
        }
    }

    public var supportsCgroupKill: Bool { cgroupRoot.map { FileIO.exists($0 + "/cgroup.kill") } ?? false }

    public static var pidfdWorks: Bool { ProcessHandle.pidfdWorks }
}
