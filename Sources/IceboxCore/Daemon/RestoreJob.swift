import IceboxSystem

/// A restore from disk under way, its app still on disk among `ended`: its fresh cgroups,
/// the criu restoring it, and the clients waiting for it.
struct RestoreJob {
    let record: AppRecord
    let run: CriuRun
    let images: CheckpointImages
    let cgroups: AppCgroups
    var waiters: [Int]

    var name: String { record.name }
}
