import Glibc
import IceboxSystem

/// Compaction: reclaiming a frozen app's memory without killing it, as Android does right after it
/// freezes a cached app. A frozen app touches no memory, so its pages are the best candidates there
/// are; it faults back what it needs after the thaw.
///
/// Two ways in (`Compactor.compact` chooses): the v2 memory controller's `memory.reclaim` on the
/// app's cgroup, else (hybrid hosts: no v2 controllers) process_madvise(2) on each process.
package enum CompactionMode: String, Codable, Sendable {
    /// Reclaim now (MADV_PAGEOUT, or memory.reclaim).
    case pageout
    /// Only deactivate (MADV_COLD): the pages go first when the kernel next needs memory.
    case cold
}

package enum CompactionMethod: String, Codable, Sendable {
    case processMadvise = "process_madvise"
    case memoryReclaim = "memory.reclaim"
}

/// One line of /proc/PID/maps: `start-end perms offset dev inode   path`.
package struct MemoryMapping: Equatable, Sendable {
    package var start: UInt64
    package var end: UInt64
    /// "rw-p": read, write, execute, then p(rivate) or s(hared).
    package var permissions: String
    package var offset: UInt64
    package var device: String
    package var inode: UInt64
    /// "" for an anonymous mapping; a file path (which may contain spaces, and ends in
    /// " (deleted)" once the file is unlinked); or a kernel name such as "[heap]".
    package var path: String

    package var length: UInt64 { end - start }
    package var isPrivate: Bool { permissions.hasSuffix("p") }

    /// Mappings the kernel provides: madvise refuses some (VM_PFNMAP), and none is the app's.
    static let kernelMappings: Set<String> = [
        "[vsyscall]", "[vvar]", "[vvar_vclock]", "[vdso]", "[uprobes]", "[vectors]", "[sigpage]",
    ]
    package var isKernelMapping: Bool { Self.kernelMappings.contains(path) }

    /// Whether compaction advises this mapping: private (anonymous or file-backed), not the
    /// kernel's, and not PROT_NONE. Shared mappings are left alone: their pages belong to other
    /// processes too. PROT_NONE regions are guard pages and address-space reservations (runtimes
    /// reserve gigabytes), with nothing resident worth a page-table walk.
    package var isCompactable: Bool { isPrivate && !isKernelMapping && !permissions.hasPrefix("---") }

    /// Parses one line; nil for a malformed one.
    package static func parse(line: Substring) -> MemoryMapping? {
        var rest = line
        func field() -> Substring? {
            rest = rest.drop { $0 == " " }
            let value = rest.prefix { $0 != " " }
            rest = rest.dropFirst(value.count)
            return value.isEmpty ? nil : value
        }
        guard let range = field(), let perms = field(), let offset = field(), let device = field(),
            let inode = field(), perms.count == 4
        else { return nil }
        let bounds = range.split(separator: "-")
        guard bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16),
            end >= start, let off = UInt64(offset, radix: 16), let ino = UInt64(inode)
        else { return nil }
        // The kernel pads to a column before the path. Only leading spaces are padding: a
        // path always starts with "/" or "[", and trailing spaces belong to the file name.
        let path = String(rest.drop { $0 == " " })
        return MemoryMapping(
            start: start, end: end, permissions: String(perms), offset: off, device: String(device), inode: ino, path: path)
    }

    /// Parses the whole text of /proc/PID/maps, skipping malformed lines.
    package static func parseMaps(_ text: String) -> [MemoryMapping] {
        text.split(separator: "\n").compactMap { parse(line: $0) }
    }

    package static func read(pid: pid_t, procRoot: String = "/proc") throws(SystemError) -> [MemoryMapping] {
        parseMaps(try FileIO.read("\(procRoot)/\(pid)/maps"))
    }
}

/// Resident memory from /proc/PID/status, in bytes: VmRSS and its three parts.
package struct ResidentMemory: Codable, Sendable, Equatable {
    package var rss: UInt64 = 0
    package var rssAnon: UInt64 = 0
    package var rssFile: UInt64 = 0
    package var rssShmem: UInt64 = 0

    /// nil for a kernel thread (no Vm lines) or text that is not a status file.
    package static func parse(status text: String) -> ResidentMemory? {
        func field(_ name: String) -> UInt64? { ProcFS.statusField(name, in: text).flatMap(ProcFS.parseKiloBytes) }
        guard let rss = field("VmRSS") else { return nil }
        return ResidentMemory(rss: rss, rssAnon: field("RssAnon") ?? 0, rssFile: field("RssFile") ?? 0, rssShmem: field("RssShmem") ?? 0)
    }

    /// The sum over the processes; those that have exited count as nothing.
    package static func read(pids: [pid_t], procRoot: String = "/proc") -> ResidentMemory {
        var total = ResidentMemory()
        for pid in pids {
            // Documented above: a process that has exited counts as nothing.
            guard let text = try? FileIO.read("\(procRoot)/\(pid)/status"), let one = parse(status: text) else { continue }
            total.rss += one.rss
            total.rssAnon += one.rssAnon
            total.rssFile += one.rssFile
            total.rssShmem += one.rssShmem
        }
        return total
    }
}

package struct CompactionReport: Codable, Sendable, Equatable {
    package var mode: CompactionMode
    package var method: CompactionMethod
    /// Summed over the app's processes, read just before and just after.
    package var before: ResidentMemory
    package var after: ResidentMemory
    package var durationNanos: UInt64
    /// Processes advised (process_madvise), or in the cgroup (memory.reclaim).
    package var processes: Int
    /// Processes that exited before or while they were advised.
    package var processesExited: Int
    package var vmasAdvised: Int
    /// process_madvise: bytes the kernel went through (advised, not necessarily freed).
    /// memory.reclaim: the amount asked for.
    package var bytesAdvised: UInt64
    /// Ranges the kernel refused and that were skipped (process_madvise only).
    package var rangesSkipped: Int
    /// memory.reclaim answered EAGAIN: it could not reclaim as much as asked (without swap,
    /// anonymous memory cannot go anywhere). Not an error.
    package var reclaimShort: Bool

    /// "RSS 93.7 MiB → 29.6 MiB, file 70.6 MiB → 6.5 MiB, anon 23.1 MiB → 23.1 MiB": the line
    /// `icebox compact` prints, the compact event logs and the registry keeps.
    package var summary: String {
        func change(_ a: UInt64, _ b: UInt64) -> String { "\(SizeText.format(a)) → \(SizeText.format(b))" }
        return "RSS \(change(before.rss, after.rss)), file \(change(before.rssFile, after.rssFile)), "
            + "anon \(change(before.rssAnon, after.rssAnon))"
    }
}

package enum Compactor {
    /// Whether the cgroup has the v2 memory controller (only then is memory.reclaim there).
    package static func canReclaim(_ cgroup: Cgroup2) -> Bool { FileIO.exists(cgroup.file("memory.reclaim")) }

    /// Compacts an app (meant for a frozen one). `.pageout` uses memory.reclaim when the app's
    /// cgroup has it, since one write covers every process and the kernel's own LRU order;
    /// otherwise, and for `.cold` (which memory.reclaim cannot express), process_madvise.
    package static func compact(pids: [pid_t], mode: CompactionMode, cgroup: Cgroup2?, procRoot: String = "/proc")
        throws(SystemError) -> CompactionReport
    {
        if mode == .pageout, let cgroup, canReclaim(cgroup) {
            return try memoryReclaim(cgroup: cgroup, pids: pids, procRoot: procRoot)
        }
        return try processMadvise(pids: pids, mode: mode, procRoot: procRoot)
    }

    /// process_madvise over the compactable mappings of every process. Each pidfd is opened
    /// before its maps are read, so a pid reused in between cannot be advised by mistake: the
    /// advice goes through the pidfd, which fails with ESRCH once its process is gone.
    package static func processMadvise(pids: [pid_t], mode: CompactionMode, procRoot: String = "/proc")
        throws(SystemError) -> CompactionReport
    {
        let before = ResidentMemory.read(pids: pids, procRoot: procRoot)
        let start = Clock.monotonicNanos()
        var report = CompactionReport(
            mode: mode, method: .processMadvise, before: before, after: before, durationNanos: 0, processes: 0,
            processesExited: 0, vmasAdvised: 0, bytesAdvised: 0, rangesSkipped: 0, reclaimShort: false)
        for pid in pids {
            let handle: ProcessHandle
            let mappings: [MemoryMapping]
            do {
                handle = try ProcessHandle(adopting: pid)
                mappings = try MemoryMapping.read(pid: pid, procRoot: procRoot)
            } catch  where error.errno == ESRCH || error.errno == ENOENT {
                report.processesExited += 1
                continue
            }
            let ranges = mappings.filter(\.isCompactable).map { ProcessMadvise.Range(start: $0.start, length: $0.length) }
            let outcome = try ProcessMadvise.advise(
                pidfd: handle.pidfd, pid: pid, ranges: ranges, advice: mode == .pageout ? .pageout : .cold)
            if outcome.processExited { report.processesExited += 1 } else { report.processes += 1 }
            report.vmasAdvised += outcome.rangesAdvised
            report.bytesAdvised += outcome.bytesAdvised
            report.rangesSkipped += outcome.rangesSkipped
        }
        report.durationNanos = Clock.monotonicNanos() - start
        report.after = ResidentMemory.read(pids: pids, procRoot: procRoot)
        return report
    }

    /// Writes the cgroup's memory.current to its memory.reclaim ("as much as you can"); EAGAIN, the
    /// normal outcome here, is reported (`reclaimShort`), not thrown.
    package static func memoryReclaim(cgroup: Cgroup2, pids: [pid_t], procRoot: String = "/proc") throws(SystemError) -> CompactionReport {
        let before = ResidentMemory.read(pids: pids, procRoot: procRoot)
        let start = Clock.monotonicNanos()
        let currentPath = cgroup.file("memory.current")
        guard let amount = UInt64(try FileIO.read(currentPath).trimmed()) else {
            throw SystemError("parse", path: currentPath, errno: EINVAL)
        }
        var short = false
        do {
            try FileIO.write(cgroup.file("memory.reclaim"), String(amount))
        } catch  where error.errno == EAGAIN {
            short = true
        }
        let took = Clock.monotonicNanos() - start
        return CompactionReport(
            mode: .pageout, method: .memoryReclaim, before: before, after: ResidentMemory.read(pids: pids, procRoot: procRoot),
            durationNanos: took, processes: cgroup.procs().count, processesExited: 0, vmasAdvised: 0, bytesAdvised: amount,
            rangesSkipped: 0, reclaimShort: short)
    }
}
