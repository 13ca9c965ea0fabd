import Glibc
import IceboxSystem

/// The registry: every app the daemon knows, one file per app ($STATE_DIR/registry/NAME.json), each
/// written atomically before the daemon answers for the change, and records of intent before the
/// step they describe (a launch before its cgroups, a suspend before its notice or freeze), so a
/// daemon killed at any point leaves its successor a record at least as far along as the kernel
/// (Daemon+TakeOver; docs/architecture.md, crash safety). Only a launch's first record is durable
/// too (file and directory fsynced): it tells a later daemon, even after a power loss, that the
/// launch never finished. The rest are not: a daemon's death keeps the page cache, a power loss
/// ends the apps they describe, and an fsync costs a millisecond or more (benchmarks/soak.md).
package enum Registry {
    /// Every record in the directory, oldest launch first; unreadable files are skipped.
    package static func load(directory: String) -> [AppRecord] {
        // No directory (no daemon ran yet): no records.
        let names = ((try? FileIO.list(directory)) ?? []).filter { $0.hasSuffix(".json") }
        // A record gone meanwhile or unreadable is skipped, never the whole registry.
        return names.compactMap { (try? FileIO.read(directory + "/" + $0)).flatMap { JSONLines.decode(AppRecord.self, $0) } }
            .sorted { $0.launchedWall < $1.launchedWall }
    }

    /// Writes one record (`durable`: synced, for a record of intent). `done`: what state the app is
    /// in all the same, for the error of a write that failed after the kernel acted; nil: nothing
    /// was done.
    package static func write(_ record: AppRecord, directory: String, durable: Bool, done: String? = nil) throws(IceboxError) {
        let path = directory + "/" + record.name + ".json"
        do {
            let (head, tail) = layout(record)
            if !durable && FileIO.replaceHead(path, head: head, tail: tail) { return }
            var bytes = head
            if head.count + headRoom <= FileIO.headLimit { bytes += repeatElement(UInt8(ascii: " "), count: headRoom) }
            bytes += tail
            try FileIO.makeDirectories(directory, mode: 0o700)
            try FileIO.writeAtomically(path, String(decoding: bytes, as: UTF8.self), mode: 0o600, durable: durable)
        } catch {
            throw writeFailure(record.name, state: record.state, error, done: done)
        }
    }

    /// A record's file in two parts: `{` and the members its lifecycle changes (state, times, pid…)
    /// ending in a comma, then the members it keeps from launch to end (`"options":…,
    /// "runs_as":…}`), spaces between them when written whole (`headRoom`; still JSON, only the key
    /// order differs from JSONEncoder's). A state change then rewrites only the head, in place
    /// (`FileIO.replaceHead`): one write within the first page, whole or not at all for a killed
    /// daemon too, however large the app's environment (Debian's LS_COLORS alone is 1.5 KB; a new
    /// file and an exchange made a suspend 250 µs longer with a 3 KB one).
    static func layout(_ record: AppRecord) -> (head: [UInt8], tail: [UInt8]) {
        var head = JSONWriter(capacity: 1024)
        head.object { record.writeFields(to: &$0, except: AppRecord.launchTime) }
        var tail = JSONWriter(capacity: 4096)
        tail.object { record.writeFields(to: &$0, group: AppRecord.launchTime) }
        var headBytes = head.bytes
        headBytes[headBytes.count - 1] = UInt8(ascii: ",")  // the head's "}"
        return (headBytes, Array(tail.bytes.dropFirst()))  // the tail's "{"
    }

    /// The spaces a whole write leaves after the head, for the heads of later state changes to grow
    /// into (a grace's deadline, an exit status, a STATUS= text) and still be written in place.
    static let headRoom = 256

    /// Removes a record durably (an app that was never started after all).
    package static func remove(_ name: String, directory: String) throws(IceboxError) {
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
