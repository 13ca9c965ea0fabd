import CIceboxShim
import Glibc

/// A thin epoll wrapper: register descriptors with a token, wait with a deadline.
package final class Epoll {
    package let fd: Int32

    package init() throws(SystemError) { fd = try systemCall("create an epoll instance") { epoll_create1(Int32(EPOLL_CLOEXEC)) } }

    deinit { close(fd) }

    package func add(_ target: Int32, events: UInt32, token: UInt64) throws(SystemError) {
        var ev = epoll_event(events: events, data: epoll_data_t(u64: token))
        if epoll_ctl(fd, EPOLL_CTL_ADD, target, &ev) < 0 { throw SystemError("add descriptor \(target) to epoll") }
    }

    /// Changes the events watched on a descriptor already added.
    package func modify(_ target: Int32, events: UInt32, token: UInt64) throws(SystemError) {
        var ev = epoll_event(events: events, data: epoll_data_t(u64: token))
        if epoll_ctl(fd, EPOLL_CTL_MOD, target, &ev) < 0 { throw SystemError("change descriptor \(target) in epoll") }
    }

    package func remove(_ target: Int32) { _ = epoll_ctl(fd, EPOLL_CTL_DEL, target, nil) }

    /// Waits until something is ready or `timeoutNanos` passes (nil: forever), to the nanosecond
    /// (epoll_pwait2) where the kernel has it: the daemon re-reads a freeze in progress tens of µs
    /// apart, which whole milliseconds would round to 1 ms. A signal (EINTR) is an empty wait, not
    /// retried: the caller's deadlines may have moved. Any other failure (EBADF, EFAULT, EINVAL:
    /// only a bug of ours causes one) is thrown (`systemCallError`), never taken for "nothing
    /// ready", which would have the caller spin or sleep through it.
    package func wait(timeoutNanos: UInt64?, max: Int = 64) throws(SystemError) -> [(token: UInt64, events: UInt32)] {
        var events = [epoll_event](repeating: epoll_event(), count: max)
        let timeout = timeoutNanos.map { Int64(min($0, 60_000_000_000)) } ?? -1
        let n = events.withUnsafeMutableBufferPointer { buf in
            icebox_epoll_wait_ns(fd, buf.baseAddress!, Int32(max), timeout)
        }
        if n < 0 {
            if errno == EINTR { return [] }
            throw systemCallError("epoll_wait", path: nil, errno: errno)
        }
        return events[0..<Int(n)].map { ($0.data.u64, $0.events) }
    }
}

package enum EpollEvents {
    package static let readable = UInt32(EPOLLIN.rawValue)
    package static let writable = UInt32(EPOLLOUT.rawValue)
    package static let priority = UInt32(EPOLLPRI.rawValue)
    package static let hangup = UInt32(EPOLLHUP.rawValue)
    package static let error = UInt32(EPOLLERR.rawValue)
    package static let readHangup = UInt32(EPOLLRDHUP.rawValue)
}
