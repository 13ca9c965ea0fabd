import CIceboxShim
import Glibc

/// Waiting on one descriptor with a nanosecond timeout (ppoll), and the other small calls
/// the layers above need from the C shim, so only IceboxSystem imports it.
public enum Poll {
    /// Waits up to `timeoutNanos` (0: just look) for `events` on `fd`. Returns the events
    /// that happened (0 on time-out or EINTR). The corresponding C function is `ppoll`.
    public static func wait(_ fd: Int32, events: Int16, timeoutNanos: UInt64) throws(SystemError) -> Int16 {
        let revents = icebox_poll_ns(fd, events, timeoutNanos)
        if revents < 0 { throw SystemError("poll descriptor \(fd)") }
        return Int16(truncatingIfNeeded: revents)
    }

    /// Whether `fd` has `events` now, without waiting; false on any error.
    public static func ready(_ fd: Int32, _ events: Int16) -> Bool {
        icebox_poll_ns(fd, events, 0) > 0
    }
}

public enum PipePair {
    /// A pipe whose both ends close on exec. The corresponding C function is `pipe2`.
    public static func closeOnExec() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard icebox_pipe_cloexec(&fds) == 0 else { throw SystemError("create a pipe") }
        return (fds[0], fds[1])
    }
}

extension ProcessHandle {
    /// Whether this kernel has pidfd_open (Linux 5.3).
    public static var pidfdWorks: Bool {
        let fd = icebox_pidfd_open(getpid(), 0)
        if fd < 0 { return false }
        close(fd)
        return true
    }
}
