import IceboxSystem

/// The capabilities the daemon keeps, each with what it is used for; `icebox daemon` drops
/// every other one (permitted, effective, inheritable) as it starts, before any other thread
/// exists, against a bug in its own code doing what it never needs. The bounding set stays:
/// an app launched without --user by a root daemon still gets root's capabilities.
package enum DaemonCapabilities {
    package struct Kept: Sendable {
        package var name: String
        package var why: String
        /// false: kept in the permitted set only, raised with `Capabilities.withEffective`.
        package var effective = true
    }

    package static let kept: [Kept] = [
        Kept(name: "cap_kill", why: "signals to apps run as another user (--user) and freeze --pid of other users' processes"),
        Kept(name: "cap_setuid", why: "--user: the app's setresuid"),
        Kept(name: "cap_setgid", why: "--user: the app's setgroups and setresgid"),
        Kept(name: "cap_setpcap", why: "--user: emptying the app's capability bounding set"),
        Kept(name: "cap_chown", why: "--user: giving the app its notify socket"),
        Kept(
            name: "cap_dac_override",
            why: "cgroup files owned by another user, and the program, --cwd and log of an app launched as root"),
        Kept(
            name: "cap_dac_read_search", why: "reaching the program and --cwd of an app launched as root through other users' directories"),
        Kept(
            name: "cap_sys_ptrace",
            why: "/proc/PID/smaps_rollup and process_madvise on apps of another user or with more capabilities than the daemon"),
        Kept(name: "cap_sys_nice", why: "process_madvise (compaction) on another process, and SCHED_FIFO for a thaw's write and read-back"),
        Kept(name: "cap_sys_resource", why: "PSI triggers with windows that are not multiples of 2 s"),
        Kept(name: "cap_ipc_lock", why: "locking the daemon's own program image in memory (mlock) past RLIMIT_MEMLOCK"),
        Kept(
            name: "cap_sys_admin",
            why: "--pid-namespace: the clone3(CLONE_NEWPID) of such a launch (permitted only: effective just around that call)",
            effective: false),
    ]

    /// What `--pid-namespace` needs the daemon to have permitted (raised around the clone).
    package static let neededForPIDNamespace = "cap_sys_admin"

    /// What `--user` needs the daemon to have in its effective set.
    package static let neededForUser = ["cap_setuid", "cap_setgid", "cap_setpcap", "cap_chown"]

    /// The capability only a speed mechanism needs: left out with it.
    static let neededOnlyBy: [SpeedMechanism: String] = [.imageLock: "cap_ipc_lock"]

    /// Drops every capability not in `kept`, and those only `without`'s mechanisms need; the names
    /// dropped.
    package static func dropUnused(without: Set<SpeedMechanism> = []) throws(SystemError) -> [String] {
        let unneeded = Set(without.compactMap { neededOnlyBy[$0] })
        let keep = kept.filter { !unneeded.contains($0.name) }
        return try Capabilities.keepOnly(Set(keep.map(\.name)), permittedOnly: Set(keep.filter { !$0.effective }.map(\.name)))
    }

    /// Whether this process can launch an app with `--pid-namespace` (CAP_SYS_ADMIN permitted).
    package static func canMakePIDNamespaces() -> Bool {
        Capabilities.hasPermitted(neededForPIDNamespace) == true
    }

    /// The capabilities `--user` needs that this process lacks.
    package static func missingForUser() -> [String] {
        neededForUser.filter { Capabilities.hasEffective($0) != true }
    }
}
