import Glibc
import IceboxSystem

/// The registry: every app the daemon knows, one file per app ($STATE_DIR/registry/NAME.json),
/// each written atomically (a temporary file put in its place) before the daemon answers for
/// the change, and records of intent before the step they describe (a launch before its
/// cgroups, a suspend before its notice or freeze), so a daemon killed at any point leaves
/// its successor a record at least as far along as the kernel (see Daemon+Adoption and the
/// crash-safety section of docs/architecture.md). Only a launch's first record is also
/// durable (fsync of the file and of the directory): it is what tells a later daemon, after
/// a power loss too, that the launch never finished. The rest are not synced: a daemon's
/// death keeps the page cache, a power loss ends the apps they describe, and each fsync
/// costs a millisecond or more (benchmarks/soak.md). Those that fit in a page overwrite
/// the file in place with one write (`FileIO.replaceInPlace`), whole or not at all for a
/// killed daemon too, instead of creating a file and exchanging it (~50 µs each).
public enum Registry {
    /// Every record in the directory, oldest launch first; unreadable files are skipped.
    public static func load(directory: String) -> [AppRecord] {
        let names = ((try? FileIO.list(directory)) ?? []).filter { $0.hasSuffix(".json") }
        return names.compactMap { (try? FileIO.read(directory + "/" + $0)).flatMap { JSONLines.decode(AppRecord.self, $0) } }
            .sorted { $0.launchedWall < $1.launchedWall }
    }

    /// Writes one record (`durable`: synced, for a record of intent). The error names what was
    /// being recorded, the file and the errno's text, and what to do; `done` says what state
    /// the app is in all the same (for a write that failed after the kernel already acted),
    /// nil when nothing was done.
    public static func write(_ record: AppRecord, directory: String, durable: Bool, done: String? = nil) throws(IceboxError) {
        let path = directory + "/" + record.name + ".json"
        do {
            // A record is 2–3 KB (most of it the launch options and their environment).
            let bytes = JSONLines.encodedBytes(record, capacity: 4096)
            if !durable && FileIO.replaceInPlace(path, bytes) { return }
            try FileIO.makeDirectories(directory, mode: 0o700)
            try FileIO.writeAtomically(path, String(decoding: bytes, as: UTF8.self), mode: 0o600, durable: durable)
        } catch {
            throw writeFailure(record.name, state: record.state, error, done: done)
        }
    }

    /// Removes a record durably (an app that was never started after all).
    public static func remove(_ name: String, directory: String) throws(IceboxError) {
        let path = directory + "/" + name + ".json"
        do throws(SystemError) {
            if unlink(path) < 0 && errno != ENOENT { throw SystemError("remove", path: path) }
            try FileIO.syncDirectory(of: path)
        } catch {
            throw writeFailure(name, state: nil, error, done: nil)
        }
    }

    /// "cannot record web as suspended in the registry: cannot write …: No space left on
    /// device (nothing was done; free space in … or make it writable, then try again)"
    static func writeFailure(_ name: String, state: AppState?, _ error: SystemError, done: String?) -> IceboxError {
        let what = state.map { "\(name) as \($0.rawValue)" } ?? name
        let dir = error.path.map { path in path.lastIndex(of: "/").map { String(path[..<$0]) } ?? path } ?? "the state directory"
        let fix = "free space in \(dir) or make it writable, then try again"
        return IceboxError(
            .ioError, "cannot record \(what) in the registry: \(error)",
            hint: done.map { "\($0); \(fix)" } ?? "nothing was done; \(fix)")
    }
}
