import Glibc

/// Blocking readiness checks with a deadline, for `icebox bench` and `icebox probe`: one
/// TCP connect, or one HTTP GET that must answer 2xx. Addresses are IPv4 literals or
/// "localhost" (benchmarks and probes talk to this machine only).
public enum ReadinessCheck {
    /// Connects to host:port; true if the connection was accepted before the deadline.
    public static func tcp(host: String = "127.0.0.1", port: UInt16, deadline: UInt64) -> Bool {
        guard let fd = connect(host: host, port: port, deadline: deadline) else { return false }
        close(fd)
        return true
    }

    /// GETs the URL (http only) and reports whether the status is 2xx.
    public static func http(_ url: String, deadline: UInt64) -> Bool {
        guard let target = HTTPURL(url), let fd = connect(host: target.host, port: target.port, deadline: deadline) else {
            return false
        }
        defer { close(fd) }
        let request = "GET \(target.path) HTTP/1.0\r\nHost: \(target.host)\r\nUser-Agent: icebox\r\nConnection: close\r\n\r\n"
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EAGAIN && waitFor(fd, Int16(POLLOUT), deadline) { continue }
                return false
            }
            sent += n
        }
        // Only the status line matters: "HTTP/1.x 200 ...".
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !response.contains(10) && response.count < 8192 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                response.append(contentsOf: chunk[0..<n])
            } else if n < 0 && errno == EAGAIN && waitFor(fd, Int16(POLLIN), deadline) {
                continue
            } else {
                break
            }
        }
        let line = String(decoding: response.prefix { $0 != 10 }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else { return false }
        return (200..<300).contains(status)
    }

    /// A non-blocking connect finished with poll, or nil if refused or past the deadline.
    static func connect(host: String, port: UInt16, deadline: UInt64) -> Int32? {
        let address = host == "localhost" ? "127.0.0.1" : host
        guard let fd = try? TCPProbe.start(port: port, host: address) else { return nil }
        if waitFor(fd, Int16(POLLOUT), deadline) && TCPProbe.succeeded(fd) { return fd }
        close(fd)
        return nil
    }

    static func waitFor(_ fd: Int32, _ events: Int16, _ deadline: UInt64) -> Bool {
        while true {
            let now = Clock.monotonicNanos()
            if now >= deadline { return false }
            var pfd = pollfd(fd: fd, events: events, revents: 0)
            let ms = Int32(min((deadline - now + 999_999) / 1_000_000, 60_000))
            let rc = poll(&pfd, 1, ms)
            if rc > 0 { return true }
            if rc < 0 && errno != EINTR { return false }
        }
    }
}

/// The parts of an http:// URL icebox needs.
public struct HTTPURL: Equatable, Sendable {
    public var host: String
    public var port: UInt16
    public var path: String

    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        let rest = text.dropFirst(7)
        let hostPort = rest.prefix { $0 != "/" }
        path = rest.count > hostPort.count ? String(rest.dropFirst(hostPort.count)) : "/"
        if let colon = hostPort.lastIndex(of: ":") {
            guard let p = UInt16(hostPort[hostPort.index(after: colon)...]), p > 0 else { return nil }
            host = String(hostPort[..<colon])
            port = p
        } else {
            host = String(hostPort)
            port = 80
        }
        var addr = in_addr()
        guard !host.isEmpty, host == "localhost" || inet_pton(AF_INET, host, &addr) == 1 else { return nil }
    }
}
