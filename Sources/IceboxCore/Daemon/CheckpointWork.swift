import IceboxSystem

/// A checkpoint to disk the daemon carries out for an app's lifecycle, as a state of the loop:
/// criu's dump, then `sync` on the images, each a child whose pidfd the loop watches.
struct CheckpointWork {
    enum Stage {
        case dump, sync
    }
    var stage: Stage
    var run: CriuRun
    let images: CheckpointImages
    /// How long the dump took (set when it ended).
    var dumpNanos: UInt64 = 0
    /// The app's memory just before the dump: what it frees.
    let memoryBytes: UInt64?
}
