import Glibc
import IceboxSystem

/// A process's cgroup (/proc/PID/cgroup) as a directory under the mount (`CgroupMount`): whether an
/// app's process is still in the cgroup that freezes it, or a notify sender is the app's.
package enum CgroupMembership {
    /// The cgroup of `pid` in the hierarchy mounted at `mount`: the v2 one when `controller` is
    /// nil, else the v1 hierarchy with that controller (`freezer`). nil when the process is gone,
    /// not in that hierarchy, or in a cgroup the mount does not show.
    package static func path(of pid: pid_t, controller: String? = nil, mount: CgroupMount, procRoot: String = "/proc") -> String? {
        // Documented: nil for a process gone (no /proc/PID/cgroup), as for one outside.
        guard let text = try? FileIO.read("\(procRoot)/\(pid)/cgroup") else { return nil }
        return path(in: text, controller: controller, mount: mount)
    }

    /// The same, from the text of /proc/PID/cgroup ("0::/a/b" for v2, "7:freezer:/a/b" for v1;
    /// a v1 line may name several controllers, "4:cpu,cpuacct:/a").
    package static func path(in text: String, controller: String?, mount: CgroupMount) -> String? {
        let relative = controller.map { v1Cgroup(in: text, controller: $0) } ?? ProcFS.unifiedCgroup(in: text)
        return relative.flatMap(mount.directory(ofCgroup:))
    }

    /// The path of the v1 line that names `controller` among its controllers.
    static func v1Cgroup(in text: String, controller: String) -> String? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[0] != "0" else { continue }
            if fields[1].split(separator: ",").contains(where: { $0 == controller }) { return String(fields[2]) }
        }
        return nil
    }

    /// Whether the cgroup `path` is `dir` or one of its sub-cgroups.
    package static func isWithin(_ path: String, _ dir: String) -> Bool { path == dir || path.hasPrefix(dir + "/") }
}
