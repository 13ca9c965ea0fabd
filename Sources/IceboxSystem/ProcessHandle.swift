import CIceboxShim
import Glibc

/// How a process ended, as waitid(2) reports it.
package enum Termination: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    /// The shell convention: the exit code, or 128+N for signal N.
    package var shellStatus: Int32 {
        switch self {
        case .exited(let code): return code
        case .signaled(let sig): return 128 + sig
        }
    }

    package var description: String {
        switch self {
        case .exited(let code): return "exited with status \(code)"
        case .signaled(let sig): return "killed by \(Signals.name(of: sig))"
        }
    }

    /// From siginfo's si_code and si_status (CLD_EXITED = 1; CLD_KILLED, CLD_DUMPED otherwise).
    package init(code: Int32, status: Int32) { self = code == 1 ? .exited(status) : .signaled(status) }
}

/// A process held through its pidfd from spawn to reap, so nothing is ever keyed on a
/// bare pid that could be reused. A class so that exactly one owner closes the pidfd (in deinit).
package final class ProcessHandle {
    package let pid: pid_t
    package let pidfd: Int32

    package init(pid: pid_t, pidfd: Int32) {
        self.pid = pid
        self.pidfd = pidfd
    }

    /// Whether this kernel has pidfd_open (Linux 5.3).
    package static var pidfdWorks: Bool { (try? ProcessHandle(adopting: getpid())) != nil }

    /// Opens a pidfd for a process icebox did not spawn (it need not be our child).
    package init(adopting pid: pid_t) throws(SystemError) {
        self.pidfd = try systemCall("open a pidfd for", path: "pid \(pid)") { icebox_pidfd_open(pid, 0) }
        self.pid = pid
    }

    /// Sends a signal through the pidfd. ESRCH (already exited) is reported as false.
    @discardableResult
    package func send(_ signal: Int32) throws(SystemError) -> Bool {
        if icebox_pidfd_send_signal(pidfd, signal) == 0 { return true }
        if errno == ESRCH { return false }
        throw SystemError("send \(Signals.name(of: signal)) to", path: "pid \(pid)")
    }

    /// Reaps the child if it has exited; nil while it runs.
    package func reapIfExited() throws(SystemError) -> Termination? {
        var code: Int32 = 0, status: Int32 = 0, who: pid_t = 0
        if icebox_waitid_pidfd(pidfd, WEXITED | WNOHANG, &code, &status, &who) < 0 {
            throw SystemError("wait for", path: "pid \(pid)")
        }
        return who == 0 ? nil : Termination(code: code, status: status)
    }

    /// Waits for the child to exit, up to a deadline (monotonic ns). nil on time-out.
    package func wait(until deadline: UInt64) throws(SystemError) -> Termination? {
        while true {
            if let t = try reapIfExited() { return t }
            if Clock.monotonicNanos() >= deadline { return nil }
            _ = try Poll.wait(pidfd, events: Int16(POLLIN), until: deadline)
        }
    }

    /// The id of the cgroup v2 the process is in (PIDFD_GET_INFO, Linux 6.13: one ioctl, where
    /// /proc/PID/cgroup is an open, a read of every hierarchy's line and a close); nil on an older
    /// kernel or once the process is gone.
    package func cgroupID() -> UInt64? {
        var id: UInt64 = 0
        return icebox_pidfd_cgroup_id(pidfd, &id) == 0 ? id : nil
    }

    deinit { Glibc.close(pidfd) }
}

package enum Reaper {
    /// Makes this process a child subreaper: orphans of its descendants land on it rather
    /// than on PID 1 (which here does not reap them promptly).
    package static func becomeSubreaper() throws(SystemError) {
        if icebox_set_child_subreaper() < 0 { throw SystemError("become a child subreaper (prctl)") }
    }

    /// The pid of an exited child of the calling thread, without reaping it (WNOWAIT), or nil.
    /// Only this thread's children (`__WNOTHREAD`): an engine embedded in a program with threads
    /// of its own (a test runner) must never reap their children. The daemon's apps and probes
    /// are spawned by its loop thread, and orphans land on the main thread, which runs it.
    package static func peekExitedChild() -> pid_t? {
        var code: Int32 = 0, status: Int32 = 0, who: pid_t = 0
        if icebox_waitid_all(WEXITED | WNOHANG | WNOWAIT | __WNOTHREAD, &code, &status, &who) < 0 { return nil }
        return who == 0 ? nil : who
    }

    /// Reaps one specific exited child by pid (only for orphans that have no pidfd here).
    package static func reap(pid: pid_t) {
        var status: Int32 = 0
        _ = retryingOnInterrupt { waitpid(pid, &status, WNOHANG) }
    }
}
