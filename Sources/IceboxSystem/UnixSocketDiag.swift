import Glibc

/// The host's unix sockets as the kernel's sock_diag reports them (NETLINK_SOCK_DIAG,
/// SOCK_DIAG_BY_FAMILY for AF_UNIX with UDIAG_SHOW_PEER): each socket's inode, type and the inode
/// of the socket it is connected to. /proc/net/unix has no peer; this is how `ss -x` pairs the two
/// ends. Only the calling process's network namespace is seen.
package enum UnixSocketDiag {
    package struct Socket: Equatable, Sendable {
        package var inode: UInt32
        /// SOCK_STREAM (1), SOCK_DGRAM (2), SOCK_SEQPACKET (5).
        package var type: UInt8
        /// The connected peer's inode; 0: none (listening, unconnected, or a datagram socket that
        /// never connected).
        package var peer: UInt32
    }

    /// Every unix socket of this network namespace, by inode. Throws if netlink refuses or
    /// does not answer within `timeoutNanos`.
    package static func sockets(timeoutNanos: UInt64 = 2_000_000_000) throws(SystemError) -> [UInt32: Socket] {
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4 /* NETLINK_SOCK_DIAG */)
        if fd < 0 { throw SystemError("open a NETLINK_SOCK_DIAG socket") }
        defer { close(fd) }
        // nlmsghdr (16 bytes) + unix_diag_req (24 bytes).
        var request = [UInt8](repeating: 0, count: 40)
        func put32(_ v: UInt32, at i: Int) { withUnsafeBytes(of: v.littleEndian) { for (k, b) in $0.enumerated() { request[i + k] = b } } }
        func put16(_ v: UInt16, at i: Int) { withUnsafeBytes(of: v.littleEndian) { for (k, b) in $0.enumerated() { request[i + k] = b } } }
        put32(40, at: 0)
        put16(20 /* SOCK_DIAG_BY_FAMILY */, at: 4)
        put16(0x1 | 0x300 /* NLM_F_REQUEST | NLM_F_DUMP */, at: 6)
        put32(1, at: 8)
        request[16] = UInt8(AF_UNIX)
        put32(0xFFFF_FFFF, at: 20)  // every state
        put32(0x4 /* UDIAG_SHOW_PEER */, at: 28)
        // Unconnected and unbound: netlink sends to the kernel (port 0) by default.
        let sent = send(fd, request, request.count, 0)
        if sent != request.count { throw SystemError("send a unix sock_diag request") }
        let deadline = Clock.monotonicNanos() &+ timeoutNanos
        var result: [UInt32: Socket] = [:]
        var buffer = [UInt8](repeating: 0, count: 32_768)
        while true {
            guard Clock.monotonicNanos() < deadline else { throw SystemError("read the unix sock_diag answer", errno: ETIMEDOUT) }
            if try Poll.wait(fd, events: Int16(POLLIN), until: deadline) == 0 { continue }
            let n = try systemCall("read the unix sock_diag answer") { recv(fd, &buffer, buffer.count, 0) }
            var offset = 0
            while offset + 16 <= n {
                let length = Int(read32(buffer, offset))
                let kind = read16(buffer, offset + 4)
                guard length >= 16, offset + length <= n else { break }
                if kind == 3 /* NLMSG_DONE */ { return result }
                if kind == 2 /* NLMSG_ERROR */ {
                    let code = Int32(bitPattern: read32(buffer, offset + 16))
                    throw SystemError("read unix sockets through sock_diag", errno: code < 0 ? -code : EIO)
                }
                // unix_diag_msg: family, type, state, pad, inode, cookie[2]; then attributes.
                let body = offset + 16
                if length >= 32 {
                    let type = buffer[body + 1]
                    let inode = read32(buffer, body + 4)
                    var peer: UInt32 = 0
                    var attr = body + 16
                    while attr + 4 <= offset + length {
                        let attrLength = Int(read16(buffer, attr))
                        let attrType = read16(buffer, attr + 2)
                        guard attrLength >= 4, attr + attrLength <= offset + length else { break }
                        if attrType == 2 /* UNIX_DIAG_PEER */, attrLength >= 8 { peer = read32(buffer, attr + 4) }
                        attr += (attrLength + 3) & ~3
                    }
                    result[inode] = Socket(inode: inode, type: type, peer: peer)
                }
                offset += (length + 3) & ~3
            }
        }
    }

    private static func read32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }

    private static func read16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
}
