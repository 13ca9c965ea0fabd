import IceboxSystem

/// A restore from disk under way: the app has no process yet (its record is among the
/// daemon's `ended`, state on-disk), so this holds what the restore made for it (fresh,
/// thawed cgroups), the criu restoring it, and the clients waiting for it.
final class RestoreJob {
    let name: String
    var record: AppRecord
    let run: CriuRun
    let images: CheckpointImages
    let cgroups: AppCgroups
    var waiters: [Int]

    init(name: String, record: AppRecord, run: CriuRun, images: CheckpointImages, cgroups: AppCgroups, waiters: [Int]) {
        self.name = name
        self.record = record
        self.run = run
        self.images = images
        self.cgroups = cgroups
        self.waiters = waiters
    }
}
