import IceboxSystem

/// A restore from disk under way: the app has no process yet (its record is among the
/// daemon's `ended`, state on-disk), so this holds what the restore made for it (fresh,
/// thawed cgroups), the criu restoring it, and the clients waiting for it.
struct RestoreJob {
    let record: AppRecord
    let run: CriuRun
    let images: CheckpointImages
    let cgroups: AppCgroups
    var waiters: [Int]

    var name: String { record.name }
}
