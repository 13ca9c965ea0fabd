// Shared by the test targets: why a test cannot make cgroups where this host mounts them.
import Glibc

/// Why no cgroup can be made under the cgroup2 mount at `mount` (nil: no cgroup2 is mounted
/// at all), or nil if one can: as root, on a mount that is not read-only. The tests that make
/// cgroups of their own skip with this reason on the layouts that lack them (scripts/test-layouts).
public func cgroup2Unwritable(_ mount: String?) -> String? {
    if getuid() != 0 { return "needs root to make cgroups" }
    guard let mount else { return "no cgroup2 filesystem is mounted" }
    return cgroupMountReadOnly(mount)
}

/// "the cgroup filesystem at `mount` is mounted read-only" if it is (as container runtimes
/// mount it), else nil.
public func cgroupMountReadOnly(_ mount: String) -> String? {
    var fs = statvfs()
    guard statvfs(mount, &fs) == 0, fs.f_flag & UInt(ST_RDONLY) != 0 else { return nil }
    return "the cgroup filesystem at \(mount) is mounted read-only (the test makes cgroups of its own)"
}
