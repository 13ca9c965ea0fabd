import Glibc
import IceboxSystem

/// The daemon's event log, `events.jsonl`: whole lines appended in one write(2) each, renamed to
/// `events.jsonl.1` once it reaches `rotation.maxBytes` (`LogGenerations`). Only the daemon writes
/// it, so the size is summed here (one fstat at open) rather than asked at every line. Readers
/// (`icebox log`, `IceboxClient.events`) read across the generations and follow a rotation.
///
/// The file stays open between lines (open and close were two of a line's three system calls),
/// reopened after a rotation or when the path names another file (checked at most once a second).
final class EventLog {
    let generations: LogGenerations
    let rotation: LogRotation
    /// The current file's size as far as this daemon knows; nil until its first append.
    private var size: UInt64?
    /// The open file (-1: opened at the next append), and its identity, to notice when the path
    /// names another file.
    private var fd: Int32 = -1
    private var identity: (device: UInt64, inode: UInt64) = (0, 0)
    /// When the path is next compared with the open file (monotonic ns).
    private var checkPathAt: UInt64 = 0
    /// Whether the current append failure has been said (`appendOrComplain`).
    private var complained = false
    static let pathCheckIntervalNanos: UInt64 = 1_000_000_000

    init(path: String, rotation: LogRotation) {
        generations = LogGenerations(path: path)
        self.rotation = rotation
    }

    var path: String { generations.path }

    /// Appends one line; a failure is said once on `complaints` (the daemon's stderr, which is
    /// daemon.log), until an append works again. Losing an event line must not stop the daemon, nor
    /// go unseen (`icebox log` empty with nothing to say why).
    func appendOrComplain(_ line: String, complaints: Int32 = STDERR_FILENO) {
        do {
            try append(line)
            complained = false
        } catch {
            if complained { return }
            complained = true
            let text = "icebox: cannot log events: \(error); events are lost until it works again\n"
            _ = text.withCString { p in retryingOnInterrupt { Glibc.write(complaints, p, strlen(p)) } }
        }
    }

    /// Appends one line, then rotates if the file has reached its size.
    func append(_ line: String) throws(SystemError) {
        let now = Clock.monotonicNanos()
        if fd >= 0, now >= checkPathAt {
            checkPathAt = now.saturatingAdd(Self.pathCheckIntervalNanos)
            var st = stat()
            if lstat(path, &st) != 0 || (UInt64(st.st_dev), UInt64(st.st_ino)) != identity { closeFile() }
        }
        if fd < 0 {
            let opened = try systemCall("append to", path: path) {
                open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
            }
            var st = stat()
            let known = fstat(opened, &st) == 0
            fd = opened
            size = known ? UInt64(st.st_size) : 0
            identity = known ? (UInt64(st.st_dev), UInt64(st.st_ino)) : (0, 0)
            checkPathAt = now.saturatingAdd(Self.pathCheckIntervalNanos)
        }
        let text = line.hasSuffix("\n") ? line : line + "\n"
        let n = text.withCString { p in retryingOnInterrupt { Glibc.write(fd, p, strlen(p)) } }
        if n < 0 {
            let error = SystemError("append to", path: path)
            closeFile()  // opened afresh next time (a full disk may have room by then)
            throw error
        }
        size = (size ?? 0).saturatingAdd(UInt64(n))
        if rotation.maxBytes > 0, let size, size >= rotation.maxBytes { rotate() }
    }

    /// App `name`'s newest event in the file's last `scanBytes` that moved it to a state, other
    /// than a re-adoption (which restates a daemon's start before its registry write, so daemons
    /// killed early leave several over one step); nil if none. A daemon taking over asks whether
    /// one before logged a step it did not live to record: a thaw is logged before its reply and
    /// registry write, and a SIGKILL between must not make the next daemon thaw and log it twice.
    func lastStep(of name: String, scanBytes: Int64 = 1 << 20) -> Event? {
        let fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        if fd < 0 { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        // Every line starts with its app (the keys are written sorted); names need no escaping.
        let prefix = Array("{\"app\":\"\(name)\",".utf8)
        var found: Event?
        var scanned: Int64 = 0
        LogLines.backward(fd: fd, end: LogLines.lastLineEnd(fd: fd, end: Int64(st.st_size))) { line in
            scanned += Int64(line.count) + 1
            if line.starts(with: prefix), let event = JSONLines.decode(Event.self, String(decoding: line, as: UTF8.self)),
                event.to != nil, event.kind != .adopt
            {
                found = event
                return false
            }
            return scanned < scanBytes
        }
        return found
    }

    /// Closes the open file; the next append opens the path again.
    func closeFile() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    deinit { closeFile() }

    /// events.jsonl → events.jsonl.1 (the older ones moved up first); the next append creates a new
    /// file. A crash before the rename leaves the file to be rotated at the next append.
    func rotate() {
        generations.shift(keep: rotation.keep)
        // Whatever happens, start counting again: a rename that keeps failing is retried after
        // another maxBytes, not at every line.
        size = 0
        _ = rename(path, generations.generation(1))
        closeFile()
    }
}
