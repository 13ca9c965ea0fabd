import Glibc
import IceboxSystem

/// The daemon's event log, `events.jsonl`: whole lines appended in one write(2) each, and
/// rotated by renaming once the file has reached `rotation.maxBytes` (to `events.jsonl.1`,
/// the older ones moving up; see `LogGenerations`). Only the daemon writes it, so the size
/// is tracked here rather than asked of the kernel at every line: one fstat when the first
/// line is written, then a sum. Readers (`icebox log`, `IceboxClient.events`) read across
/// the generations and follow a rotation.
final class EventLog {
    let generations: LogGenerations
    let rotation: LogRotation
    /// The current file's size as far as this daemon knows; nil until its first append.
    private var size: UInt64?

    init(path: String, rotation: LogRotation) {
        generations = LogGenerations(path: path)
        self.rotation = rotation
    }

    var path: String { generations.path }

    /// Appends one line, then rotates if the file has reached its size. Errors are the
    /// caller's to ignore: losing an event line must not stop the daemon.
    func append(_ line: String) throws(SystemError) {
        let fd = retryingOnInterrupt { open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        if fd < 0 { throw SystemError("append to", path: path) }
        defer { close(fd) }
        if size == nil {
            var st = stat()
            size = fstat(fd, &st) == 0 ? UInt64(st.st_size) : 0
        }
        let text = line.hasSuffix("\n") ? line : line + "\n"
        let n = text.withCString { p in retryingOnInterrupt { Glibc.write(fd, p, strlen(p)) } }
        if n < 0 { throw SystemError("append to", path: path) }
        size = (size ?? 0).saturatingAdd(UInt64(n))
        if rotation.maxBytes > 0, let size, size >= rotation.maxBytes { rotate() }
    }

    /// events.jsonl → events.jsonl.1 (after the older ones moved up). The next append
    /// creates a new file. A crash before the rename leaves the file as it was, to be
    /// rotated at the next append; after it, the next append starts the new file.
    func rotate() {
        generations.shift(keep: rotation.keep)
        // Whatever happens, start counting again: a rename that keeps failing is retried
        // after another maxBytes, not at every line.
        size = 0
        _ = rename(path, generations.generation(1))
    }
}
