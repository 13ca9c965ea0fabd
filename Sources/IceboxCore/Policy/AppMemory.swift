import Glibc
import IceboxSystem

/// Where a reading of an app's memory came from. The three differ in what they count, so a
/// number is never shown without its source.
package enum MemorySource: String, Codable, Sendable {
    /// The v2 cgroup's charge: anonymous memory, page cache and kernel memory the app caused.
    case memoryCurrent = "memory.current"
    /// The v1 memory cgroup's charge (anonymous and page cache). The kernel batches charges
    /// per CPU, so it can be off by a few hundred KiB; memory.stat is exact but costlier.
    case v1Usage = "memory.usage_in_bytes"
    /// The proportional set size summed over the processes: shared pages split between the
    /// processes that map them, page cache only where mapped, no kernel memory.
    case pssSum = "smaps_rollup Pss"
}

package struct AppMemoryReading: Codable, Sendable, Equatable {
    package var bytes: UInt64
    package var source: MemorySource
}

/// The memory of one app, from the best source the host has.
package enum AppMemory {
    /// memory.usage_in_bytes of the app's v1 memory cgroup when it has one (a controller is on one
    /// hierarchy only, so then the v2 cgroup has no memory.current: looking there first is a failed
    /// open per app of `ps` on hybrid hosts); else the v2 cgroup's memory.current if there (the v2
    /// controller is enabled for it); else the Pss sum over `pids`, listed only then (it walks the
    /// cgroup tree, and `ps` asks this of every app). An unreadable source falls through to the
    /// next. `roots`: open directories a counter below one is opened from (`DirectoryHandle`).
    package static func read(
        v2Cgroup: String?, v1MemoryCgroup: String?, pids: @autoclosure () -> [pid_t], procRoot: String = "/proc",
        roots: [DirectoryHandle] = []
    ) -> AppMemoryReading {
        for counter in counters(v2Cgroup: v2Cgroup, v1MemoryCgroup: v1MemoryCgroup) {
            if let bytes = DirectoryHandle.readCounter(counter.path, under: roots) {
                return AppMemoryReading(bytes: bytes, source: counter.source)
            }
        }
        return AppMemoryReading(bytes: pssSum(pids: pids(), procRoot: procRoot), source: .pssSum)
    }

    /// The counter files `read` tries, in its order (also the one AppCgroups keeps open).
    package static func counters(v2Cgroup: String?, v1MemoryCgroup: String?) -> [(path: String, source: MemorySource)] {
        var out: [(path: String, source: MemorySource)] = []
        if let v1MemoryCgroup { out.append((v1MemoryCgroup + "/" + MemoryCgroupV1.usageFile, .v1Usage)) }
        if let v2Cgroup { out.append((v2Cgroup + "/memory.current", .memoryCurrent)) }
        return out
    }

    /// The Pss line of /proc/PID/smaps_rollup, in bytes; nil without one (a kernel thread).
    package static func pss(smapsRollup text: String) -> UInt64? {
        ProcFS.statusField("Pss", in: text).flatMap(ProcFS.parseKiloBytes)
    }

    /// Pss summed over the processes; one that has exited counts as nothing. smaps_rollup
    /// walks every page table of the process, so this costs about a millisecond per 100 MiB.
    package static func pssSum(pids: [pid_t], procRoot: String = "/proc") -> UInt64 {
        pids.reduce(0) { sum, pid in
            // Documented above: a process that has exited counts as nothing.
            sum + ((try? FileIO.read("\(procRoot)/\(pid)/smaps_rollup")).flatMap(pss(smapsRollup:)) ?? 0)
        }
    }
}

/// Memory of the whole host, from /proc/meminfo.
package enum SystemMemory {
    /// "Name:   1234 kB" → bytes.
    package static func field(_ name: String, meminfo text: String) -> UInt64? {
        ProcFS.statusField(name, in: text).flatMap(ProcFS.parseKiloBytes)
    }

    /// Whether the host has swap (SwapTotal above 0): without it, compaction cannot page out
    /// anonymous memory.
    package static func hasSwap(path: String = "/proc/meminfo") -> Bool {
        // No meminfo: taken as no swap, the side on which compaction does nothing it cannot undo.
        ((try? FileIO.read(path)).flatMap { field("SwapTotal", meminfo: $0) } ?? 0) > 0
    }
}
