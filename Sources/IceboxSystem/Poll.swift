import Glibc

/// poll(2) with a deadline rather than a time-out, so a wait interrupted by a signal resumes
/// with the time that is left instead of starting over.
package enum Poll {
    /// Waits until one of `fds` reports an event or the deadline (monotonic ns; nil: none)
    /// passes. Returns the number of descriptors with events (their `revents` are set), 0 if
    /// the deadline passed first. The corresponding C function is `poll`.
    package static func wait(_ fds: inout [pollfd], until deadline: UInt64?) throws(SystemError) -> Int {
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let now = Clock.monotonicNanos()
                // Rounded up, so the wait never ends a little before the deadline.
                timeout = now >= deadline ? 0 : Int32(min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            }
            let n = poll(&fds, nfds_t(fds.count), timeout)
            if n >= 0 { return Int(n) }
            if errno != EINTR { throw SystemError("poll") }
        }
    }
}
