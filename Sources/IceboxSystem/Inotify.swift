import Glibc

/// A small inotify(7) wrapper: one non-blocking, close-on-exec descriptor (for poll), its
/// watches, and the events read from it.
package final class Inotify {
    /// One event: the watch it belongs to, what happened (`IN_*` bits) and, for a watched
    /// directory, the name of the entry it happened to.
    package struct Event: Equatable, Sendable {
        package var watch: Int32
        package var mask: UInt32
        package var name: String
    }

    package let fd: Int32

    package init() throws(SystemError) {
        fd = try systemCall("create an inotify instance") { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
    }

    deinit { close(fd) }

    /// Whether `error` (from `init` or `addWatch`) says the kernel is out of what inotify needs
    /// rather than that the path or the call was wrong: instances past
    /// `fs.inotify.max_user_instances` (EMFILE; counted for all of the user's processes), watches
    /// past `max_user_watches` (ENOSPC), descriptors or memory. A caller can then look on a timer
    /// instead, as tail(1) does.
    package static func isExhausted(_ error: SystemError) -> Bool { [EMFILE, ENFILE, ENOSPC, ENOMEM].contains(error.errno) }

    /// Watches `path` for the events in `mask`; returns the watch descriptor.
    @discardableResult
    package func addWatch(_ path: String, mask: UInt32) throws(SystemError) -> Int32 {
        try systemCall("watch (inotify)", path: path) { inotify_add_watch(fd, path, mask) }
    }

    /// The events queued now (none if nothing happened: the descriptor does not block).
    package func read() throws(SystemError) -> [Event] {
        var events: [Event] = []
        // Room for many events at once; one event is at most 16 bytes + NAME_MAX + 1.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { buf in retryingOnInterrupt { Glibc.read(fd, buf.baseAddress, buf.count) } }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return events }
                throw systemCallError("read inotify events", path: nil, errno: errno)
            }
            if n == 0 { return events }
            events += Self.parse(buffer[0..<n])
        }
    }

    /// Decodes `struct inotify_event` records: wd, mask, cookie, len (each 32 bits, host
    /// order), then `len` bytes of NUL-padded name. Pure, so it is unit-tested.
    package static func parse(_ bytes: ArraySlice<UInt8>) -> [Event] {
        var events: [Event] = []
        var i = bytes.startIndex
        func word(_ at: Int) -> UInt32 { bytes[at..<at + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) } }
        while i + 16 <= bytes.endIndex {
            let length = Int(word(i + 12))
            guard i + 16 + length <= bytes.endIndex else { break }
            let nameBytes = bytes[(i + 16)..<(i + 16 + length)].prefix { $0 != 0 }
            events.append(Event(watch: Int32(bitPattern: word(i)), mask: word(i + 4), name: String(decoding: nameBytes, as: UTF8.self)))
            i += 16 + length
        }
        return events
    }
}
