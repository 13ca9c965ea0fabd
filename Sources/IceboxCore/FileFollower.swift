import Glibc
import IceboxSystem

/// Reads a file line by line and, when following, waits for more through inotify on its
/// directory (so a file that does not exist yet is picked up when it appears): no polling
/// on a timer. `icebox log --follow`, `icebox logs --follow` and `IceboxClient.events(for:)`
/// share it. Used by one thread at a time.
package final class FileFollower {
    package let path: String
    private let directory: String
    private let fileName: String
    private var fd: Int32 = -1
    private var pending: [UInt8] = []
    private let inotify: Inotify?

    /// Opens `path`. With `startAtEnd` only lines appended from now on are read. With
    /// `follow`, the directory is watched before the file is opened, so no line written in
    /// between is missed.
    package init(path: String, startAtEnd: Bool, follow: Bool, missingIsEmpty: Bool) throws(IceboxError) {
        self.path = path
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        directory = dir.isEmpty ? "/" : dir
        fileName = slash.map { String(path[path.index(after: $0)...]) } ?? path
        if follow {
            // The state directory may not exist before the first daemon ran: make it, as the daemon would.
            try? FileIO.makeDirectories(directory, mode: 0o700)
            do {
                let watcher = try Inotify()
                try watcher.addWatch(
                    directory,
                    mask: UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF))
                inotify = watcher
            } catch {
                throw IceboxError("follow \(path)", error)
            }
        } else {
            inotify = nil
        }
        fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 && !(missingIsEmpty && errno == ENOENT) {
            throw IceboxError("read", SystemError("open", path: path))
        }
        // The writers append whole lines in one write(2) (O_APPEND): the end is a line boundary.
        if startAtEnd && fd >= 0 { lseek(fd, 0, SEEK_END) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Hands every complete line the file holds now (past what was read before) to `emit`.
    package func readLines(_ emit: (String) -> Void) {
        if fd < 0 {
            fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
            if fd < 0 { return }
        }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { buf in retryingOnInterrupt { read(fd, buf.baseAddress, buf.count) } }
            if n <= 0 { break }
            pending.append(contentsOf: chunk[0..<n])
            while let newline = pending.firstIndex(of: 10) {
                emit(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
        }
    }

    /// Emits the lines there are, then every line appended later, until `stop` is signalled
    /// or the file or its directory is removed or renamed. Needs `follow` at init.
    package func follow(stop: Wakeup?, _ emit: (String) -> Void) throws(IceboxError) {
        guard let inotify else { return readLines(emit) }
        while true {
            readLines(emit)
            var pfds = [pollfd(fd: inotify.fd, events: Int16(POLLIN), revents: 0)]
            if let stop { pfds.append(pollfd(fd: stop.descriptor, events: Int16(POLLIN), revents: 0)) }
            do {
                // No deadline: following ends when the reader stops it; the wait costs no CPU.
                _ = try Poll.wait(&pfds, until: nil)
                if pfds.count > 1 && pfds[1].revents != 0 { return }
                // The file's own removal counts: while this follower holds it open, the
                // directory cannot be reported deleted (the open file pins it).
                let gone = UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)
                let fileGone = UInt32(IN_DELETE | IN_MOVED_FROM)
                let events = try inotify.read()
                if events.contains(where: { $0.mask & gone != 0 || ($0.mask & fileGone != 0 && $0.name == fileName) }) {
                    readLines(emit)
                    return
                }
            } catch {
                throw IceboxError("follow \(path)", error)
            }
        }
    }
}
