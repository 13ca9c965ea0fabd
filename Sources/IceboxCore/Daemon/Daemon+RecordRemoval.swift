import Glibc
import IceboxSystem

extension Daemon {
    /// Removes app `name`'s record from the registry, or says in the event log why it could
    /// not (the error names the file and what to do). The operation the removal closes has
    /// happened and is not undone for it, but a failed write fails loudly: a record left
    /// behind shows the app in `icebox ps` and brings it back at the next start. These
    /// removals were once dropped unseen (`try?`).
    func removeRecord(_ name: String) {
        do { try Registry.remove(name, directory: config.paths.registryDir) } catch {
            log(.error, app: name, pid: nil, "registry: \(error)")
        }
    }

    /// Writes `record` back as it was before an operation that is being undone, or says in
    /// the event log why it could not.
    func restoreRecord(_ record: AppRecord) {
        do { try writeRecord(record) } catch {
            log(.error, app: record.name, pid: nil, "registry: \(error)")
        }
    }
}
