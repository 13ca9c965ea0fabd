import Glibc

/// A directory kept open so that files under it are opened relative to it: each open walks only the
/// path below it. In cgroupfs every component of a path is a lookup with a revalidation, and a
/// daemon reading a counter of each of 1000 apps spent most of that time walking /sys/fs/cgroup/...
/// again and again.
package final class DirectoryHandle {
    package let path: String
    package let fd: Int32

    /// Opens `path` (a directory, not followed if it is a link); nil if that fails.
    package init?(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 { return nil }
        self.path = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        self.fd = fd
    }

    deinit { close(fd) }

    /// `full` relative to this directory, if it lies below it ("a/b" for "<path>/a/b").
    package func relative(_ full: String) -> String? {
        // By bytes: Character-wise prefix tests and offsets were a tenth of `ps`'s time.
        let whole = full.utf8, root = path.utf8
        guard whole.count > root.count + 1, whole.starts(with: root),
            whole[whole.index(whole.startIndex, offsetBy: root.count)] == UInt8(ascii: "/")
        else { return nil }
        return String(decoding: whole.dropFirst(root.count + 1), as: UTF8.self)
    }

    /// A counter file, opened relative to the first of `roots` it lies under (one open of it,
    /// whatever the outcome), else by its full path.
    package static func readCounter(_ full: String, under roots: [DirectoryHandle]) -> UInt64? {
        for root in roots {
            if let rel = root.relative(full) { return FileIO.readCounter(rel, relativeTo: root.fd) }
        }
        return FileIO.readCounter(full)
    }
}
