import CIceboxShim
import Glibc

/// The two ends of a pipe, both close-on-exec. Used to learn that something happened on another
/// thread (a thread ended, a wait was cancelled) through a descriptor that poll can wait on
/// together with others.
package struct PipePair: Sendable {
    package let readEnd: Int32
    package let writeEnd: Int32

    /// `nonBlockingWrite` sets `O_NONBLOCK` on the write end, so a writer never waits for a reader.
    package init(nonBlockingWrite: Bool = false) throws(SystemError) {
        var fds: [Int32] = [-1, -1]
        guard icebox_pipe_cloexec(&fds) == 0 else { throw SystemError("create a pipe") }
        if nonBlockingWrite { _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK) }
        readEnd = fds[0]
        writeEnd = fds[1]
    }
}
