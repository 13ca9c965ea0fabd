import Glibc
import IceboxSystem

/// A per-app cgroup in the v1 memory hierarchy, for hybrid hosts whose v2 tree has no memory
/// controller. A small value type like Cgroup1Freezer: the path and the files it uses.
///
/// Its `remove()` fails only for live processes (EBUSY): the kernel moves what is still charged
/// (page cache) to the parent. A process moved in keeps its pages charged where they were (v1 moved
/// charges only with memory.move_charge_at_immigrate, which recent kernels ignore), so the app
/// joins before it allocates: at spawn, through `openProcsForWriting()`.
package struct MemoryCgroupV1: CgroupDirectory, Equatable {
    package let path: String
    package static let what = "v1 memory cgroup"

    static let usageFile = "memory.usage_in_bytes"

    package init(path: String) { self.path = path }
}
