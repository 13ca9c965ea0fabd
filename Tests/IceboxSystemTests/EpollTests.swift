import Glibc
import Testing

@testable import IceboxSystem

/// epoll_wait fails only on a bug of ours; the failure must reach the caller, not pass for
/// "nothing ready" (the daemon's loop then slept or spun through what it waited for).
struct EpollTests {
    @Test("a wait that the kernel refuses throws, with its errno")
    func failureIsThrown() throws {
        let epoll = try Epoll()
        // Its descriptor number now names a pipe, not an epoll instance: EINVAL. (The pipe's
        // end is the Epoll's to close from here on, as its descriptor was.)
        let pipe = try PipePair()
        let (readEnd, writeEnd) = (pipe.readEnd, pipe.writeEnd)
        defer { close(readEnd) }
        try #require(dup2(writeEnd, epoll.fd) == epoll.fd)
        _ = fcntl(epoll.fd, F_SETFD, FD_CLOEXEC)  // as the epoll descriptor was: no child inherits it
        close(writeEnd)
        #expect(throws: SystemError("epoll_wait", errno: EINVAL)) { try epoll.wait(timeoutNanos: 0) }
    }

    @Test("nothing ready within the time-out is an empty wait; a ready descriptor is reported with its token")
    func readyAndNot() throws {
        let epoll = try Epoll()
        let pipe = try PipePair()
        let (readEnd, writeEnd) = (pipe.readEnd, pipe.writeEnd)
        defer {
            close(readEnd)
            close(writeEnd)
        }
        try epoll.add(readEnd, events: EpollEvents.readable, token: 42)
        #expect(try epoll.wait(timeoutNanos: 1_000_000).isEmpty)
        #expect(write(writeEnd, "x", 1) == 1)
        let ready = try epoll.wait(timeoutNanos: 1_000_000_000)
        #expect(ready.count == 1 && ready.first?.token == 42)
    }
}
