import Glibc

/// A failed system call: what was being done, on what, and the errno.
/// Its description reads "cannot write /sys/fs/cgroup/x/cgroup.freeze: Permission denied".
/// Usable from inline code: `systemCall`, inlined into its callers, throws it.
@usableFromInline
package struct SystemError: Error, CustomStringConvertible, Equatable, Sendable {
    package var operation: String
    package var path: String?
    package var errno: Int32

    package init(_ operation: String, path: String? = nil, errno: Int32 = Glibc.errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    package var reason: String { String(cString: strerror(errno)) }

    @usableFromInline package var description: String {
        if let path { return "cannot \(operation) \(path): \(reason)" }
        return "cannot \(operation): \(reason)"
    }

    package var isPermissionDenied: Bool { errno == EACCES || errno == EPERM || errno == EROFS }
}

/// Runs a system call that reports failure as -1 and errno, retrying on EINTR. Inlinable, so
/// callers in other modules get it specialized for their integer type: called generically, each
/// first call looked up BinaryInteger's witness tables at run time (page faults in a one-shot).
@inlinable @inline(__always)
package func retryingOnInterrupt<T: BinaryInteger>(_ body: () -> T) -> T {
    while true {
        let rc = body()
        if rc >= 0 || errno != EINTR { return rc }
    }
}
