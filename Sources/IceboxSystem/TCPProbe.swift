import Glibc

/// An address a readiness probe may connect to: an IPv4 or IPv6 literal, or "localhost"
/// (taken as 127.0.0.1). Host names are not resolved: getaddrinfo blocks, and probes run
/// inside the daemon's single event loop; they talk to this machine anyway.
package struct IPAddress: Equatable, Sendable, CustomStringConvertible {
    package enum Family: Equatable, Sendable { case v4, v6 }

    package let family: Family
    /// The literal as inet_pton accepts it: "127.0.0.1" or "::1", never bracketed.
    package let literal: String

    package static let loopback = IPAddress("127.0.0.1")!

    /// nil for anything but "localhost" or an address literal.
    package init?(_ text: String) {
        if text == "localhost" {
            self = .loopback
            return
        }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            family = .v4
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            family = .v6
        } else {
            return nil
        }
        literal = text
    }

    /// As it appears in a URL or a Host header: IPv6 in brackets.
    package var description: String { family == .v6 ? "[\(literal)]" : literal }

    /// Calls `body` with this address and `port` as a sockaddr.
    func withSocketAddress<R>(port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch family {
        case .v4:
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            inet_pton(AF_INET, literal, &addr.sin_addr)
            return withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6:
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = port.bigEndian
            inet_pton(AF_INET6, literal, &addr.sin6_addr)
            return withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }
}

/// Non-blocking TCP connects for readiness probes: `start` returns at once, the caller
/// watches the descriptor for writability and then asks `state` how the connect went.
package enum TCPProbe {
    /// How a non-blocking connect stands.
    package enum ConnectState: Equatable, Sendable {
        case connected
        case inProgress
        /// The connect failed; the errno says why (ECONNREFUSED when nothing listens).
        case failed(Int32)
    }

    /// Starts a connect and returns its descriptor (non-blocking, close-on-exec). Throws when
    /// the connect fails at once, as a refused connect to a loopback port does.
    package static func start(_ address: IPAddress = .loopback, port: UInt16) throws(SystemError) -> Int32 {
        let domain = address.family == .v6 ? AF_INET6 : AF_INET
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        if fd < 0 { throw SystemError("create a socket") }
        let rc = address.withSocketAddress(port: port) { Glibc.connect(fd, $0, $1) }
        if rc < 0 && errno != EINPROGRESS {
            let e = SystemError("connect to", path: "\(address):\(port)")
            close(fd)
            throw e
        }
        return fd
    }

    /// Once the descriptor polled writable (or reported an error): whether the connect is done.
    /// Writability alone is not proof, so the peer's address is asked for too. Reading SO_ERROR
    /// clears it: call this once per wake-up.
    package static func state(_ fd: Int32) -> ConnectState {
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 { return .failed(errno) }
        if err != 0 { return .failed(err) }
        var peer = sockaddr_storage()
        var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) }
        }
        if rc == 0 { return .connected }
        return errno == ENOTCONN ? .inProgress : .failed(errno)
    }
}
