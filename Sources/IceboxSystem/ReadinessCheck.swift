import Glibc

/// Blocking readiness checks with a deadline, for `icebox bench` and `icebox probe`: one TCP
/// connect, or one HTTP GET that must answer 2xx, polling the same non-blocking machines the
/// daemon drives from its epoll loop (`TCPProbe`, `HTTPProbe`), so a check means the same.
package enum ReadinessCheck {
    /// Connects to address:port; true if the connection was accepted before the deadline.
    package static func tcp(_ address: IPAddress = .loopback, port: UInt16, deadline: UInt64) -> Bool {
        guard let fd = try? TCPProbe.start(address, port: port) else { return false }
        defer { close(fd) }
        while true {
            guard let events = waitFor(fd, EpollEvents.writable, deadline) else { return false }
            switch TCPProbe.state(fd) {
            case .connected: return true
            case .failed: return false
            case .inProgress: if events & (EpollEvents.error | EpollEvents.hangup) != 0 { return false }
            }
        }
    }

    /// GETs the URL (http only) and reports whether the status is 2xx.
    package static func http(_ url: String, deadline: UInt64) -> Bool {
        guard let target = HTTPURL(url) else { return false }
        return http(target, deadline: deadline).isReady
    }

    /// GETs the URL and says what came back, or why nothing did by the deadline.
    package static func http(_ url: HTTPURL, deadline: UInt64) -> HTTPProbe.Outcome {
        let check = HTTPProbe(url: url)
        var step = check.start()
        while true {
            switch step {
            case .finished(let outcome): return outcome
            case .wait(let fd, let events):
                guard let fired = waitFor(fd, events, deadline) else {
                    check.cancel()
                    return .failed("no answer from \(url.address):\(url.port) before the deadline")
                }
                step = check.resume(events: fired)
            }
        }
    }

    /// Polls one descriptor until it reports something or the deadline (monotonic ns)
    /// passes; the events it reported (poll's bits, which are epoll's), nil on time-out.
    static func waitFor(_ fd: Int32, _ events: UInt32, _ deadline: UInt64) -> UInt32? {
        // A poll that fails (never on our own open descriptor) ends the wait as a time-out does:
        // the check then reports the connection as not ready.
        guard let revents = try? Poll.wait(fd, events: Int16(truncatingIfNeeded: events), until: deadline), revents != 0 else {
            return nil
        }
        return UInt32(UInt16(bitPattern: revents))
    }
}
