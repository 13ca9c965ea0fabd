import Glibc

/// The /proc/PID/task directory of one process, kept open while a SIGSTOP freeze or thaw reads its
/// threads. Each thread's stat is opened from it ("TID/stat"): a walk of two path components where
/// the full path is five (7.77 against 8.38 µs a thread, benchmarks/RESULTS.md, session 49). A kept
/// directory also stays the process it was opened for: once that one exits, it lists nothing and
/// reads nothing, whoever has the pid by then.
///
/// Immutable (each listing opens a descriptor of its own, with its own offset), so Sendable; closed
/// with its last reference.
package final class TaskDirectory: Sendable {
    let pid: pid_t
    let procRoot: String
    /// -1 when it could not be opened (gone, or out of descriptors): reads go by path then.
    private let fd: Int32

    package init(pid: pid_t, procRoot: String = "/proc") {
        self.pid = pid
        self.procRoot = procRoot
        fd = retryingOnInterrupt { open("\(procRoot)/\(pid)/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The thread ids listed now (none once the process is gone).
    package func threads() -> [pid_t] {
        guard fd >= 0 else { return ProcFS.threads(of: pid, procRoot: procRoot) }
        let own = retryingOnInterrupt { openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        // Out of descriptors: the path's listing, as when the directory could not be kept.
        guard own >= 0 else { return errno == EMFILE || errno == ENFILE ? ProcFS.threads(of: pid, procRoot: procRoot) : [] }
        guard let dir = fdopendir(own) else {
            close(own)
            return []
        }
        defer { closedir(dir) }
        var tids: [pid_t] = []
        while let entry = readdir(dir) {
            if let tid = withUnsafeBytes(of: entry.pointee.d_name, Self.decimal) { tids.append(tid) }
        }
        return tids
    }

    /// A thread's state letter; nil once it (or its process) is gone.
    package func state(of tid: pid_t) -> Character? {
        fd >= 0 ? ProcFS.state(tid: tid, taskDirectory: fd) : ProcFS.state(pid: pid, tid: tid, procRoot: procRoot)
    }

    /// How many threads the process has now, from the directory's link count (one fstat), as
    /// `ProcFS.threadCount`.
    package func count() -> Int? {
        guard fd >= 0 else { return ProcFS.threadCount(pid: pid, procRoot: procRoot) }
        var st = Glibc.stat()
        guard fstat(fd, &st) == 0, st.st_nlink > 2 else { return nil }
        return Int(st.st_nlink) - 2
    }

    /// A directory entry's name as a thread id: decimal digits up to the NUL, nothing else
    /// ("." and ".." are not). Bounded: nine digits at most, so it cannot overflow.
    private static func decimal(_ name: UnsafeRawBufferPointer) -> pid_t? {
        var value: pid_t = 0
        var digits = 0
        for byte in name {
            if byte == 0 { break }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 9 else { return nil }
            value = value * 10 + pid_t(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 && value > 0 ? value : nil
    }
}
