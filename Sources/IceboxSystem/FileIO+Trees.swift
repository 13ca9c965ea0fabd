import Glibc

/// Whole directories: a fresh private one (mkdtemp) and removal of a tree.
extension FileIO {
    /// Creates a new directory (mkdtemp), mode 0700, named `prefix` plus six random characters,
    /// under `$TMPDIR` (else /tmp).
    package static func makeTemporaryDirectory(prefix: String) throws(SystemError) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix)XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) != nil }
        if !made { throw SystemError("create a temporary directory in", path: base) }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes `path` and everything under it, as `rm -rf` does, without following symbolic links.
    /// A path that does not exist is not an error; the first entry that cannot be removed is.
    package static func removeTree(_ path: String) throws(SystemError) {
        var st = stat()
        if lstat(path, &st) < 0 {
            if errno == ENOENT { return }
            throw SystemError("remove", path: path)
        }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for name in try list(path) { try removeTree(path + "/" + name) }
            if rmdir(path) < 0 && errno != ENOENT { throw SystemError("remove directory", path: path) }
        } else if unlink(path) < 0 && errno != ENOENT {
            throw SystemError("remove", path: path)
        }
    }
}
