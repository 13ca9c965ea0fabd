import Glibc

/// A way to wake a thread blocked in poll from another thread: `signal()` makes
/// `descriptor` readable, for good. The pipe lives as long as the last holder.
package final class Wakeup: Sendable {
    private let pipe: PipePair

    package init() throws(SystemError) { pipe = try PipePair(nonBlockingWrite: true) }

    /// The descriptor to poll for POLLIN.
    package var descriptor: Int32 { pipe.readEnd }

    /// Wakes the waiter; safe from any thread, any number of times (a full pipe is already
    /// readable, so a write that would block is dropped).
    package func signal() {
        var byte: UInt8 = 1
        _ = retryingOnInterrupt { write(pipe.writeEnd, &byte, 1) }
    }

    deinit {
        close(pipe.readEnd)
        close(pipe.writeEnd)
    }
}
