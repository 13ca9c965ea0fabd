import Glibc
import IceboxSystem

/// Which `criu` icebox runs, and its identity for the probe's cache. In order: the path in
/// $ICEBOX_CRIU (used as it is, even if it is not there: what was asked for is what is probed),
/// then /usr/local/libexec/icebox/criu (where scripts/criu installs the one it builds), then `criu`
/// on PATH (Debian's package puts it in /usr/sbin).
package struct CriuBinary: Sendable, Equatable {
    /// Where scripts/criu installs the criu it builds (scripts/lib/criu.sh says the same).
    package static let installed = "/usr/local/libexec/icebox/criu"
    /// Searched when PATH is unset: where root's PATH has criu.
    static let defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    package var path: String
    /// "ICEBOX_CRIU", "icebox's prefix" or "PATH".
    package var source: String

    /// The criu to probe given this environment, or nil when there is none. `installedPath`:
    /// icebox's own place (another only in tests, to reach the PATH search).
    package static func find(environment: [String: String], installedPath: String = installed) -> CriuBinary? {
        if let chosen = environment["ICEBOX_CRIU"], !chosen.isEmpty { return CriuBinary(path: chosen, source: "ICEBOX_CRIU") }
        if access(installedPath, X_OK) == 0 { return CriuBinary(path: installedPath, source: "icebox's prefix") }
        let searchPath = environment["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultPath
        guard let found = Spawner.resolve("criu", path: searchPath), access(found, X_OK) == 0 else { return nil }
        return CriuBinary(path: found, source: "PATH")
    }

    /// What identifies the file now (stat, following a link to the program): a verdict is reused
    /// only for the same path, inode, size and modification time. Nil when it is not there.
    package func identity() -> String? {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return "\(st.st_dev):\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
    }
}
