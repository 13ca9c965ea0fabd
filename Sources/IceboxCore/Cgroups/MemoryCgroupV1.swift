import Glibc
import IceboxSystem

/// A per-app cgroup in the v1 memory hierarchy, for hybrid hosts whose v2 tree has no memory
/// controller. Its `remove()` fails only for live processes (EBUSY): the kernel moves what is still
/// charged (page cache) to the parent. A process moved in keeps its pages charged where they were
/// (memory.move_charge_at_immigrate, which recent kernels ignore, was the only way), so the app
/// joins before it allocates: at spawn (`openProcsForWriting()`).
package struct MemoryCgroupV1: CgroupDirectory, Equatable {
    package let path: String
    package static let what = "v1 memory cgroup"

    static let usageFile = "memory.usage_in_bytes"

    package init(path: String) { self.path = path }
}
