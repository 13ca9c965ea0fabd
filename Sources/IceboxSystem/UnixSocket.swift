import CIceboxShim
import Glibc

/// Unix-domain sockets: the control socket (stream, JSON lines) and the notify sockets
/// (datagram, sd_notify). Descriptors are close-on-exec and, where stated, non-blocking.
package enum UnixSocket {
    /// sun_path holds 107 bytes and a NUL; longer paths are refused with a clear error.
    package static let maxPathLength = 107

    static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws(SystemError) -> R {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.count > maxPathLength { throw SystemError("use socket path (longer than 107 bytes)", path: path, errno: ENAMETOOLONG) }
        // "@name" is the abstract namespace (as systemd's NOTIFY_SOCKET may be): a leading NUL,
        // and the address is exactly as long as the name (no terminating NUL counts).
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let length = abstract ? MemoryLayout<sa_family_t>.size + bytes.count : MemoryLayout<sockaddr_un>.size
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
        }
    }

    /// `withAddress` for a socket just made: closed when the address cannot be made (a path
    /// too long), so the error loses no descriptor.
    static func withAddress<R>(
        _ path: String, closingOnError fd: Int32, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) throws(SystemError) -> R {
        do { return try withAddress(path, body) } catch {
            close(fd)
            throw error
        }
    }

    /// A listening stream socket at path (an old socket file there is replaced), mode 0600,
    /// set by chmod before it listens. Not by narrowing the umask around bind: the umask is the
    /// whole process's, and a directory another thread made meanwhile got it too. Until the
    /// chmod, no one can connect: the socket does not listen yet; and nothing can swap the file
    /// in between, in a runtime directory that is the user's own, 0700 (`IceboxPaths.verify`).
    package static func listen(path: String) throws(SystemError) -> Int32 {
        let fd = try systemCall("create a socket") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        unlink(path)
        let rc = try withAddress(path, closingOnError: fd) { bind(fd, $0, $1) }
        if rc < 0 { let e = SystemError("bind the control socket", path: path); close(fd); throw e }
        if chmod(path, 0o600) < 0 { let e = SystemError("chmod 0600", path: path); close(fd); throw e }
        if Glibc.listen(fd, 128) < 0 { let e = SystemError("listen on", path: path); close(fd); throw e }
        return fd
    }

    /// A blocking connection to a stream socket.
    package static func connect(path: String) throws(SystemError) -> Int32 {
        let fd = try systemCall("create a socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        let rc = try withAddress(path, closingOnError: fd) { addr, len in retryingOnInterrupt { Glibc.connect(fd, addr, len) } }
        if rc < 0 { let e = systemCallError("connect to", path: path, errno: errno); close(fd); throw e }
        return fd
    }

    /// Accepts one connection (non-blocking, close-on-exec), or nil when none is pending.
    package static func accept(_ listener: Int32) -> Int32? {
        let fd = icebox_accept(listener)
        return fd < 0 ? nil : fd
    }

    /// The peer's pid, uid and gid (SO_PEERCRED), taken when it connected.
    package static func peerCredentials(_ fd: Int32) -> (pid: pid_t, uid: uid_t, gid: gid_t)? {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        if icebox_peer_cred(fd, &pid, &uid, &gid) < 0 { return nil }
        return (pid, uid, gid)
    }

    /// A datagram socket that receives sd_notify messages with the sender's credentials.
    package static func bindNotify(path: String) throws(SystemError) -> Int32 {
        let fd = try systemCall("create a socket") {
            socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        unlink(path)
        let rc = try withAddress(path, closingOnError: fd) { bind(fd, $0, $1) }
        if rc < 0 { let e = SystemError("bind the notify socket", path: path); close(fd); throw e }
        var on: Int32 = 1
        if setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, socklen_t(MemoryLayout<Int32>.size)) < 0 {
            let e = SystemError("enable SO_PASSCRED on", path: path); close(fd); throw e
        }
        return fd
    }

    /// One received datagram with its sender and any descriptors (which the caller must close).
    package struct Datagram {
        package var text: String
        package var senderPID: pid_t
        package var fds: [Int32]
    }

    package static func receive(_ fd: Int32) -> Datagram? {
        // Any failure, EAGAIN included, is no datagram.
        guard let got = try? receive(fd, capacity: 4096) else { return nil }
        return Datagram(text: String(decoding: got.bytes, as: UTF8.self), senderPID: got.pid, fds: got.fds)
    }

    /// Receives bytes and any descriptors on a stream socket (non-blocking). nil: would block.
    /// An empty byte array means the peer closed.
    package static func receiveStream(_ fd: Int32) throws(SystemError) -> (bytes: [UInt8], fds: [Int32])? {
        try receive(fd, capacity: 65536).map { ($0.bytes, $0.fds) }
    }

    /// One receive of at most `capacity` bytes, with any descriptors and the sender's pid. nil:
    /// would block.
    private static func receive(_ fd: Int32, capacity: Int) throws(SystemError) -> (bytes: [UInt8], fds: [Int32], pid: pid_t)? {
        var fds = [Int32](repeating: -1, count: 16)
        var nfds: Int32 = 0, pid: pid_t = -1, uid: uid_t = 0
        var n = 0
        // Not zeroed first (a request is a few dozen bytes of a 64 KiB buffer): the bytes
        // kept are the ones the kernel wrote.
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buf, count in
            n = fds.withUnsafeMutableBufferPointer { fdbuf in
                icebox_recv_with_fds_creds(fd, buf.baseAddress!, buf.count, fdbuf.baseAddress, 16, &nfds, &pid, &uid)
            }
            count = max(n, 0)
        }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw SystemError("read from a client connection")
        }
        return (bytes, Array(fds[0..<Int(nfds)]), pid)
    }

    /// Sends all bytes, with descriptors attached to the first chunk.
    package static func send(_ fd: Int32, _ bytes: [UInt8], fds: [Int32] = []) throws(SystemError) {
        var offset = 0
        var attach = fds
        while offset < bytes.count || !attach.isEmpty {
            let n = bytes.withUnsafeBytes { buf in
                attach.withUnsafeBufferPointer { fdbuf in
                    icebox_send_with_fds(fd, buf.baseAddress! + offset, buf.count - offset, fdbuf.baseAddress, Int32(fdbuf.count))
                }
            }
            if n < 0 {
                if errno == EAGAIN {
                    _ = try Poll.wait(fd, events: Int16(POLLOUT), timeoutNanos: 1_000_000_000)
                    continue
                }
                throw SystemError("write to the socket")
            }
            offset += n
            attach = []
        }
    }

    /// Sends one datagram (for tests and the notify client).
    package static func sendDatagram(path: String, _ text: String) throws(SystemError) {
        let fd = try systemCall("create a socket") { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let n = try withAddress(path) { addr, len in
            bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, addr, len) }
        }
        if n < 0 { throw SystemError("send to", path: path) }
    }

    /// One non-blocking send of as much of `bytes` as the socket takes now: the count sent,
    /// 0 when the socket's buffer is full (EAGAIN). Never waits; never raises SIGPIPE.
    package static func sendSome(_ fd: Int32, _ bytes: ArraySlice<UInt8>) throws(SystemError) -> Int {
        if bytes.isEmpty { return 0 }
        let n = bytes.withUnsafeBytes { buf in icebox_send_with_fds(fd, buf.baseAddress!, buf.count, nil, 0) }
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return 0 }
            throw SystemError("write to the socket")
        }
        return n
    }

    /// Whether `fd` is a listening Unix stream socket (what socket activation must hand us).
    package static func isListeningUnixStream(_ fd: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, SOL_SOCKET, name, &value, &len) == 0 ? value : nil
        }
        return option(SO_DOMAIN) == AF_UNIX && option(SO_TYPE) == Int32(SOCK_STREAM.rawValue) && option(SO_ACCEPTCONN) == 1
    }

    /// Makes an inherited descriptor non-blocking and close-on-exec (apps must not inherit it).
    package static func adopt(_ fd: Int32) throws(SystemError) {
        let flags = fcntl(fd, F_GETFL)
        if flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 { throw SystemError("make descriptor \(fd) non-blocking") }
        if fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 { throw SystemError("mark descriptor \(fd) close-on-exec") }
    }
}
