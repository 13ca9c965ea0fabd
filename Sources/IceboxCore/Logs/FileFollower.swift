import Glibc
import IceboxSystem

/// Reads a log line by line and, when following, waits for more through inotify on its directory
/// (so a file not there yet is picked up when it appears). It follows a rotation: a file renamed
/// away (to PATH.1, `LogGenerations`) is read to its end, then any newer generation it missed, then
/// the new file; a file truncated in place (an app log's copy-truncate) is read again from its
/// start. Shared by `icebox log --follow`, `icebox logs --follow` and `IceboxClient.events(for:)`;
/// used by one thread at a time.
///
/// When the kernel refuses inotify for want of resources (`Inotify.isExhausted`), it looks at the
/// file every `pollIntervalNanos` instead: a follow that failed whenever other programs hold the
/// instances would be worse than a slower one. `pollingBecause` says so, for the caller to tell.
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
    /// The inode of the last file read to its end or, when there was no current file at the
    /// start, of the newest generation then (what the caller reads first); nil: none.
    private var lastRead: UInt64?
    /// Following by a look every `pollIntervalNanos` (each `takeNotifications`), not inotify.
    package let polls: Bool
    /// Why it polls: what the kernel said to inotify (nil when polling was asked for).
    package private(set) var pollingBecause: SystemError?
    package static let pollIntervalNanos: UInt64 = 500_000_000

    /// Opens `path`. With `startAtEnd` only lines appended from now on are read. With
    /// `follow`, the directory is watched before the file is opened, so no line written in
    /// between is missed; with `poll` too, it is looked at instead (for the tests of that way).
    package init(path: String, startAtEnd: Bool, follow: Bool, missingIsEmpty: Bool, poll: Bool = false) throws(IceboxError) {
        self.path = path
        generations = LogGenerations(path: path)
        fileName = generations.fileName
        let directory = generations.directory
        // No state directory before the first daemon: made here as the daemon would; if it cannot
        // be, the watch below fails and throws with the path.
        if follow { try? FileIO.makeDirectories(directory, mode: 0o700) }
        var polls = follow && poll
        do {
            let watcher = try follow && !poll ? Inotify() : nil
            try watcher?.addWatch(
                directory, mask: UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF))
            inotify = watcher
        } catch  where Inotify.isExhausted(error) {
            // Out of instances or watches (see the type): poll, once the directory is known to be there.
            guard FileIO.exists(directory) else {
                throw IceboxError("follow \(path)", SystemError("watch", path: directory, errno: ENOENT))
            }
            inotify = nil
            polls = true
            pollingBecause = error
        } catch {
            throw IceboxError("follow \(path)", error)
        }
        self.polls = polls
        if !openCurrent() && !(missingIsEmpty && errno == ENOENT) {
            throw IceboxError("read", SystemError("open", path: path))
        }
        // From the end of the last whole line: an app's output may end mid-line, and that line is
        // read whole once its newline comes.
        if startAtEnd && fd >= 0 { offset = LogLines.lastLineEnd(fd: fd, end: Int64(lseek(fd, 0, SEEK_END))) }
        startOffset = offset
        if follow && fd < 0 { lastRead = generations.inode(of: 1) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The file being read, for a caller that reads it backwards from `startOffset`; -1 if it did
    /// not exist when opened.
    package var descriptor: Int32 { fd }

    /// The older generations, oldest first, opened now and each file once (not the one this
    /// follower holds, should it have been rotated since): the caller reads and closes them.
    package func openOlderGenerations() -> [Int32] {
        generations.openOlder(seen: inode.map { [$0] } ?? [])
    }

    /// Hands every complete line the file holds now (past what was read) to `emit`, as bytes valid
    /// during the call; `mapped`: through a mapping (`LogLines.forwardMapped` says for which logs).
    package func readLineBytes(mapped: Bool = false, _ emit: (UnsafeRawBufferPointer) -> Void) {
        if fd < 0 && !openCurrent() { return }
        offset = (mapped ? LogLines.forwardMapped(fd: fd, from: offset, emit) : nil) ?? LogLines.forward(fd: fd, from: offset, emit)
        // Shorter than what was read: truncated in place (copy-truncate). The copy, PATH.1, holds
        // the old bytes at the same offsets: what was appended after this follower's last read is
        // read from there, then the new file from its start.
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

    /// Emits the lines there are, then every line appended later, until one of `stops` reports an
    /// event (a client's stop `Wakeup`; for the CLI: a signalfd, or stdout's reader going away):
    /// its index is returned; nil when the file or its directory went away. Needs `follow` at init.
    package func follow(stopOn stops: [pollfd], _ emit: (String) -> Void) throws(IceboxError) -> Int? {
        guard inotify != nil || polls else {
            readLines(emit)
            return nil
        }
        while true {
            readLines(emit)
            // Polling: poll(2) ignores the negative descriptor, and the deadline is the next look.
            var pfds = [pollfd(fd: inotify?.fd ?? -1, events: Int16(POLLIN), revents: 0)] + stops
            do {
                // No deadline with inotify: following ends when the reader stops it; the wait costs no CPU.
                _ = try Poll.wait(&pfds, until: polls ? Clock.monotonicNanos().saturatingAdd(Self.pollIntervalNanos) : nil)
            } catch {
                throw IceboxError("follow \(path)", error)
            }
            if let fired = pfds.dropFirst().firstIndex(where: { $0.revents != 0 }) { return fired - 1 }
            if try !takeNotifications(emit) { return nil }
        }
    }

    /// Readable when the log or its directory changes, for a caller that waits on it among others
    /// (`icebox top`) and then calls `takeNotifications`; nil without `follow`.
    package var notificationDescriptor: Int32? { inotify?.fd }

    /// Reads what inotify reported (or, polling, looks) and hands `emit` the lines that came with
    /// it, across a rotation or a replaced file; false when the file or its directory went away
    /// (the follow is over).
    package func takeNotifications(_ emit: (String) -> Void) throws(IceboxError) -> Bool {
        guard let inotify else { return polls && look(emit) }
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
        // None open: the generations made since the last file read come first. Events read in one
        // batch may tell of a file made and rotated while none was open, which no event handled
        // above (they need one open).
        if fd < 0 { readWhole(generationsNewer(than: lastRead, ifNotFound: false), emit) }
        readLines(emit)
        return true
    }

    /// The file was renamed away (normally to PATH.1): read its rest, then the generations newer
    /// than it (several rotations may have passed), then let the next read open the new file. Ours
    /// not among the generations: polling, it was dropped since (more rotations than are kept) and
    /// every one is newer; with inotify, told at once, it was moved elsewhere and none is.
    private func rotated(_ emit: (String) -> Void) {
        guard fd >= 0 else { return }
        readLines(emit)
        // Found while ours is still open: its inode cannot have been reused.
        let newer = generationsNewer(than: inode, ifNotFound: polls)
        closeCurrent()
        readWhole(newer, emit)
    }

    /// The numbers of the generations newer than the file `known` (by inode), newest first: all of
    /// them for nil (none had been read or existed); `known` not among them, all of them or none.
    private func generationsNewer(than known: UInt64?, ifNotFound all: Bool) -> [Int] {
        let numbers = generations.olderNumbers()
        guard let known else { return numbers }
        guard let at = numbers.firstIndex(where: { generations.inode(of: $0) == known }) else { return all ? numbers : [] }
        return Array(numbers[..<at])
    }

    /// Reads the generations `numbers` (newest first) whole, oldest first.
    private func readWhole(_ numbers: [Int], _ emit: (String) -> Void) {
        for n in numbers.reversed() {
            let older = retryingOnInterrupt { open(generations.generation(n), O_RDONLY | O_CLOEXEC) }
            if older < 0 { continue }
            _ = LogLines.forward(fd: older, from: 0, end: .final) { emit(String(decoding: $0, as: UTF8.self)) }
            lastRead = LogGenerations.inode(older)
            close(older)
        }
    }

    /// Polling's stand-in for inotify's events, from what the path holds now: the same file
    /// (read on), another (the old one rotated or replaced: as IN_MOVED_FROM), none (rotated
    /// and not yet made again: read on, or removed: the follow is over, as with IN_DELETE).
    private func look(_ emit: (String) -> Void) -> Bool {
        if let onDisk = onDiskInode() {
            if fd >= 0, onDisk != inode { rotated(emit) }
            // None open: the newer generations come first, as in `takeNotifications`.
            if fd < 0 { readWhole(generationsNewer(than: lastRead, ifNotFound: true), emit) }
        } else if fd >= 0 {
            // Rotated, and the next file not made yet: the old one is kept until it is, so that
            // the look that finds it also finds the generations made meanwhile (`rotated`). Several
            // rotations may have passed since the last look: ours may be any generation.
            guard let inode, generations.olderNumbers().contains(where: { generations.inode(of: $0) == inode }) else {
                readLines(emit)
                return false
            }
        } else if !FileIO.exists(generations.directory) {
            return false
        }
        readLines(emit)
        return true
    }

    private func openCurrent() -> Bool {
        fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return false }
        inode = LogGenerations.inode(fd)
        offset = 0
        return true
    }

    private func closeCurrent() {
        lastRead = inode ?? lastRead
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
