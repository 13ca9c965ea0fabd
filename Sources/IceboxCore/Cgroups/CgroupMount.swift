/// One mounted cgroup hierarchy: where, and which of its cgroups the mount shows there. A
/// /proc/PID/cgroup path is relative to the reader's cgroup namespace root, but a mount may show
/// only the subtree at mountinfo's field 4 ("root"): `/` in a private cgroup namespace or on a
/// plain host, a cgroup's own path where the mount shows less than the namespace sees (runc's v1
/// layout, Docker's `--cgroupns=host` and Kubernetes on v1 nodes bind the container's cgroup,
/// `/kubepods/…/ctr`, at /sys/fs/cgroup/<controller>). So a cgroup path P is at `point + (P minus
/// root)` when P is `root` or below it, and invisible otherwise.
package struct CgroupMount: Equatable, Sendable {
    /// Where the hierarchy is mounted (mountinfo field 5).
    package var point: String
    /// The cgroup the mount shows at `point` (mountinfo field 4), as /proc/PID/cgroup writes it.
    package var root: String

    package init(point: String, root: String = "/") {
        self.point = point
        self.root = root
    }

    /// The directory of the cgroup `path` (as /proc/PID/cgroup writes it), or nil when the
    /// mount does not show that cgroup (it is outside the mount's root).
    package func directory(ofCgroup path: String) -> String? {
        let base = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
        let rest: Substring
        if base == "/" {
            guard path.hasPrefix("/") else { return nil }
            rest = path.dropFirst()
        } else if path == base {
            rest = ""
        } else if path.hasPrefix(base + "/") {
            rest = path.dropFirst(base.count + 1)
        } else {
            return nil
        }
        return rest.isEmpty ? point : (point == "/" ? "/" : point + "/") + rest
    }
}
