import Glibc
import IceboxSystem

/// Reading a log of lines fast, from either end: large reads at explicit offsets (pread, so a
/// caller's file position is left alone), lines found with memchr, and nothing decoded here:
/// callers look at a line's bytes before they pay for decoding it. A line is handed over without
/// its newline, as a buffer valid only during the call.
package enum LogLines {
    /// What the bytes after a file's last newline are.
    package enum FileEnd {
        /// A line still being written (the file being appended to): left for a later read.
        case growing
        /// A line cut short for good (a rotated generation, which nobody writes again: an app's
        /// output copied mid-line, or a crash mid-write): handed over as it is, as the backward
        /// read does, so both directions read the same lines.
        case final
    }

    /// A line longer than this is dropped (a log line is a few hundred bytes; a hostile or
    /// corrupt file must not make a reader hold it whole).
    package static let maxLineBytes = 16 << 20

    /// Reads `fd` from `offset` to its end, handing over each complete line (and with `.final`, the
    /// last bytes without a newline too). Returns the offset after the last line handed over (where
    /// a line still being written begins).
    package static func forward(
        fd: Int32, from offset: Int64, end fileEnd: FileEnd = .growing, _ line: (UnsafeRawBufferPointer) -> Void
    ) -> Int64 {
        var capacity = 1 << 20
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer { buffer.deallocate() }
        var filled = 0  // bytes in buffer, starting with the unfinished line
        var position = offset  // file offset of buffer[0]
        var skipping = false  // inside a line too long to keep
        while true {
            if filled == capacity {
                if capacity >= maxLineBytes {
                    // Drop what we have of the overlong line, and the rest of it when it ends.
                    position += Int64(filled)
                    filled = 0
                    skipping = true
                } else {
                    let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity * 2, alignment: 1)
                    bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<filled]))
                    buffer.deallocate()
                    buffer = bigger
                    capacity *= 2
                }
            }
            let n = retryingOnInterrupt {
                pread(fd, buffer.baseAddress! + filled, capacity - filled, off_t(position + Int64(filled)))
            }
            if n <= 0 {
                guard fileEnd == .final, filled > 0 else { return position }
                if !skipping { line(UnsafeRawBufferPointer(start: buffer.baseAddress!, count: filled)) }
                return position + Int64(filled)
            }
            let base = buffer.baseAddress!
            var start = 0
            var searchFrom = filled
            filled += n
            while searchFrom < filled, let hit = memchr(base + searchFrom, 10, filled - searchFrom) {
                let end = hit - UnsafeMutableRawPointer(base)
                if skipping {
                    skipping = false
                } else {
                    line(UnsafeRawBufferPointer(start: base + start, count: end - start))
                }
                start = end + 1
                searchFrom = start
            }
            if start > 0 {
                memmove(base, base + start, filled - start)
                filled -= start
                position += Int64(start)
            }
        }
    }

    /// As `forward`, through a read-only mapping of the file instead of reads into a buffer: the
    /// copy of every page is most of the cost of scanning a large log. Only for a file that is
    /// appended to and renamed, never truncated (the event log): a page past a new, shorter end
    /// would raise SIGBUS. nil if the file cannot be mapped (read it with `forward`).
    package static func forwardMapped(
        fd: Int32, from offset: Int64, end fileEnd: FileEnd = .growing, _ line: (UnsafeRawBufferPointer) -> Void
    ) -> Int64? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let size = Int64(st.st_size)
        if size <= offset { return offset }
        guard let map = mmap(nil, Int(size), PROT_READ, MAP_PRIVATE, fd, 0), map != MAP_FAILED else { return nil }
        defer { munmap(map, Int(size)) }
        _ = madvise(map, Int(size), MADV_SEQUENTIAL)
        let base = UnsafeRawPointer(map)
        var start = Int(offset)
        while start < Int(size), let hit = memchr(base + start, 10, Int(size) - start) {
            let end = UnsafeRawPointer(hit) - base
            if end - start <= maxLineBytes { line(UnsafeRawBufferPointer(start: base + start, count: end - start)) }
            start = end + 1
        }
        if fileEnd == .final, start < Int(size) {
            if Int(size) - start <= maxLineBytes { line(UnsafeRawBufferPointer(start: base + start, count: Int(size) - start)) }
            start = Int(size)
        }
        return Int64(start)
    }

    /// Where the last complete line of `fd` ends, at or before `end`: `end` itself when the file
    /// ends with a newline, else just after the last newline, so that a line still being written is
    /// read whole once it is (0 if there is no newline; `end` if none is found within
    /// `maxLineBytes`, an overlong line being dropped anyway).
    package static func lastLineEnd(fd: Int32, end: Int64) -> Int64 {
        let blockSize = 64 * 1024
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 1)
        defer { buffer.deallocate() }
        var blockEnd = end
        while blockEnd > 0, end - blockEnd < Int64(maxLineBytes) {
            let start = max(0, blockEnd - Int64(blockSize))
            let count = Int(blockEnd - start)
            let n = retryingOnInterrupt { pread(fd, buffer.baseAddress!, count, off_t(start)) }
            if n < count { return end }  // shrank under us: the truncation restarts reading anyway
            // (memrchr is a GNU extension Swift's Glibc module does not show.)
            if let hit = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<count]).lastIndex(of: 10) {
                return start + Int64(hit) + 1
            }
            blockEnd = start
        }
        return blockEnd == 0 ? 0 : end
    }

    /// Reads `fd` backwards from `end` (a line boundary: the end of a file, or where a forward read
    /// stopped), handing over complete lines newest first until `line` returns false (then this
    /// returns false) or the start of the file is reached (true).
    @discardableResult
    package static func backward(fd: Int32, end: Int64, _ line: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        var blockSize = 256 * 1024
        var end = end
        var lines: [Range<Int>] = []
        while end > 0 {
            let start = max(0, end - Int64(blockSize))
            let count = Int(end - start)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
            defer { buffer.deallocate() }
            var got = 0
            while got < count {
                let n = retryingOnInterrupt { pread(fd, buffer.baseAddress! + got, count - got, off_t(start) + off_t(got)) }
                if n <= 0 { break }
                got += n
            }
            if got < count { return true }  // the file shrank under us: what is left is gone
            let base = buffer.baseAddress!
            // The first bytes of a block that does not start the file belong to a line that
            // began earlier: they are read again with the next block.
            var from = 0
            if start > 0 {
                from = memchr(base, 10, count).map { $0 - UnsafeMutableRawPointer(base) + 1 } ?? count
                if from == count {
                    // No whole line in the block: a bigger one, unless the line is overlong.
                    if blockSize >= maxLineBytes { return true }
                    blockSize *= 2
                    continue
                }
            }
            lines.removeAll(keepingCapacity: true)
            var lineStart = from
            while lineStart < count, let hit = memchr(base + lineStart, 10, count - lineStart) {
                let lineEnd = hit - UnsafeMutableRawPointer(base)
                lines.append(lineStart..<lineEnd)
                lineStart = lineEnd + 1
            }
            // Only the first block read can end without a newline: a rotated generation cut
            // mid-line. That line is handed over, as `forward` does with `.final`.
            if lineStart < count { lines.append(lineStart..<count) }
            for range in lines.reversed() {
                if !line(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[range])) { return false }
            }
            end = start + Int64(from)
            if start == 0 { break }
        }
        return true
    }
}
