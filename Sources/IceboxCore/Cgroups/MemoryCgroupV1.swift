import Glibc
import IceboxSystem

/// A per-app cgroup in the v1 memory hierarchy, for hybrid hosts whose v2 tree has no memory
/// controller. A small value type like Cgroup1Freezer: the path and the files it uses.
package struct MemoryCgroupV1: Sendable, Equatable {
    package let path: String

    static let usageFile = "memory.usage_in_bytes"
    private static let limitFile = "memory.limit_in_bytes"
    private static let procsFile = "cgroup.procs"

    package init(path: String) { self.path = path }

    /// The app's v1 memory cgroup mirrors its v2 cgroup: the same path relative to the
    /// hierarchy root, e.g. /sys/fs/cgroup/unified/icebox/web → /sys/fs/cgroup/memory/icebox/web.
    /// nil when the v2 cgroup is not under the v2 root.
    package init?(mirroring v2Cgroup: String, unifiedRoot: String, memoryV1Root: String) {
        let root = unifiedRoot.hasSuffix("/") ? String(unifiedRoot.dropLast()) : unifiedRoot
        guard v2Cgroup.hasPrefix(root + "/") else { return nil }
        self.init(path: memoryV1Root + v2Cgroup.dropFirst(root.count))
    }

    package func file(_ name: String) -> String { path + "/" + name }

    package var exists: Bool { FileIO.isDirectory(path) }

    package func create() throws(SystemError) {
        if mkdir(path, 0o755) < 0 && errno != EEXIST { throw SystemError("create v1 memory cgroup", path: path) }
    }

    /// rmdir; an already-removed cgroup is not an error. The kernel moves what is still
    /// charged (page cache) to the parent, so only live processes make this fail (EBUSY).
    package func remove() throws(SystemError) {
        if rmdir(path) < 0 && errno != ENOENT { throw SystemError("remove v1 memory cgroup", path: path) }
    }

    /// Moves a process in. Its existing pages stay charged where they were (v1 only moved
    /// charges with memory.move_charge_at_immigrate, which recent kernels ignore): join
    /// before the app allocates, i.e. at spawn, through `openProcsForWriting()`.
    package func addProcess(_ pid: pid_t) throws(SystemError) {
        try FileIO.write(file(Self.procsFile), String(pid))
    }

    package func procs() -> [pid_t] {
        // A cgroup removed meanwhile has no processes: the empty list is the answer.
        ((try? FileIO.read(file(Self.procsFile))) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    /// The processes in this cgroup and its sub-cgroups.
    package func subtreeProcs() -> [pid_t] { CgroupTree.processes(path) }

    /// For SpawnRequest.v1ProcsFD: the child joins before execve.
    package func openProcsForWriting() throws(SystemError) -> Int32 {
        let fd = open(file(Self.procsFile), O_WRONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError("open", path: file(Self.procsFile)) }
        return fd
    }

    package func usage() throws(SystemError) -> UInt64 {
        try Self.parseCounter(FileIO.read(file(Self.usageFile)), path: file(Self.usageFile))
    }

    /// The hard limit; nil when unlimited (the kernel shows a page-rounded LONG_MAX).
    package func limit() throws(SystemError) -> UInt64? {
        let value = try Self.parseCounter(FileIO.read(file(Self.limitFile)), path: file(Self.limitFile))
        return value >= UInt64(Int64.max) & ~0xfff ? nil : value
    }

    /// Sets the hard limit (the kernel rounds it down to a page); nil removes it. Lowering it
    /// below the usage makes the kernel reclaim first, and EBUSY when it cannot.
    package func setLimit(bytes: UInt64?) throws(SystemError) {
        try FileIO.write(file(Self.limitFile), bytes.map { String($0) } ?? "-1")
    }

    static func parseCounter(_ text: String, path: String) throws(SystemError) -> UInt64 {
        guard let value = UInt64(text.trimmed()) else { throw SystemError("parse", path: path, errno: EINVAL) }
        return value
    }
}
