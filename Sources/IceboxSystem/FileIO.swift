import CIceboxShim
import Glibc

/// Small file helpers for /proc, /sys and state files. Paths are parameters everywhere,
/// so parsers can be tested against temporary files.
package enum FileIO {
    /// Reads a whole file (sysfs and procfs files report size 0, so read until EOF).
    package static func read(_ path: String) throws(SystemError) -> String {
        let fd = try systemCall("read", path: path) { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        return try readAll(fd: fd, path: path)
    }

    /// A file holding one decimal number (a cgroup counter such as memory.current), read with
    /// one openat relative to `directory` (AT_FDCWD: `path` as given) and one read into a small
    /// buffer, no String (`ps` reads one per app: a String by full path was a third of its time).
    /// nil when it cannot be opened or read, or does not start with a number that fits.
    package static func readCounter(_ path: String, relativeTo directory: Int32 = AT_FDCWD) -> UInt64? {
        let fd = retryingOnInterrupt { openat(directory, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        if fd < 0 { return nil }
        defer { close(fd) }
        return preadCounter(fd: fd)
    }

    /// The same from offset 0 of a descriptor kept open (pread: no open, no close).
    package static func preadCounter(fd: Int32) -> UInt64? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buf -> UInt64? in
            let n = retryingOnInterrupt { Glibc.pread(fd, buf.baseAddress, buf.count, 0) }
            return n > 0 ? parseCounter(UnsafeBufferPointer(rebasing: buf[0..<n])) : nil
        }
    }

    /// The decimal number the bytes start with; nil without one, or past UInt64.
    static func parseCounter(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        var digits = 0
        for byte in bytes {
            guard byte >= 48 && byte <= 57 else { break }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - 48))
            if o1 || o2 { return nil }
            value = sum
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// Everything from the descriptor's position to the end of the file.
    package static func readAll(fd: Int32, path: String) throws(SystemError) -> String {
        try readToEnd(fd: fd, path: path, positioned: false)
    }

    /// Everything from offset 0 to the end, with pread: a kept descriptor (a cgroup.procs) is
    /// read again with no open, close or seek. Until pread says 0: a seq_file hands out at most
    /// its buffer's worth per call, so a short read is not the end.
    package static func preadAll(fd: Int32, path: String) throws(SystemError) -> String {
        try readToEnd(fd: fd, path: path, positioned: true)
    }

    private static func readToEnd(fd: Int32, path: String, positioned: Bool) throws(SystemError) -> String {
        // Scratch memory never zeroed: a zeroed 8 KiB array was a memset per file read.
        var bytes: [UInt8] = []
        let failure = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 8192) { chunk -> SystemError? in
            while true {
                let n: Int
                do throws(SystemError) {
                    n = try systemCall("read", path: path) {
                        positioned
                            ? Glibc.pread(fd, chunk.baseAddress, chunk.count, off_t(bytes.count))
                            : Glibc.read(fd, chunk.baseAddress, chunk.count)
                    }
                } catch {
                    return error
                }
                if n == 0 { return nil }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[0..<n]))
            }
        }
        if let failure { throw failure }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads from offset 0 of an open descriptor (for re-reading cgroup.events through the fd we poll).
    package static func pread(fd: Int32, path: String) throws(SystemError) -> String {
        let text = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { chunk -> Result<String, SystemError> in
            Result { () throws(SystemError) -> String in
                let n = try systemCall("read", path: path) { Glibc.pread(fd, chunk.baseAddress, chunk.count, 0) }
                return String(decoding: UnsafeBufferPointer(rebasing: chunk[0..<n]), as: UTF8.self)
            }
        }
        return try text.get()
    }

    /// Opens a file for a descriptor the caller keeps (close-on-exec, never through a symlink:
    /// a control file under /sys/fs/cgroup is never a link, so one there is not ours).
    package static func openDescriptor(_ path: String, flags: Int32) throws(SystemError) -> Int32 {
        try systemCall("open", path: path) { open(path, flags | O_CLOEXEC | O_NOFOLLOW) }
    }

    /// Writes a value at offset 0 of an open control file in one pwrite(2): a kept descriptor
    /// can be written again and again (cgroup files take each write whole, whatever the offset).
    package static func pwrite(fd: Int32, path: String, _ value: String) throws(SystemError) {
        // withCString rethrows untyped: the retry runs inside, the policy's error outside.
        let n = value.withCString { p in retryingOnInterrupt { Glibc.pwrite(fd, p, strlen(p), 0) } }
        if n < 0 { throw systemCallError("write", path: path, errno: errno) }
    }

    /// Writes a value to a control file in one write(2), as the kernel expects.
    package static func write(_ path: String, _ value: String) throws(SystemError) {
        let fd = try systemCall("write", path: path) { open(path, O_WRONLY | O_CLOEXEC) }
        defer { close(fd) }
        try pwrite(fd: fd, path: path, value)
    }

    /// Writes a file atomically: a temporary file beside it, then rename. Readers and a process
    /// that crashes see the old file or the new one, never half of one. `durable` adds fsync of the
    /// file before the rename and of its directory after it, so the new file survives a power loss
    /// too, and a full or failing disk is reported here rather than at writeback (the registry's
    /// records; other files skip the cost).
    ///
    /// Safe in a directory others can write (a metrics file in node_exporter's textfile directory):
    /// the directory is opened once (never through a link at its last component) and everything
    /// after is relative to that descriptor; the temporary file has an unpredictable name
    /// (`createExclusive`) and is created exclusively, never through a link, so a link or file
    /// planted beside `path` is never opened, let alone truncated, and the rename replaces a link
    /// at `path` itself rather than writing through it.
    package static func writeAtomically(
        _ path: String, _ contents: String, mode: mode_t = 0o600, durable: Bool = false
    ) throws(SystemError) {
        let (directory, name) = split(path)
        let dirFD = try systemCall("open the directory", path: directory) {
            open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        defer { close(dirFD) }
        let (fd, tmpName) = try createExclusive(in: dirFD, directory: directory, beside: name, mode: mode)
        let tmp = directory + "/" + tmpName
        var failure: SystemError?
        let bytes = Array(contents.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { buf in
                retryingOnInterrupt { Glibc.write(fd, buf.baseAddress! + written, buf.count - written) }
            }
            if n < 0 { failure = systemCallError("write", path: tmp, errno: errno); break }
            written += n
        }
        if failure == nil && durable && fsync(fd) < 0 { failure = SystemError("fsync", path: tmp) }
        close(fd)
        // Without fsync, the new file takes the old one's place by an exchange, not a rename
        // over it: ext4 (auto_da_alloc) starts writeback of a file renamed over another, in the
        // rename (~1.4 ms of block I/O per suspend's record). Either way readers see one whole.
        if failure == nil && !durable && icebox_rename_exchange_at(dirFD, tmpName, name) == 0 {
            unlinkat(dirFD, tmpName, 0)  // now the old contents
        } else if failure == nil && renameat(dirFD, tmpName, dirFD, name) < 0 {
            failure = SystemError("rename to", path: path)
        }
        if let failure {
            unlinkat(dirFD, tmpName, 0)
            throw failure
        }
        if durable && fsync(dirFD) < 0 { throw SystemError("fsync the directory", path: directory) }
    }

    /// A new file beside `name` in an open directory, made by this call and no one else:
    /// `NAME.tmp.` and 16 random hex digits, O_CREAT | O_EXCL | O_NOFOLLOW, tried again under
    /// another name if one is taken (a few times: a name this random is taken only on purpose).
    static func createExclusive(
        in dirFD: Int32, directory: String, beside name: String, mode: mode_t
    ) throws(SystemError) -> (fd: Int32, name: String) {
        var attempt = 0
        while true {
            let suffix = String(UInt64.random(in: .min ... .max), radix: 16)
            let tmpName = name + ".tmp." + String(repeating: "0", count: 16 - suffix.count) + suffix
            let fd = retryingOnInterrupt {
                openat(dirFD, tmpName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            }
            if fd >= 0 { return (fd, tmpName) }
            attempt += 1
            if errno != EEXIST || attempt >= 8 { throw systemCallError("create", path: directory + "/" + tmpName, errno: errno) }
        }
    }

    /// `path` with its directory resolved (realpath: every link in it followed, now) and its
    /// last component as given; nil when the directory does not exist or the path names no
    /// file. For a path a user gives (`--metrics-file`, `--export-json`, `run --log`): their
    /// links are followed once, here, and the file then opened never through a link.
    package static func resolvingDirectory(_ path: String) -> String? {
        let (directory, name) = split(path)
        guard !name.isEmpty, name != ".", name != "..", let real = realpath(directory, nil) else { return nil }
        defer { free(real) }
        let resolved = String(cString: real)
        return (resolved == "/" ? "" : resolved) + "/" + name
    }

    /// A path's directory ("/" for a file at the root, "." for a bare name) and last component.
    package static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// This process's effective uid, read once: the daemon writes records with it at every
    /// state change and never changes it (a spawned child sets its ids after the clone).
    private static let effectiveUID = geteuid()

    /// How much of a file's start `replaceHead` may rewrite: its first page, which a write puts in
    /// whole or not at all.
    package static let headLimit = 4096

    /// Rewrites the start of a file whose end stays as it is, in place, when that keeps
    /// `writeAtomically`'s promise to a writer that is killed (a reader sees the old contents or
    /// the new, whole): `path` is a regular file of this user's with one name (not a link, not
    /// shared) that ends with exactly `tail`, and what comes before the tail fits in its first page
    /// (`headLimit`) and has room for `head`. Then one pwrite at offset 0 puts `head` in, padded
    /// with spaces up to the tail, and the kernel does such a write whole or not at all when the
    /// writer is killed (it checks for a fatal signal before each page it copies, not within one).
    /// Past the first page the tail is read back and compared, so a file changed by anyone else is
    /// never patched; a file all in the first page is written whole.
    ///
    /// Returns false, having changed nothing, when any of that does not hold or the write comes up
    /// short; the caller then writes a new file and exchanges it (~50 µs on ext4, twice per
    /// suspend, against ~1 µs for the pwrite). Not durable: for what a power loss may lose.
    package static func replaceHead(_ path: String, head: [UInt8], tail: [UInt8]) -> Bool {
        let fd = retryingOnInterrupt { open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) }
        if fd < 0 { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_nlink == 1, st.st_uid == effectiveUID else { return false }
        let size = Int(st.st_size), region = size - tail.count
        guard region >= head.count, region <= headLimit, region > 0 else { return false }
        var bytes = head
        bytes += repeatElement(UInt8(ascii: " "), count: region - head.count)
        if size <= headLimit {
            bytes += tail  // all in the first page: written whole, with no need to read it
        } else {
            var onDisk = [UInt8](repeating: 0, count: tail.count)
            let got = onDisk.withUnsafeMutableBytes { buf in
                retryingOnInterrupt { Glibc.pread(fd, buf.baseAddress, buf.count, off_t(region)) }
            }
            guard got == tail.count, onDisk == tail else { return false }
        }
        let n = bytes.withUnsafeBytes { buf in retryingOnInterrupt { Glibc.pwrite(fd, buf.baseAddress, buf.count, 0) } }
        return n == bytes.count
    }

    /// fsync of the directory holding `path`: makes a rename or unlink in it durable.
    package static func syncDirectory(of path: String) throws(SystemError) {
        let dir = split(path).directory
        let fd = try systemCall("open the directory", path: dir) { open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(fd) }
        _ = try systemCall("fsync the directory", path: dir) { fsync(fd) }
    }

    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// What the symbolic link at `path` names (up to PATH_MAX bytes), or nil if it is none.
    package static func readLink(_ path: String) -> String? {
        var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buf, Int(PATH_MAX))
        return n > 0 ? String(decoding: buf[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    package static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// mkdir -p with a mode for the directories it creates.
    package static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws(SystemError) {
        if isDirectory(path) { return }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) < 0 && errno != EEXIST { throw SystemError("create directory", path: prefix) }
        }
        // As mkdir -p: an existing file where the directory should be is an error.
        if !isDirectory(path) { throw SystemError("create directory", path: path, errno: EEXIST) }
    }

    /// Names of the subdirectories of a directory (d_type, with lstat where the file system
    /// does not fill it in: a symlink to a directory is not one).
    package static func listDirectories(_ path: String) throws(SystemError) -> [String] {
        try entries(path).compactMap { name, type in
            if type == UInt8(DT_DIR) { return name }
            guard type == UInt8(DT_UNKNOWN) else { return nil }
            var st = stat()
            return lstat(path + "/" + name, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR ? name : nil
        }
    }

    /// Names in a directory, without "." and "..".
    package static func list(_ path: String) throws(SystemError) -> [String] { try entries(path).map(\.name) }

    /// A directory's entries with their d_type, without "." and "..".
    static func entries(_ path: String) throws(SystemError) -> [(name: String, type: UInt8)] {
        guard let dir = opendir(path) else { throw SystemError("list", path: path) }
        defer { closedir(dir) }
        var out: [(name: String, type: UInt8)] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { out.append((name, entry.pointee.d_type)) }
        }
        return out
    }

    /// What lstat(2) (or fstat(2)) says about a file: its type, owner and permission bits.
    package struct Status: Sendable, Equatable {
        package enum Kind: Sendable, Equatable { case directory, regular, socket, symlink, other }
        package var kind: Kind
        package var owner: uid_t
        /// The permission bits only (0o7777 of st_mode).
        package var permissions: mode_t

        package init(kind: Kind, owner: uid_t, permissions: mode_t) {
            self.kind = kind
            self.owner = owner
            self.permissions = permissions
        }

        init(_ st: stat) {
            switch st.st_mode & S_IFMT {
            case S_IFDIR: kind = .directory
            case S_IFREG: kind = .regular
            case S_IFSOCK: kind = .socket
            case S_IFLNK: kind = .symlink
            default: kind = .other
            }
            owner = st.st_uid
            permissions = st.st_mode & 0o7777
        }
    }

    /// The path's own status (lstat), never following a symbolic link at the end; nil if nothing is
    /// there.
    package static func linkStatus(_ path: String) throws(SystemError) -> Status? {
        var st = stat()
        if lstat(path, &st) < 0 {
            if errno == ENOENT { return nil }
            throw SystemError("inspect", path: path)
        }
        return Status(st)
    }

    /// The status of an open descriptor (fstat).
    package static func status(fd: Int32, path: String) throws(SystemError) -> Status {
        var st = stat()
        if fstat(fd, &st) < 0 { throw SystemError("inspect", path: path) }
        return Status(st)
    }

    /// Opens a directory for `openAt`, refusing a symbolic link in its place (ELOOP) or a
    /// non-directory (ENOTDIR).
    package static func openDirectory(_ path: String) throws(SystemError) -> Int32 {
        try systemCall("open directory", path: path) { open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
    }

    /// Opens `name` inside an open directory, close-on-exec and never through a symbolic link
    /// (ELOOP): what a directory's owner made there is what is opened, whatever happens to the path
    /// above it meanwhile.
    package static func openAt(
        _ directory: Int32, _ name: String, flags: Int32, mode: mode_t = 0o600, path: String
    ) throws(SystemError) -> Int32 {
        // The directory descriptor is the caller's own, open (openDirectory): EBADF is a bug.
        try systemCall("open", path: path) { openat(directory, name, flags | O_NOFOLLOW | O_CLOEXEC, mode) }
    }
}
