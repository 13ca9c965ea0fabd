import Glibc

/// What the kernel accounts to one process, as the Prometheus clients' process collectors
/// read it: CPU time and resident pages from /proc/PID/stat, the start time from stat and
/// /proc/stat's btime, open descriptors from /proc/PID/fd. The parsers take the files' text
/// and the reader takes a /proc root, so tests feed them temporary files.
package struct ProcessUsage: Equatable, Sendable {
    /// Open descriptors (the entries of /proc/PID/fd, the one that lists them included).
    package var openDescriptors: Int?
    /// Resident memory: stat's rss (field 24) times the page size.
    package var residentBytes: UInt64?
    /// When the process started, in nanoseconds since the epoch: boot time plus stat's
    /// starttime (field 22). Only as precise as a clock tick (10 ms with USER_HZ 100).
    package var startTimeUnixNanos: UInt64?
    /// User plus system CPU time (stat fields 14 and 15), in nanoseconds.
    package var cpuNanos: UInt64?

    package init(openDescriptors: Int? = nil, residentBytes: UInt64? = nil, startTimeUnixNanos: UInt64? = nil, cpuNanos: UInt64? = nil) {
        self.openDescriptors = openDescriptors
        self.residentBytes = residentBytes
        self.startTimeUnixNanos = startTimeUnixNanos
        self.cpuNanos = cpuNanos
    }

    /// The boot time from /proc/stat's "btime" line, in seconds since the epoch.
    package static func bootTime(procStat text: String) -> UInt64? {
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return UInt64(line.dropFirst(6).trimmingCharacters(in: " \t"))
        }
        return nil
    }

    /// Reads the usage of process `pid` ("self" by default). A figure whose file cannot be
    /// read is nil. `ticksPerSecond` and `pageSize` default to the running kernel's.
    package static func read(
        pid: String = "self", procRoot: String = "/proc",
        ticksPerSecond: UInt64 = UInt64(max(sysconf(Int32(_SC_CLK_TCK)), 1)),
        pageSize: UInt64 = UInt64(max(sysconf(Int32(_SC_PAGESIZE)), 1))
    ) -> ProcessUsage {
        var usage = ProcessUsage(openDescriptors: (try? FileIO.list("\(procRoot)/\(pid)/fd"))?.count)
        guard let stat = (try? FileIO.read("\(procRoot)/\(pid)/stat")).flatMap(ProcFS.parseStat) else { return usage }
        let nanosPerTick = 1_000_000_000 / max(ticksPerSecond, 1)
        usage.residentBytes = stat.residentPages * pageSize
        usage.cpuNanos = (stat.userTicks + stat.systemTicks) * nanosPerTick
        if let boot = (try? FileIO.read("\(procRoot)/stat")).flatMap({ bootTime(procStat: $0) }) {
            usage.startTimeUnixNanos = boot * 1_000_000_000 + stat.startTimeTicks * nanosPerTick
        }
        return usage
    }
}
