import Glibc

/// Runs a system call that fails with -1 and errno, on a descriptor and buffers of our own: retries
/// EINTR, stops a debug build (and the tests) on EBADF or EFAULT, which only a bug of ours causes,
/// and throws `SystemError` for anything else (those two included in a release build, where a bug
/// must not take the daemon down).
///
/// Not for a descriptor someone else handed us (SCM_RIGHTS from a client, a pidfd of a process that
/// may be gone, one inherited from a service manager): there EBADF can be the world's doing, so
/// such a caller checks errno itself.
///
/// Inlinable and always inlined, for the reason `retryingOnInterrupt` gives. The failure path is
/// one call out of line (`systemCallError`), and `path` an autoclosure, so a path built by
/// concatenation is built only when the call fails.
@inlinable @inline(__always)
package func systemCall<T: BinaryInteger>(
    _ operation: String, path: @autoclosure () -> String? = nil, _ body: () -> T
) throws(SystemError) -> T {
    let rc = retryingOnInterrupt(body)
    if rc >= 0 { return rc }
    let code = errno  // before `path()`, whose concatenation may allocate and change it
    throw systemCallError(operation, path: path(), errno: code)
}

/// The error `systemCall` throws for `errno` (not EINTR, which it retries): asserts first on a bug
/// of ours (EBADF, EFAULT). Out of line: only a failure pays for it, and the assertion follows this
/// module's build configuration.
@usableFromInline
package func systemCallError(_ operation: String, path: String?, errno code: Int32) -> SystemError {
    let error = SystemError(operation, path: path, errno: code)
    if code == EBADF || code == EFAULT { assertionFailure("a bug of ours: \(error)") }
    return error
}
