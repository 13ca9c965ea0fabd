import Glibc
import IceboxSystem

/// A cgroup directory and its sub-cgroups, in any hierarchy. An app may make sub-cgroups
/// (systemd-style services, container runtimes); its processes there are still the app's, and its
/// directory goes only after them (rmdir of a cgroup with children is EBUSY).
package enum CgroupTree {
    /// Every directory of the subtree, children before their parent, the root last; empty when
    /// the root does not exist. A directory that vanishes during the walk is still listed, without
    /// its children: both callers expect a listed directory may be gone.
    package static func directoriesBottomUp(_ root: String) -> [String] {
        guard FileIO.isDirectory(root) else { return [] }
        return walk(root)
    }

    /// `directoriesBottomUp` without the check that the root exists. A directory whose link count
    /// is 2 has no subdirectory (cgroupfs counts 2 + its subdirectories, as ext4 and tmpfs do) and
    /// is not listed: one lstat instead of open, fstat, two getdents and close at every confirmed
    /// freeze and thaw of an app without sub-cgroups. Any other count (btrfs says 1) is listed.
    /// `rootStatus`: the root's fstat from a descriptor its owner keeps (no walk of its path: 13 µs
    /// of each confirmed freeze and thaw, traced).
    private static func walk(_ root: String, rootStatus: stat? = nil) -> [String] {
        var out: [String] = []
        func status(_ dir: String) -> stat? {
            if dir == root, let rootStatus { return rootStatus }
            var st = stat()
            return lstat(dir, &st) == 0 ? st : nil
        }
        func visit(_ dir: String) {
            let leaf = status(dir).map { $0.st_mode & S_IFMT == S_IFDIR && $0.st_nlink == 2 } ?? false
            if !leaf {
                // Unlistable: removed meanwhile (no children); a remover reports any that stays.
                for name in (try? FileIO.listDirectories(dir)) ?? [] { visit(dir + "/" + name) }
            }
            out.append(dir)
        }
        visit(root)
        return out
    }

    /// The processes of every cgroup in the subtree (each `cgroup.procs`, read once). Called at
    /// every confirmed freeze (for its count), so no check that `root` is a directory (listing it
    /// or reading its cgroup.procs fails if not), and the pids are parsed as bytes. `rootProcs`,
    /// `rootDirectory`: the root's cgroup.procs (read with pread: two calls, against open, two
    /// reads and close) and directory (for its link count), held open by their owner.
    package static func processes(_ root: String, rootProcs: CgroupFile? = nil, rootDirectory: CgroupFile? = nil) -> [pid_t] {
        walk(root, rootStatus: rootDirectory?.status()).reversed().flatMap { dir in
            // A cgroup removed meanwhile holds no processes.
            let text = if dir == root, let rootProcs { try? rootProcs.readAll() } else { try? FileIO.read(dir + "/cgroup.procs") }
            return pids(in: text ?? "")
        }
    }

    /// The pids of a cgroup.procs text, one decimal per line; anything else on a line drops it.
    static func pids(in text: String) -> [pid_t] {
        var out: [pid_t] = []
        var value: Int64 = 0, digits = 0, bad = false
        func endLine() {
            if digits > 0 && !bad && value <= Int64(Int32.max) { out.append(pid_t(value)) }
            (value, digits, bad) = (0, 0, false)
        }
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n") {
                endLine()
            } else if byte >= 48 && byte <= 57 && digits < 10 {
                value = value * 10 + Int64(byte - 48)
                digits += 1
            } else {
                bad = true
            }
        }
        endLine()
        return out
    }

    /// Removes the subtree, sub-cgroups first, skipping the parents of one that stays (only EBUSY);
    /// returns what stays, each naming rmdir, path and errno (one already removed is fine).
    package static func remove(_ root: String, what: String = "cgroup") -> [SystemError] {
        var problems: [SystemError] = []
        for dir in directoriesBottomUp(root) {
            if problems.contains(where: { $0.path?.hasPrefix(dir + "/") == true }) { continue }
            if rmdir(dir) < 0 && errno != ENOENT { problems.append(SystemError("rmdir \(what)", path: dir)) }
        }
        return problems
    }
}
