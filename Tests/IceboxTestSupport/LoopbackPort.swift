import Glibc

/// A loopback (127.0.0.1) TCP port the kernel says is free: bound to port 0, then released.
/// A port made from the test's pid fell in the ephemeral range four times in ten, where a
/// connection of another test (or one in TIME_WAIT) could hold it, and a server that cannot
/// bind left the test waiting for its --ready-timeout.
public func freeLoopbackPort() -> UInt16? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    return bound ? UInt16(bigEndian: addr.sin_port) : nil
}
