import IceboxSystem

/// A checkpoint to disk, as a state of the loop: criu's dump, then `sync` on the images.
struct CheckpointWork {
    enum Stage { case dump, sync }
    var stage: Stage
    var run: CriuRun
    let images: CheckpointImages
    var dumpNanos: UInt64 = 0  // set when the dump ended
    let memoryBytes: UInt64?  // just before the dump: what it frees
}
