import Glibc
import Synchronization
import Testing

@testable import IceboxSystem

@Suite("One syscall policy: systemCall")
struct SystemCallTests {
    @Test func aFailureIsThrownWithTheOperationThePathAndTheErrno() {
        let path = "/nonexistent-\(getpid())/file"
        do {
            let fd = try systemCall("open", path: path) { open(path, O_RDONLY | O_CLOEXEC) }
            close(fd)
            Issue.record("opened \(path)")
        } catch {
            #expect(error == SystemError("open", path: path, errno: ENOENT))
            #expect(error.description == "cannot open \(path): No such file or directory")
        }
    }

    @Test func theResultIsReturned() throws {
        let pipe = try PipePair()
        defer {
            close(pipe.readEnd)
            close(pipe.writeEnd)
        }
        var byte: UInt8 = 7
        #expect(try systemCall("write") { write(pipe.writeEnd, &byte, 1) } == 1)
        byte = 0
        #expect(try systemCall("read") { read(pipe.readEnd, &byte, 1) } == 1)
        #expect(byte == 7)
    }

    /// A read blocked on an empty pipe, interrupted by a signal whose handler has no
    /// SA_RESTART: the kernel ends the read with EINTR (counted as a second run of the call),
    /// and systemCall runs it again, which then reads the byte written afterwards.
    @Test func anInterruptedReadIsRunAgain() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: the read ends with EINTR
        var previous = sigaction()
        #expect(sigaction(SIGWINCH, &action, &previous) == 0)
        defer { sigaction(SIGWINCH, &previous, nil) }

        let pipe = try PipePair()
        defer {
            close(pipe.readEnd)
            close(pipe.writeEnd)
        }
        let readEnd = pipe.readEnd
        let reader = Mutex<pthread_t?>(nil)
        let calls = Atomic(0)
        let outcome = Mutex<Result<Int, SystemError>?>(nil)
        let thread = try JoinableThread {
            // A thread inherits its creator's mask, and the test runner's may block it.
            var unblock = sigset_t()
            sigemptyset(&unblock)
            sigaddset(&unblock, SIGWINCH)
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            reader.withLock { $0 = pthread_self() }
            var byte: UInt8 = 0
            let result = Result { () throws(SystemError) -> Int in
                try systemCall("read", path: "the test's pipe") {
                    calls.add(1, ordering: .sequentiallyConsistent)
                    return read(readEnd, &byte, 1)
                }
            }
            outcome.withLock { $0 = result }
        }
        // Signal the reader until its read has been run again (the first run was interrupted),
        // then give it its byte.
        let deadline = Clock.monotonicNanos() + 10_000_000_000
        while calls.load(ordering: .sequentiallyConsistent) < 2 && Clock.monotonicNanos() < deadline {
            if let target = reader.withLock({ $0 }) { pthread_kill(target, SIGWINCH) }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        var byte: UInt8 = 1
        #expect(write(pipe.writeEnd, &byte, 1) == 1)
        #expect(thread.join(until: Clock.monotonicNanos() + 10_000_000_000), "the reader never returned")
        #expect(calls.load(ordering: .sequentiallyConsistent) >= 2, "no read was interrupted")
        let result = try #require(outcome.withLock { $0 })
        #expect(try result.get() == 1)
    }
}
