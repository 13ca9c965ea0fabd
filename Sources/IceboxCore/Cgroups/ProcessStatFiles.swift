import Glibc
import IceboxSystem

/// The /proc/PID/stat of each process a SIGSTOP freeze began with, opened once (after the SIGSTOPs)
/// and read with pread at the freeze's looks: the confirmation (which also tells someone else's
/// stop) and the re-check for a peer's SIGCONT. Through the path, each look walks it and opens and
/// closes the file: two thirds of the syscalls freezing 1000 one-thread processes
/// (benchmarks/RESULTS.md, session 48). A kept descriptor also stays its process: once it exits,
/// reads fail, whoever has the pid by then.
///
/// Held only while the freeze is under way, for at most an eighth of the soft RLIMIT_NOFILE (4096
/// at most, `room`): the rest, and processes found later, are read by path. Immutable, so Sendable;
/// the descriptors close with the last reference.
package final class ProcessStatFiles: Sendable {
    private let files: [pid_t: Int32]

    init(_ pids: [pid_t]) {
        var files: [pid_t: Int32] = [:]
        let room = Self.room()
        files.reserveCapacity(min(pids.count, room))
        for pid in pids.prefix(room) where files[pid] == nil {
            let fd = retryingOnInterrupt { open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC) }
            // Gone already, or out of descriptors: that process is read through its path.
            if fd >= 0 { files[pid] = fd }
        }
        self.files = files
    }

    deinit {
        for fd in files.values { close(fd) }
    }

    /// How many descriptors a freeze may keep: an eighth of the soft limit, so that the
    /// daemon's other files (clients, apps' cgroup files) keep their room, at most 4096.
    private static func room() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return Int(min(limit.rlim_cur / 8, 4096))
    }

    /// What the process's stat line tells a freeze (`ProcFS.StopStat`); nil once it is gone.
    func stopStat(of pid: pid_t) -> ProcFS.StopStat? {
        if let fd = files[pid] { return ProcFS.stopStat(statFD: fd) }
        return ProcFS.stopStat(pid: pid)
    }
}
