import Glibc
import IceboxSystem

/// Why CRIU cannot checkpoint an app (issue 32): what its processes hold that a dump of their tree
/// cannot take. Found before an eviction to disk (`CheckpointObstacle.find`), so the app is killed
/// as today rather than failing a dump halfway.
package enum CheckpointObstacle: Equatable, Sendable, CustomStringConvertible {
    /// A connected stream (or seqpacket) unix socket whose other end is held by no process of the
    /// app: criu's "Can't dump half of stream unix connection" (X11, Wayland, D-Bus, PipeWire
    /// clients, a journald stdout stream). `peerHolder`: a process outside holding the other end
    /// (nil: none found, e.g. a socket of the kernel's or already closed).
    case streamSocketToOutside(pid: pid_t, fd: Int32, inode: UInt32, peerInode: UInt32, peerHolder: pid_t?)
    /// An io_uring instance (criu has no support for io_uring).
    case ioUring(pid: pid_t, fd: Int32)
    /// A perf event descriptor (unsupported by criu).
    case perfEvent(pid: pid_t, fd: Int32)
    /// A userfaultfd descriptor (unsupported by criu outside its own lazy pages).
    case userfaultfd(pid: pid_t, fd: Int32)

    package var description: String {
        switch self {
        case .streamSocketToOutside(let pid, let fd, let inode, let peer, let holder):
            let who = holder.map { "pid \($0), outside the app" } ?? "no process of the app"
            return "pid \(pid) fd \(fd): a stream unix socket (inode \(inode)) connected to inode \(peer), held by \(who)"
        case .ioUring(let pid, let fd): return "pid \(pid) fd \(fd): an io_uring instance"
        case .perfEvent(let pid, let fd): return "pid \(pid) fd \(fd): a perf event"
        case .userfaultfd(let pid, let fd): return "pid \(pid) fd \(fd): a userfaultfd"
        }
    }

    /// What a descriptor's /proc/PID/fd link names, for the obstacles found by name alone.
    static func byName(_ target: String, pid: pid_t, fd: Int32) -> CheckpointObstacle? {
        switch target {
        case "anon_inode:[io_uring]": return .ioUring(pid: pid, fd: fd)
        case "anon_inode:[perf_event]": return .perfEvent(pid: pid, fd: fd)
        case "anon_inode:[userfaultfd]": return .userfaultfd(pid: pid, fd: fd)
        default: return nil
        }
    }

    /// The socket inode a /proc/PID/fd link names ("socket:[12345]"), else nil.
    static func socketInode(_ target: String) -> UInt32? {
        guard target.hasPrefix("socket:["), target.hasSuffix("]") else { return nil }
        return UInt32(target.dropFirst("socket:[".count).dropLast())
    }

    /// Every descriptor of `pid` with what its link names (a process gone meanwhile: none).
    static func descriptors(of pid: pid_t, procRoot: String = "/proc") -> [(fd: Int32, target: String)] {
        let dir = "\(procRoot)/\(pid)/fd"
        // A process gone meanwhile has no descriptors, as documented above.
        return ((try? FileIO.list(dir)) ?? []).compactMap { name in
            guard let fd = Int32(name), let target = FileIO.readLink(dir + "/" + name) else { return nil }
            return (fd, target)
        }
    }

    /// The obstacles of an app whose processes are `pids` (its cgroup's members, the init of a
    /// --pid-namespace app included): socket peers from sock_diag, a holder outside by a scan of
    /// /proc only when needed. Throws only if sock_diag cannot be read while the app has sockets.
    package static func find(pids: [pid_t]) throws(SystemError) -> [CheckpointObstacle] {
        var found: [CheckpointObstacle] = []
        var sockets: [(pid: pid_t, fd: Int32, inode: UInt32)] = []
        for pid in pids {
            for (fd, target) in descriptors(of: pid) {
                if let obstacle = byName(target, pid: pid, fd: fd) {
                    found.append(obstacle)
                } else if let inode = socketInode(target) {
                    sockets.append((pid, fd, inode))
                }
            }
        }
        guard !sockets.isEmpty else { return found }
        let diag = try UnixSocketDiag.sockets()
        let inside = Set(sockets.map(\.inode))
        var outside: [(pid: pid_t, fd: Int32, inode: UInt32, peer: UInt32)] = []
        for s in sockets {
            // Not a unix socket (TCP, netlink: not in the unix dump), a datagram one, or one
            // not connected: nothing here stops a dump.
            guard let unix = diag[s.inode], unix.type == UInt8(SOCK_STREAM.rawValue) || unix.type == UInt8(SOCK_SEQPACKET.rawValue),
                unix.peer != 0, !inside.contains(unix.peer)
            else { continue }
            outside.append((s.pid, s.fd, s.inode, unix.peer))
        }
        guard !outside.isEmpty else { return found }
        let holders = holders(of: Set(outside.map(\.peer)), excluding: Set(pids))
        for o in outside {
            found.append(.streamSocketToOutside(pid: o.pid, fd: o.fd, inode: o.inode, peerInode: o.peer, peerHolder: holders[o.peer]))
        }
        return found
    }

    /// A process (not in `excluding`) holding each of the socket inodes, from /proc/*/fd.
    static func holders(of inodes: Set<UInt32>, excluding: Set<pid_t>) -> [UInt32: pid_t] {
        var result: [UInt32: pid_t] = [:]
        // /proc unlistable: no holder named; the obstacle is then reported without one.
        for pid in ((try? FileIO.list("/proc")) ?? []).compactMap({ pid_t($0) }) where !excluding.contains(pid) {
            for (_, target) in descriptors(of: pid) {
                if let inode = socketInode(target), inodes.contains(inode), result[inode] == nil { result[inode] = pid }
            }
            if result.count == inodes.count { break }
        }
        return result
    }
}
