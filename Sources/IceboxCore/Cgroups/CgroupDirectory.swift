import Glibc
import IceboxSystem

/// One cgroup directory of any hierarchy (a v2 cgroup, a v1 freezer or memory cgroup): its path and
/// what every kind does alike, each helper naming the path, and the kind (`what`), in its errors.
package protocol CgroupDirectory: Sendable {
    var path: String { get }
    /// How errors name this kind: "cgroup", "v1 memory cgroup".
    static var what: String { get }
}

extension CgroupDirectory {
    package func file(_ name: String) -> String { path + "/" + name }

    package var exists: Bool { FileIO.isDirectory(path) }

    package func create() throws(SystemError) {
        if mkdir(path, 0o755) < 0 && errno != EEXIST { throw SystemError("create \(Self.what)", path: path) }
    }

    /// rmdir; an already-removed cgroup is not an error.
    package func remove() throws(SystemError) {
        if rmdir(path) < 0 && errno != ENOENT { throw SystemError("remove \(Self.what)", path: path) }
    }

    /// The processes directly in this cgroup (not in its sub-cgroups).
    package func procs() -> [pid_t] {
        // Removed meanwhile: none; a caller that must know it exists checks the directory.
        ((try? FileIO.read(file("cgroup.procs"))) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    /// Its processes and its sub-cgroups': what a freeze or cgroup.kill of this cgroup reaches.
    package func subtreeProcs() -> [pid_t] { CgroupTree.processes(path) }

    package func addProcess(_ pid: pid_t) throws(SystemError) { try FileIO.write(file("cgroup.procs"), String(pid)) }

    /// For a SpawnRequest's procs descriptors: the child joins before execve.
    package func openProcsForWriting() throws(SystemError) -> Int32 {
        try FileIO.openDescriptor(file("cgroup.procs"), flags: O_WRONLY)
    }
}
