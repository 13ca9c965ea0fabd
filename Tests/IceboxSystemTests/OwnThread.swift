import Dispatch
import Foundation

/// Runs a test's body on a thread of its own and returns what it returned (or throws what it
/// threw): the scheduling and CPUs a test changes are then never those of a thread other
/// tests run on.
enum OwnThread {
    private final class Box<T>: @unchecked Sendable { var value: T? }

    static func run<T, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) throws(E) -> T {
        let done = DispatchSemaphore(value: 0)
        let box = Box<Result<T, E>>()
        let thread = Thread {
            box.value = Result { () throws(E) in try body() }
            done.signal()
        }
        thread.start()
        done.wait()
        return try box.value!.get()
    }
}
