import Glibc
import IceboxSystem

/// A per-app cgroup in the v1 memory hierarchy, for hybrid hosts whose v2 tree has no memory
/// controller. A small value type like Cgroup1Freezer: the path and the files it uses.
///
/// Its `remove()` fails only for live processes (EBUSY): the kernel moves what is still
/// charged (page cache) to the parent. A process moved in keeps its pages charged where they
/// were (v1 moved charges only with memory.move_charge_at_immigrate, which recent kernels
/// ignore), so the app joins before it allocates: at spawn, through `openProcsForWriting()`.
package struct MemoryCgroupV1: CgroupDirectory, Equatable {
    package let path: String
    package static let what = "v1 memory cgroup"

    static let usageFile = "memory.usage_in_bytes"
    private static let limitFile = "memory.limit_in_bytes"

    package init(path: String) { self.path = path }

    /// The app's v1 memory cgroup mirrors its v2 cgroup: the same path relative to the
    /// hierarchy root, e.g. /sys/fs/cgroup/unified/icebox/web → /sys/fs/cgroup/memory/icebox/web.
    /// nil when the v2 cgroup is not under the v2 root.
    package init?(mirroring v2Cgroup: String, unifiedRoot: String, memoryV1Root: String) {
        let root = unifiedRoot.hasSuffix("/") ? String(unifiedRoot.dropLast()) : unifiedRoot
        guard v2Cgroup.hasPrefix(root + "/") else { return nil }
        self.init(path: memoryV1Root + v2Cgroup.dropFirst(root.count))
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
