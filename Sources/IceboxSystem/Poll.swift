import CIceboxShim
import Glibc

/// Waiting on descriptors: poll(2) with a deadline (a wait interrupted by a signal resumes
/// with the time that is left), and ppoll on one descriptor with a nanosecond time-out.
package enum Poll {
    /// Waits until one of `fds` reports an event or the deadline (monotonic ns; nil: none) passes.
    /// Returns the number of descriptors with events (their `revents` are set), 0 if the deadline
    /// passed first.
    package static func wait(_ fds: inout [pollfd], until deadline: UInt64?) throws(SystemError) -> Int {
        // Retried with the time that is left (milliseconds is asked again each try).
        Int(try systemCall("poll") { poll(&fds, nfds_t(fds.count), milliseconds(until: deadline)) })
    }

    /// Waits until `fd` reports one of `events` (or an error or hang-up) or the deadline (monotonic
    /// ns; nil: none) passes. Returns the events that happened, 0 if the deadline passed first. For
    /// one descriptor, as a one-shot client waits for its reply: an array of pollfd cost that
    /// command the instantiation of its type metadata.
    package static func wait(_ fd: Int32, events: Int16, until deadline: UInt64?) throws(SystemError) -> Int16 {
        var pfd = pollfd(fd: fd, events: events, revents: 0)
        let n = try systemCall("poll") { poll(&pfd, 1, milliseconds(until: deadline)) }
        return n == 0 ? 0 : pfd.revents
    }

    /// poll's time-out for a deadline: -1 for none, rounded up so the wait never ends a little
    /// before the deadline.
    private static func milliseconds(until deadline: UInt64?) -> Int32 {
        guard let deadline else { return -1 }
        let now = Clock.monotonicNanos()
        return now >= deadline ? 0 : Int32(min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max)))
    }

    /// Waits up to `timeoutNanos` (0: just look) for `events` on `fd`. Returns the events
    /// that happened (0 on time-out or EINTR).
    package static func wait(_ fd: Int32, events: Int16, timeoutNanos: UInt64) throws(SystemError) -> Int16 {
        let revents = icebox_poll_ns(fd, events, timeoutNanos)
        if revents < 0 { throw SystemError("poll descriptor \(fd)") }
        return Int16(truncatingIfNeeded: revents)
    }

    /// Sleeps up to `timeoutNanos`, less when `fd` (negative: none, a plain sleep) reports
    /// `events` first: for the blocking drivers, which look again either way, so a wake-up
    /// for any reason (a signal, an error) is only an early look.
    package static func nap(on fd: Int32, events: Int16, timeoutNanos: UInt64) { _ = icebox_poll_ns(fd, events, timeoutNanos) }

    /// Whether `fd` has `events` now, without waiting; false on any error.
    package static func ready(_ fd: Int32, _ events: Int16) -> Bool { icebox_poll_ns(fd, events, 0) > 0 }
}
