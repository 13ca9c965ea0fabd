import Glibc
import IceboxSystem

/// The CRIU probe's last verdict, in the state directory (criu-probe.json, 0600), for one kernel
/// release, criu binary and set of capabilities (`CriuProbe.cacheIdentity`): the whole probe costs
/// ~0.25 s here, the cached verdict ~1 ms. The file is read and written only if it and the
/// directory are ours (never through a symbolic link), as the registry's.
package enum CriuProbeCache {
    package static let fileName = "criu-probe.json"

    struct Entry: Codable {
        var kernel: String
        var binary: String
        var identity: String
        var verdict: CriuVerdict
    }

    /// The cached verdict for this kernel and binary, or nil (none, another one, or a file that is
    /// not to be trusted).
    package static func load(stateDir: String, kernel: String, binary: String, identity: String) -> CriuVerdict? {
        guard
            // Unreadable, not ours or through a link: no cached verdict (openTrusted checks), and
            // criu is probed again.
            let fd = try? IceboxPaths.openTrusted(
                fileName, in: stateDir, role: "state directory", variables: "XDG_STATE_HOME or ICEBOX_STATE_DIR", flags: O_RDONLY)
        else { return nil }
        defer { close(fd) }
        guard
            // A cache that cannot be read is no cached verdict: criu is probed again.
            let text = try? FileIO.readAll(fd: fd, path: fileName), text.utf8.count < 1 << 16,
            let entry = JSONLines.decode(Entry.self, text),
            entry.kernel == kernel, entry.binary == binary, entry.identity == identity
        else { return nil }
        var verdict = entry.verdict
        verdict.cached = true
        return verdict
    }

    /// Stores `verdict` in the state directory if there is one: none is made for it (`icebox
    /// doctor` creates nothing; the daemon makes it at its start), so the first probe on a fresh
    /// host is not kept. Throws, saying why, when the directory is not ours or the write fails.
    package static func store(_ verdict: CriuVerdict, stateDir: String, binary: String, identity: String) throws(IceboxError) {
        let status: FileIO.Status?
        do { status = try FileIO.linkStatus(stateDir) } catch { throw IceboxError("check state directory \(stateDir)", error) }
        guard status != nil else { return }
        try IceboxPaths.check(
            stateDir, .directory, role: "state directory", variable: "XDG_STATE_HOME or ICEBOX_STATE_DIR", user: geteuid())
        let entry = Entry(kernel: verdict.kernel, binary: binary, identity: identity, verdict: verdict)
        let path = stateDir + "/" + fileName
        do { try FileIO.writeAtomically(path, JSONLines.encode(entry) + "\n", mode: 0o600) } catch {
            throw IceboxError("write \(path)", error)
        }
    }
}
