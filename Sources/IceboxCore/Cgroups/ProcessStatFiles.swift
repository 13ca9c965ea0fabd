import Glibc
import IceboxSystem

/// The /proc/PID/stat of each process a SIGSTOP freeze began with, opened once (after the SIGSTOPs)
/// and read with pread for the freeze's looks at it: the confirmation (which also tells someone
/// else's stop, to be left alone), and the re-check for a peer's SIGCONT. A look through the path
/// walks /proc/PID/stat and opens and closes the file each time; on 1000 processes of one thread
/// that was two thirds of the freeze's syscalls (benchmarks/RESULTS.md, session 48). A kept
/// descriptor also stays the process it was opened for: once that one exits, reads fail, whoever
/// has the pid by then.
///
/// Held only while the freeze is under way (`SignalFreezeSteps` drops it when it ends), and for at
/// most an eighth of the soft RLIMIT_NOFILE (4096 at most): the rest, and any process found later,
/// are read through their path. Immutable, so Sendable; the descriptors are closed when the last
/// reference goes.
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
