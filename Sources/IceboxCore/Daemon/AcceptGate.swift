import Glibc

/// Whether the daemon accepts clients now: out of descriptors, the listener is left unwatched
/// for a backoff (Daemon+Control). It also holds a descriptor in reserve (/dev/null), freed
/// to write the log line that says so.
struct AcceptGate {
    static let backoffNanos: UInt64 = 100_000_000
    private(set) var resumeAt: UInt64?  // the listener is not watched until then
    private var limitLogged = false
    private var reserveFD: Int32 = -1

    var nextDeadline: UInt64? { resumeAt }

    /// Takes the reserve descriptor (at the daemon's start, and again once it was used).
    mutating func holdReserve() {
        if reserveFD < 0 { reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC) }
    }

    /// Frees the reserve descriptor, for a write that must happen out of descriptors.
    mutating func releaseReserve() {
        if reserveFD >= 0 { close(reserveFD) }
        reserveFD = -1
    }

    /// A client was accepted: the next time descriptors run out is logged again.
    mutating func accepted() { limitLogged = false }

    /// Stops accepting for the backoff: nil if shut already, else whether it is the first time.
    mutating func shut(now: UInt64) -> Bool? {
        guard resumeAt == nil else { return nil }
        resumeAt = now.saturatingAdd(Self.backoffNanos)
        defer { limitLogged = true }
        return !limitLogged
    }

    /// The backoff is over (the caller watches the listener again): true if it was shut.
    mutating func reopen() -> Bool {
        guard resumeAt != nil else { return false }
        resumeAt = nil
        return true
    }

    /// The listener could not be watched again: try once more after the backoff.
    mutating func retry(now: UInt64) { resumeAt = now.saturatingAdd(Self.backoffNanos) }
}
