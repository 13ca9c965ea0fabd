import Dispatch
import Glibc
import Synchronization

/// How an `async` call of ``IceboxClient`` ends its wait when its task is cancelled: the
/// exchange runs on a thread of its own (never the cooperative pool's), and the cancellation
/// handler shuts its connection down (`shutdown(2)`), so the thread's poll wakes at once and
/// the call throws. What the daemon had begun goes on: it may or may not have been done.
package final class CallCancellation: Sendable {
    private struct State {
        var fd: Int32?
        var cancelled = false
    }
    private let state = Mutex(State())

    /// Whether the task was cancelled.
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// The exchange's connection, until `detach`; throws if the task was cancelled before.
    func attach(_ fd: Int32, what: String) throws(IceboxError) {
        let cancelled = state.withLock { s in
            if !s.cancelled { s.fd = fd }
            return s.cancelled
        }
        if cancelled { throw Self.error(what) }
    }

    /// The connection is about to be closed: a cancellation no longer touches it.
    func detach() { state.withLock { $0.fd = nil } }

    /// The task was cancelled: the connection, if attached, is shut down (not closed: its
    /// owner closes it, so that the number is never closed twice).
    func cancel() {
        state.withLock { s in
            s.cancelled = true
            if let fd = s.fd { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    static func error(_ what: String) -> IceboxError {
        IceboxError(
            .failure,
            "\(what) cancelled: the task was cancelled while it waited for the icebox daemon; it may or may not have been done",
            hint: "ask the app's state (state(of:)) to know")
    }

    /// Runs `body` (a blocking exchange) on a thread of its own and awaits it; a cancelled
    /// task cancels `body`'s exchange through the `CallCancellation` it is given.
    static func run<T: Sendable>(_ body: @escaping @Sendable (CallCancellation) throws(IceboxError) -> T) async throws(IceboxError) -> T {
        let cancellation = CallCancellation()
        let result: Result<T, IceboxError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, IceboxError>, Never>) in
                // A serial queue of its own targets Dispatch's overcommitting pool, which starts
                // a thread when every one is blocked: a call waiting out a grace never holds a
                // thread of the cooperative pool, nor waits for one.
                DispatchQueue(label: "icebox.client.call").async {
                    do throws(IceboxError) {
                        continuation.resume(returning: .success(try body(cancellation)))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }
}
