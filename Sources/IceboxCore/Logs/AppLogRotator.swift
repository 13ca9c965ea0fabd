import Glibc
import IceboxSystem

/// Rotates the apps' output logs (`logs/NAME.log`) as logrotate's `copytruncate`: copied to
/// NAME.log.1 (the older ones moving up), then truncated. Not renamed as the event log is: the app
/// writes its stdout and stderr straight into the file through a descriptor the daemon cannot swap,
/// and a pipe through the daemon would block apps on a full pipe while it is stopped or restarting.
/// The app opened the file O_APPEND, so its writes land at the new end. Lost: lines written between
/// the copy's end and the truncation (one rename and one ftruncate, microseconds).
///
/// The daemon never sees those writes, so it watches the directory with inotify (IN_MODIFY), at
/// most once a second: after a change the descriptor leaves the loop's epoll set until the check
/// (`armed`), so a chatty app costs one wake-up and one stat a second, a quiet one nothing. Without
/// inotify (`Inotify.isExhausted`) the sizes are checked every second, rather than logs growing
/// unbounded. A copy moves at most `stepBytes` a turn, so a large log never holds the loop.
///
/// A generation holds at most `bound(maxBytes)`, the newest bytes: an app writing faster than the
/// once-a-second rotation grows the file far past the size, and a copy of all of it chases a writer
/// it may not catch (`yes`: 940 MB in 2 s). Past the bound, the copy starts `maxBytes` from the end
/// and stops at the bound; the rest goes with the truncation, said in the event log.
final class AppLogRotator {
    private struct Copy {
        var name: String
        var source: Int32
        var target: Int32
        /// Where the copy began (bytes before it are dropped) and how far it has read.
        var start: Int64 = 0
        var copied: Int64 = 0
        /// Where it stops, whatever the app writes meanwhile.
        var limit: Int64
    }

    let directory: String
    let rotation: LogRotation
    private let inotify: Inotify?
    /// Why the check runs every second rather than on inotify's word: nil with inotify.
    private(set) var pollingBecause: SystemError?
    private var schedule = RefreshSchedule(intervalNanos: 1_000_000_000)
    private var copies: [Copy] = []
    /// Whether the inotify descriptor is in the loop's epoll set: not from a change to its check.
    private(set) var armed = true
    static let stepBytes = 1 << 20

    init(directory: String, rotation: LogRotation) throws(SystemError) {
        self.directory = directory
        self.rotation = rotation
        do {
            let watcher = try Inotify()
            try watcher.addWatch(directory, mask: UInt32(IN_MODIFY))
            inotify = watcher
        } catch  where Inotify.isExhausted(error) {
            inotify = nil
            pollingBecause = error
            schedule.changed(now: Clock.monotonicNanos())
        }
    }

    /// The descriptor for the loop's epoll set; nil while polling.
    var fd: Int32? { inotify?.fd }

    /// When `step` must run next: at once while a copy is under way, else at the check.
    var nextDeadline: UInt64? { copies.isEmpty ? schedule.due : 0 }

    /// The watched directory changed: check it within the second.
    func changed(now: UInt64) {
        armed = false
        schedule.changed(now: now)
    }

    /// Runs the check if due, then copies up to `stepBytes`; returns what failed, by app.
    func step(now: UInt64) -> [(app: String, text: String)] {
        var failures: [(app: String, text: String)] = []
        if let due = schedule.due, due <= now {
            schedule.wrote(now: now)
            armed = true
            if inotify == nil { schedule.changed(now: now) }
            for name in modifiedLogs() where !copies.contains(where: { $0.name == name }) {
                do { try startIfDue(name) } catch { failures.append((Self.app(name), "cannot rotate its output log: \(error)")) }
            }
        }
        var budget = Self.stepBytes
        var index = 0
        while index < copies.count, budget > 0 {
            let done: Bool
            do { done = try advance(&copies[index], budget: &budget) } catch {
                let copy = copies.remove(at: index)
                failures.append((Self.app(copy.name), "cannot rotate its output log: \(error)"))
                close(copy.source)
                close(copy.target)
                unlink(temporaryPath(copy.name))
                continue
            }
            guard done else {
                index += 1
                continue
            }
            let copy = copies.remove(at: index)
            do {
                if let dropped = try finish(copy) { failures.append((Self.app(copy.name), dropped)) }
            } catch {
                failures.append((Self.app(copy.name), "cannot rotate its output log: \(error)"))
            }
        }
        return failures
    }

    /// The app logs written since the last check (all of them if the kernel's queue
    /// overflowed, or without inotify): NAME.log, never a generation or a copy in progress.
    private func modifiedLogs() -> Set<String> {
        // Nothing readable from inotify (a queue read failing) is taken as no change: the size
        // check at the next event or deadline still rotates what grew.
        let events = inotify.map { (try? $0.read()) ?? [] }
        var names = Set((events ?? []).filter { $0.mask & UInt32(IN_MODIFY) != 0 }.map(\.name))
        if events?.contains(where: { $0.mask & UInt32(IN_Q_OVERFLOW) != 0 }) ?? true {
            // An unlistable directory has no logs to check; the next overflow or event lists it.
            names = Set((try? FileIO.list(directory)) ?? [])
        }
        return names.filter { $0.hasSuffix(".log") && !$0.hasPrefix(".") }
    }

    private func startIfDue(_ name: String) throws(SystemError) {
        let path = directory + "/" + name
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, UInt64(st.st_size) >= rotation.maxBytes else { return }
        // Read and write: the same descriptor truncates the file once copied.
        let source = try FileIO.openDescriptor(path, flags: O_RDWR)
        let temporary = temporaryPath(name)
        let target = retryingOnInterrupt { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        if target < 0 {
            let error = SystemError("open", path: temporary)
            close(source)
            throw error
        }
        // The older generations move up now, so that once the copy has caught up only one rename
        // separates it from the truncation.
        if let failure = LogGenerations(path: path).shift(keep: rotation.keep).first {
            close(source)
            close(target)
            throw failure
        }
        // More than the bound already: only the newest `maxBytes` are kept.
        let size = Int64(st.st_size), bound = Int64(clamping: Self.bound(rotation.maxBytes))
        let start = size > bound ? size - Int64(clamping: rotation.maxBytes) : 0
        copies.append(
            Copy(
                name: name, source: source, target: target, start: start, copied: start,
                limit: start > Int64.max - bound ? Int64.max : start + bound))
    }

    /// What one generation may hold: twice the size, but never less than the size plus 4 MiB, so
    /// that an app writing at an ordinary rate (a small size, a check a second late under load)
    /// loses nothing, while a flood is still cut to megabytes.
    static let floodAllowance: UInt64 = 4 << 20
    static func bound(_ maxBytes: UInt64) -> UInt64 { maxBytes.saturatingAdd(max(maxBytes, floodAllowance)) }

    /// Copies up to `budget` bytes; true once the copy reached the file's end or its limit.
    private func advance(_ copy: inout Copy, budget: inout Int) throws(SystemError) -> Bool {
        var buffer = [UInt8](repeating: 0, count: min(budget, 256 * 1024))
        while budget > 0 {
            guard copy.copied < copy.limit else { return true }
            let want = Int(min(Int64(min(budget, buffer.count)), copy.limit - copy.copied))
            let n = buffer.withUnsafeMutableBytes { b in
                retryingOnInterrupt { pread(copy.source, b.baseAddress, want, off_t(copy.copied)) }
            }
            if n < 0 { throw systemCallError("read", path: directory + "/" + copy.name, errno: errno) }
            if n == 0 { return true }
            var written = 0
            while written < n {
                let w = buffer.withUnsafeBytes { b in
                    retryingOnInterrupt { write(copy.target, b.baseAddress! + written, n - written) }
                }
                if w < 0 { throw systemCallError("write", path: temporaryPath(copy.name), errno: errno) }
                written += w
            }
            copy.copied += Int64(n)
            budget -= n
        }
        return false
    }

    /// The copy becomes NAME.log.1, then the log is emptied (a crash between the two leaves the
    /// lines in both). Returns what the bound dropped, for the event log; nil: nothing.
    private func finish(_ copy: Copy) throws(SystemError) -> String? {
        defer { close(copy.source) }
        close(copy.target)
        let path = directory + "/" + copy.name
        // Not renamed: the log is left whole (never truncated without its copy in place).
        if rename(temporaryPath(copy.name), LogGenerations(path: path).generation(1)) < 0 {
            let error = SystemError("rename", path: temporaryPath(copy.name))
            unlink(temporaryPath(copy.name))
            throw error
        }
        var st = stat()
        let size = fstat(copy.source, &st) == 0 ? Int64(st.st_size) : copy.copied
        if ftruncate(copy.source, 0) < 0 { throw SystemError("truncate", path: path) }
        let dropped = copy.start + max(0, size - copy.copied)
        guard dropped > 0, copy.start > 0 || copy.copied >= copy.limit else { return nil }
        let kept = SizeText.format(UInt64(copy.copied - copy.start)), lost = SizeText.format(UInt64(dropped))
        return
            "its output log grew faster than it is rotated: kept the newest \(kept) as \(copy.name).1, dropped \(lost) (a generation holds at most --log-max-size plus the larger of it and 4 MiB)"
    }

    /// The copy in progress: hidden, and not named like a generation, so no reader takes it
    /// for one; a crash leaves it to be overwritten by the next rotation of that log.
    private func temporaryPath(_ name: String) -> String { directory + "/." + name + ".rotating" }

    private static func app(_ logName: String) -> String { String(logName.dropLast(4)) }
}
