import Glibc
import IceboxSystem

/// A log file and its older generations, logrotate style: PATH is the one being written, PATH.1 the
/// newest older one, PATH.N the oldest. The numbers only ever grow as a file ages, so sorting by
/// number is reading in order, even with gaps (a rotation cut short by a crash leaves a gap, never
/// a lost or misplaced file).
package struct LogGenerations: Sendable {
    package let path: String
    package let directory: String
    package let fileName: String

    package init(path: String) {
        self.path = path
        (directory, fileName) = FileIO.split(path)
    }

    /// PATH for 0, else PATH.n.
    package func generation(_ n: Int) -> String { n == 0 ? path : path + ".\(n)" }

    /// The numbers of the older generations on disk, ascending (newest first).
    package func olderNumbers() -> [Int] {
        let prefix = fileName + "."
        // A directory that cannot be listed has no older generations: only the current log is read.
        let names = (try? FileIO.list(directory)) ?? []
        return names.compactMap { name -> Int? in
            guard name.hasPrefix(prefix) else { return nil }
            let digits = name.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.first != "0", let n = Int(digits), n > 0 else { return nil }
            return n
        }.sorted()
    }

    /// Frees PATH.1 for the file about to be rotated: the older generations move up by one (gaps
    /// closing), and what would pass `keep` is removed. Renames only ever move a file to a number
    /// that keeps the order, so a crash at any point leaves the generations in order. Returns the
    /// errors met (a generation that cannot move stays where it is).
    @discardableResult
    package func shift(keep: Int) -> [SystemError] {
        var errors: [SystemError] = []
        func move(_ from: Int, _ to: Int) {
            if from == to { return }
            if rename(generation(from), generation(to)) < 0 && errno != ENOENT {
                errors.append(SystemError("rename", path: generation(from)))
            }
        }
        var existing = olderNumbers()
        // Older than the oldest kept one after the shift (keep - 1 move up to 2...keep).
        for n in existing.dropFirst(max(keep - 1, 0)) where unlink(generation(n)) < 0 && errno != ENOENT {
            errors.append(SystemError("remove", path: generation(n)))
        }
        existing = Array(existing.prefix(max(keep - 1, 0)))
        // Generation i (0-based) becomes PATH.(i+2). Those before the first gap move up (oldest
        // first, so each lands on a free number); those after it move down or stay (newest first,
        // for the same reason).
        let firstGap = existing.indices.first { existing[$0] != $0 + 1 } ?? existing.count
        for i in existing.indices where i >= firstGap { move(existing[i], i + 2) }
        for i in existing.indices.prefix(firstGap).reversed() { move(existing[i], i + 2) }
        return errors
    }

    /// Opens the older generations for reading, newest first, skipping any file whose inode is in
    /// `seen` (one already open under another name: a rotation happened meanwhile), and returns
    /// them oldest first. Open the current file before calling this: a rotation in between then
    /// shows up as a file seen twice, not as a file missed.
    package func openOlder(seen: Set<UInt64>) -> [Int32] {
        var seen = seen
        return olderNumbers().compactMap { n -> Int32? in
            let fd = retryingOnInterrupt { open(generation(n), O_RDONLY | O_CLOEXEC) }
            if fd < 0 { return nil }
            if let inode = Self.inode(fd), seen.insert(inode).inserted { return fd }
            close(fd)
            return nil
        }.reversed()
    }

    /// Hands over the lines of the whole log, newest first (the current file from its end,
    /// then PATH.1, PATH.2 …), until `line` returns false.
    package func readBackward(_ line: (UnsafeRawBufferPointer) -> Bool) {
        let current = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC) }
        let older = openOlder(seen: current >= 0 ? Set([Self.inode(current)].compactMap { $0 }) : [])
        defer { for fd in older + [current] where fd >= 0 { close(fd) } }
        for fd in [current] + older.reversed() where fd >= 0 {
            if !LogLines.backward(fd: fd, end: Int64(lseek(fd, 0, SEEK_END)), line) { return }
        }
    }

    /// The inode of generation `n` (0: the current file); nil if it cannot be opened.
    package func inode(of n: Int) -> UInt64? {
        let fd = retryingOnInterrupt { open(generation(n), O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return Self.inode(fd)
    }

    /// The inode of an open file; nil if fstat fails.
    package static func inode(_ fd: Int32) -> UInt64? {
        var st = stat()
        return fstat(fd, &st) == 0 ? UInt64(st.st_ino) : nil
    }
}
