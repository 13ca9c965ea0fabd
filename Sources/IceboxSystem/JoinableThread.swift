import Glibc
import Synchronization

/// A POSIX thread that runs one closure and can be joined with a deadline. For work that blocks by
/// design (an event loop in epoll_wait, a follower in poll), which must never sit on Swift's
/// cooperative thread pool.
///
/// The thread closes the write end of a pipe as its last act; `join(until:)` polls the read end, so
/// a join that would wait past its deadline gives up instead of blocking forever (pthread_join has
/// no time-out). A thread never joined is detached when this object goes.
package final class JoinableThread: Sendable {
    private let thread: pthread_t
    private let finished: Int32  // the read end: hangs up when the thread has run its closure
    private let joined = Mutex(false)

    /// Starts a thread running `body`.
    package init(_ body: sending @escaping () -> Void) throws(SystemError) {
        let pipe = try PipePair()
        let start = ThreadStart(body: body, finishedWriteEnd: pipe.writeEnd)
        let context = Unmanaged.passRetained(start).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                let start = Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue()
                start.body()
                close(start.finishedWriteEnd)
                return nil
            }, context)
        if rc != 0 {
            Unmanaged<ThreadStart>.fromOpaque(context).release()
            close(pipe.readEnd)
            close(pipe.writeEnd)
            throw SystemError("start a thread (pthread_create)", errno: rc)
        }
        self.thread = thread
        self.finished = pipe.readEnd
    }

    /// Whether the closure has returned (the thread may still be exiting).
    package var hasFinished: Bool { Poll.ready(finished, Int16(POLLIN)) }

    /// The descriptor that becomes readable (end of file) once the closure has returned.
    package var finishedDescriptor: Int32 { finished }

    /// Waits until the thread has finished, or the deadline (monotonic ns) passes. Returns
    /// whether it finished (and was joined).
    @discardableResult
    package func join(until deadline: UInt64) -> Bool {
        guard ((try? Poll.wait(finished, events: Int16(POLLIN), until: deadline)) ?? 0) != 0 else { return false }
        return joined.withLock { done in
            if !done {
                pthread_join(thread, nil)
                done = true
            }
            return true
        }
    }

    deinit {
        if !joined.withLock({ $0 }) { pthread_detach(thread) }
        close(finished)
    }
}

/// What a new thread starts with. `@unchecked Sendable`: handed to exactly one new thread
/// through pthread_create's context pointer and never touched by the creating thread again.
private final class ThreadStart: @unchecked Sendable {
    let body: () -> Void
    let finishedWriteEnd: Int32

    init(body: sending @escaping () -> Void, finishedWriteEnd: Int32) {
        self.body = body
        self.finishedWriteEnd = finishedWriteEnd
    }
}
