// Helpers shared by the unit test targets (a library so both can use it; never linked into icebox).
import Glibc

/// A fresh directory under /tmp (mkdtemp), for tests that need real files.
public func makeTemporaryDirectory(_ label: String = "unit") -> String {
    let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array("\(base)/icebox-unit-\(label)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buf -> String in
        guard let p = mkdtemp(buf.baseAddress!) else { fatalError("mkdtemp failed: errno \(errno)") }
        return String(cString: p)
    }
}

/// rm -rf without following symlinks.
public func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFDIR {
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafePointer(to: entry.pointee.d_name) { p in
                    p.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree(path + "/" + name) }
        }
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// Writes a file directly with libc (independent of the code under test).
public func writeFile(_ path: String, _ contents: String, mode: mode_t = 0o644) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    precondition(fd >= 0, "cannot create \(path)")
    let bytes = Array(contents.utf8)
    if !bytes.isEmpty { _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
    close(fd)
    chmod(path, mode)
}

/// Reads a file directly with libc (independent of the code under test).
public func readFile(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    while true {
        let c = fgetc(f)
        if c == EOF { break }
        bytes.append(UInt8(c))
    }
    return String(decoding: bytes, as: UTF8.self)
}

public func fileMode(_ path: String) -> mode_t? {
    var st = stat()
    return stat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
}

public func isDirectoryOnDisk(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
}
