import IceboxSystem

/// A restore from disk under way (its app still among `ended`): cgroups, criu, waiters.
struct RestoreJob {
    let record: AppRecord
    let run: CriuRun
    let images: CheckpointImages
    let cgroups: AppCgroups
    var waiters: [Int]

    var name: String { record.name }
}
