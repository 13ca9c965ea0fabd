import Glibc

/// A tiny TCP server on a loopback address and an ephemeral port, for readiness tests. It
/// has no thread: the test's own poll loop calls `pump()`, in the same thread as the probe
/// under test, so a probe that blocked would starve the server and never finish.
final class LoopbackServer {
    enum Behavior {
        /// Once the request's header block has arrived, send these bytes and close.
        case answer(String)
        /// Accept, read, and never answer.
        case silent
    }

    let behavior: Behavior
    let port: UInt16
    private let listener: Int32
    private var connections: [Int32: [UInt8]] = [:]
    /// Every request received in full (header block), as text.
    private(set) var requests: [String] = []
    /// Connections the client closed (or reset) before the server did.
    private(set) var closedByClient = 0

    /// nil when the address cannot be bound (no IPv6 loopback on this host, say).
    init?(_ behavior: Behavior, ipv6: Bool = false) {
        self.behavior = behavior
        let domain = ipv6 ? AF_INET6 : AF_INET
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard Self.bindLoopback(fd, ipv6: ipv6), Glibc.listen(fd, 16) == 0, let port = Self.localPort(fd) else {
            close(fd)
            return nil
        }
        listener = fd
        self.port = port
    }

    deinit {
        close(listener)
        for fd in connections.keys { close(fd) }
    }

    /// The descriptors to poll for reading alongside the probe's.
    var pollDescriptors: [pollfd] {
        [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            + connections.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    }

    /// Accepts, reads and answers whatever is ready; never blocks.
    func pump() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { break }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            connections[fd] = []
        }
        for fd in Array(connections.keys) {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                closedByClient += 1
                drop(fd)
                continue
            }
            guard n > 0 else { continue }
            connections[fd, default: []].append(contentsOf: chunk[0..<n])
            let text = String(decoding: connections[fd] ?? [], as: UTF8.self)
            guard text.contains("\r\n\r\n") else { continue }
            requests.append(text)
            connections[fd] = []
            if case .answer(let response) = behavior {
                let bytes = Array(response.utf8)
                _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                drop(fd)
            }
        }
    }

    private func drop(_ fd: Int32) {
        close(fd)
        connections[fd] = nil
    }

    private static func bindLoopback(_ fd: Int32, ipv6: Bool) -> Bool {
        if ipv6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_addr = in6addr_loopback
            return withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            } == 0
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func localPort(_ fd: Int32) -> UInt16? {
        var addr = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        // sin_port and sin6_port sit at the same offset, right after the family.
        return withUnsafeBytes(of: &addr) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
    }
}
