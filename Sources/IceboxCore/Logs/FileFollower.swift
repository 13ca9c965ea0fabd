import Glibc
import IceboxSystem

/// Reads a log line by line and, when following, waits for more through inotify on its
/// directory (so a file that does not exist yet is picked up when it appears): no polling
/// on a timer. It follows a rotation: when the file is renamed away (to PATH.1, see
/// `LogGenerations`) the rest of it is read, then any newer generation it missed, then the
/// new file; when the file is truncated in place (an app log's copy-truncate) reading starts
/// again from its beginning. `icebox log --follow`, `icebox logs --follow` and
/// `IceboxClient.events(for:)` share it. Used by one thread at a time.
package final class FileFollower {
    package let path: String
    private let generations: LogGenerations
    private let fileName: String
    private var fd: Int32 = -1
    /// The inode of `fd`'s file, to tell a rotated or replaced file from the one we read.
    private var inode: UInt64?
    /// Where the next read starts: after the last complete line read.
    private var offset: Int64 = 0
    /// Where reading started when the file was opened (its end, with `startAtEnd`).
    package private(set) var startOffset: Int64 = 0
    private let inotify: Inotify?

    /// Opens `path`. With `startAtEnd` only lines appended from now on are read. With
    /// `follow`, the directory is watched before the file is opened, so no line written in
    /// between is missed.
    package init(path: String, startAtEnd: Bool, follow: Bool, missingIsEmpty: Bool) throws(IceboxError) {
        self.path = path
        generations = LogGenerations(path: path)
        fileName = generations.fileName
        let directory = generations.directory
        // The state directory may not exist before the first daemon ran: make it, as the daemon would.
        // Only a convenience for the first run: if it cannot be made, the watch below fails and
        // throws with the path.
        if follow { try? FileIO.makeDirectories(directory, mode: 0o700) }
        do {
            inotify = try follow ? Inotify() : nil
            try inotify?.addWatch(
                directory, mask: UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF))
        } catch {
            throw IceboxError("follow \(path)", error)
        }
        if !openCurrent() && !(missingIsEmpty && errno == ENOENT) {
            throw IceboxError("read", SystemError("open", path: path))
        }
        // From the end of the last whole line: an app's output may end mid-line, and that
        // line is read whole once its newline comes (the event log's writers append whole
        // lines, so for it this is the end).
        if startAtEnd && fd >= 0 { offset = LogLines.lastLineEnd(fd: fd, end: Int64(lseek(fd, 0, SEEK_END))) }
        startOffset = offset
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The file being read, for a caller that reads it backwards from `startOffset`; -1 if
    /// it did not exist when opened.
    package var descriptor: Int32 { fd }

    /// The older generations, oldest first, opened now and each file once (not the one this
    /// follower holds, should it have been rotated since): the caller reads and closes them.
    package func openOlderGenerations() -> [Int32] {
        generations.openOlder(seen: inode.map { [$0] } ?? [])
    }

    /// Hands every complete line the file holds now (past what was read before) to `emit`,
    /// as bytes valid during the call. `mapped`: through a mapping, for a log that is never
    /// truncated (see `LogLines.forwardMapped`).
    package func readLineBytes(mapped: Bool = false, _ emit: (UnsafeRawBufferPointer) -> Void) {
        if fd < 0 && !openCurrent() { return }
        offset = (mapped ? LogLines.forwardMapped(fd: fd, from: offset, emit) : nil) ?? LogLines.forward(fd: fd, from: offset, emit)
        // Shorter than what was read: truncated in place (copy-truncate). The copy, PATH.1,
        // holds the old bytes at the same offsets: what was appended after this follower's
        // last read is read from there, then the new file from its start.
        var st = stat()
        if fstat(fd, &st) == 0, Int64(st.st_size) < offset {
            let copy = open(generations.generation(1), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if copy >= 0 {
                var copied = stat()
                if fstat(copy, &copied) == 0, Int64(copied.st_size) >= offset {
                    _ = LogLines.forward(fd: copy, from: offset, end: .final, emit)
                }
                close(copy)
            }
            offset = LogLines.forward(fd: fd, from: 0, emit)
        }
    }

    /// As `readLineBytes`, as text.
    package func readLines(_ emit: (String) -> Void) {
        readLineBytes { emit(String(decoding: $0, as: UTF8.self)) }
    }

    /// Emits the lines there are, then every line appended later, until one of `stops` reports
    /// an event (a client's stop `Wakeup`; for the CLI: a signalfd, or stdout's reader going
    /// away): its index is returned; nil when the file or its directory went away. Needs
    /// `follow` at init.
    package func follow(stopOn stops: [pollfd], _ emit: (String) -> Void) throws(IceboxError) -> Int? {
        guard let inotify else {
            readLines(emit)
            return nil
        }
        while true {
            readLines(emit)
            var pfds = [pollfd(fd: inotify.fd, events: Int16(POLLIN), revents: 0)] + stops
            do {
                // No deadline: following ends when the reader stops it; the wait costs no CPU.
                _ = try Poll.wait(&pfds, until: nil)
            } catch {
                throw IceboxError("follow \(path)", error)
            }
            if let fired = pfds.dropFirst().firstIndex(where: { $0.revents != 0 }) { return fired - 1 }
            if try !takeNotifications(emit) { return nil }
        }
    }

    /// The descriptor that becomes readable when the log (or its directory) changes, for a
    /// caller that waits on it among others (`icebox top`) and then calls
    /// `takeNotifications`; nil without `follow`.
    package var notificationDescriptor: Int32? { inotify?.fd }

    /// Reads what inotify reported (call it once `notificationDescriptor` is readable) and
    /// hands `emit` the lines that came with it, across a rotation or a replaced file.
    /// Returns false when the file or its directory went away (the follow is over).
    package func takeNotifications(_ emit: (String) -> Void) throws(IceboxError) -> Bool {
        guard let inotify else { return false }
        // The file's own removal counts: while this follower holds it open, the
        // directory cannot be reported deleted (the open file pins it).
        let gone = UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)
        let events: [Inotify.Event]
        do { events = try inotify.read() } catch { throw IceboxError("follow \(path)", error) }
        for event in events {
            if event.mask & gone != 0 || (event.mask & UInt32(IN_DELETE) != 0 && event.name == fileName) {
                readLines(emit)
                return false
            }
            guard event.name == fileName else { continue }
            if event.mask & UInt32(IN_MOVED_FROM) != 0 {
                rotated(emit)
            } else if event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, fd >= 0, onDiskInode() != inode {
                // Another file put in its place: finish the old one, go on with the new.
                readLines(emit)
                closeCurrent()
            }
        }
        readLines(emit)
        return true
    }

    /// The file was renamed away, normally to PATH.1 by a rotation: read the rest of it,
    /// then the generations newer than it (more than one rotation may have happened since
    /// the last look), then let the next read open the new file.
    private func rotated(_ emit: (String) -> Void) {
        guard fd >= 0 else { return }
        readLines(emit)
        let numbers = generations.olderNumbers()
        var newer: [Int] = []
        for n in numbers {
            let candidate = retryingOnInterrupt { open(generations.generation(n), O_RDONLY | O_CLOEXEC) }
            if candidate < 0 { continue }
            let same = LogGenerations.inode(candidate) == inode
            close(candidate)
            if same { break }
            newer.append(n)
        }
        if newer.count == numbers.count { newer = [] }  // not found among them: moved elsewhere
        closeCurrent()
        for n in newer.reversed() {
            let older = retryingOnInterrupt { open(generations.generation(n), O_RDONLY | O_CLOEXEC) }
            if older < 0 { continue }
            _ = LogLines.forward(fd: older, from: 0, end: .final) { emit(String(decoding: $0, as: UTF8.self)) }
            close(older)
        }
    }

    private func openCurrent() -> Bool {
        fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        inode = LogGenerations.inode(fd)
        offset = 0
        return true
    }

    private func closeCurrent() {
        if fd >= 0 { close(fd) }
        fd = -1
        inode = nil
        offset = 0
    }

    private func onDiskInode() -> UInt64? {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_ino) : nil
    }
}
