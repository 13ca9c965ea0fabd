import Glibc
import IceboxSystem
import Synchronization

/// One cgroup control file (cgroup.events, cgroup.freeze, freezer.state, cgroup.procs), a cgroup's
/// directory (link count) or an app's /proc/PID/stat, held open for its owner's life and used at
/// offset 0 with pread/pwrite: a freeze's hundreds of re-reads cost no open/close, and the
/// descriptor read is the one the loop polls for POLLPRI (the read re-arms the notification).
///
/// Opened on first use. `close()` is final: later uses open the file per call, so a closed (maybe
/// reused) descriptor number is never touched. `release()` closes it until the next use.
///
/// Sendable: the descriptor lives in a Mutex, held across each pread/pwrite so no close slips in.
package final class CgroupFile: Sendable {
    package let path: String
    private let writable: Bool
    private let state = Mutex<State>(.unopened)

    private enum State {
        case unopened
        case open(Int32)
        case closed
    }

    /// `writable`: opened O_RDWR (cgroup.freeze, freezer.state), else O_RDONLY (cgroup.events).
    package init(path: String, writable: Bool) {
        self.path = path
        self.writable = writable
    }

    deinit {
        if case .open(let fd) = state.withLock({ $0 }) { Glibc.close(fd) }
    }

    /// Opens the file now if it is not open yet (to report a problem early, at creation).
    package func open() throws(SystemError) {
        try state.withLock { (s: inout State) throws(SystemError) in _ = try Self.descriptor(&s, path, writable) }
    }

    /// The whole (small) file, read from offset 0 of the kept descriptor.
    package func read() throws(SystemError) -> String {
        try state.withLock { (s: inout State) throws(SystemError) -> String in
            guard let fd = try Self.descriptor(&s, path, writable) else { return try FileIO.read(path) }
            return try FileIO.pread(fd: fd, path: path)
        }
    }

    /// The whole file, however long (cgroup.procs): preads from offset 0 until one returns 0.
    package func readAll() throws(SystemError) -> String {
        try state.withLock { (s: inout State) throws(SystemError) -> String in
            guard let fd = try Self.descriptor(&s, path, writable) else { return try FileIO.read(path) }
            return try FileIO.preadAll(fd: fd, path: path)
        }
    }

    /// The decimal number the file holds (a counter such as memory.current), read with one pread of
    /// the kept descriptor. `opening`: open the file now if it is not open yet (and keep it);
    /// without, nil when it is not open. nil also when it cannot be read.
    package func readCounter(opening: Bool) -> UInt64? {
        state.withLock { s -> UInt64? in
            if case .unopened = s, !opening { return nil }
            // Unopenable (a cgroup removed meanwhile): the counter is unknown, never 0.
            guard let fd = try? Self.descriptor(&s, path, writable) else { return nil }
            return FileIO.preadCounter(fd: fd)
        }
    }

    /// Writes a value in one pwrite at offset 0, as the kernel expects of a control file.
    package func write(_ value: String) throws(SystemError) {
        try state.withLock { (s: inout State) throws(SystemError) in
            guard let fd = try Self.descriptor(&s, path, writable) else { return try FileIO.write(path, value) }
            try FileIO.pwrite(fd: fd, path: path, value)
        }
    }

    /// The descriptor to poll (EPOLLPRI for cgroup.events), opened if needed; nil once closed
    /// or when the file cannot be opened. It belongs to this object: never close it yourself.
    package var watchDescriptor: Int32? {
        // nil: the caller re-checks on its back-off deadline, and that read throws the error.
        state.withLock { s in try? Self.descriptor(&s, path, writable) }
    }

    /// The file's status from the kept descriptor (fstat; opened on first use), or from its path
    /// (lstat) once closed; nil when neither works. For a cgroup's directory, whose link count says
    /// whether it has sub-cgroups.
    package func status() -> stat? {
        state.withLock { s -> stat? in
            var st = stat()
            // Not opened (closed for good, or removed): the path's lstat below answers instead.
            if let fd = try? Self.descriptor(&s, path, writable) {
                return fstat(fd, &st) == 0 ? st : nil
            }
            return lstat(path, &st) == 0 ? st : nil
        }
    }

    /// `body` with the kept descriptor (opened on first use), under the lock, so a close
    /// cannot slip in; nil when the file is closed for good or cannot be opened.
    package func withDescriptor<T>(_ body: (Int32) -> T?) -> T? {
        state.withLock { s -> T? in
            // nil: the caller falls back to the path (as the notice's SIGUSR1 check does).
            guard let fd = try? Self.descriptor(&s, path, writable) else { return nil }
            return body(fd)
        }
    }

    /// Closes the descriptor for good (closing also removes it from any epoll set).
    package func close() {
        let old = state.withLock { s in
            defer { s = .closed }
            return s
        }
        // Never retried on EINTR: Linux releases the descriptor either way.
        if case .open(let fd) = old { Glibc.close(fd) }
    }

    /// Closes the descriptor until the next use (a daemon short of descriptors, between
    /// operations); the caller must not be polling it: its number may be reused.
    package func release() {
        let old = state.withLock { s in
            defer { if case .open = s { s = .unopened } }
            return s
        }
        if case .open(let fd) = old { Glibc.close(fd) }
    }

    /// The open descriptor (opening it on first use), or nil once closed.
    private static func descriptor(_ s: inout State, _ path: String, _ writable: Bool) throws(SystemError) -> Int32? {
        switch s {
        case .open(let fd): return fd
        case .closed: return nil
        case .unopened:
            let fd = try FileIO.openDescriptor(path, flags: writable ? O_RDWR : O_RDONLY)
            s = .open(fd)
            return fd
        }
    }
}
