import IceboxSystem

/// An app's checkpoint to disk, written: CRIU dumped its process tree to image files, which
/// were synced before anything was called freed.
package struct DiskCheckpoint: Sendable, Equatable {
    /// The images' directory (0700, the daemon's user's: they hold the app's whole heap).
    package var images: String
    /// criu dump: the tree frozen, its memory and state written, the tree killed.
    package var dumpNanos: UInt64
    /// Making the images durable (fsync of each file and the directory).
    package var syncNanos: UInt64
    package var imageBytes: UInt64
    /// The app's memory as the kernel counted it just before the dump (its cgroup's, else
    /// its processes' PSS): what the dump freed. nil: not read.
    package var memoryBytes: UInt64?
}

/// How a checkpoint to disk ended, as the daemon feeds it back (`.checkpointEnded`).
package enum CheckpointOutcome: Sendable, Equatable {
    case written(DiskCheckpoint)
    /// Nothing usable on disk: why (CRIU's first error line, its deadline, or what keeps the
    /// app from being dumped). The eviction falls back to a kill.
    case failed(String)
}

/// A checkpoint under way (the `.checkpointing` phase's payload). Two things must both come before
/// it is done, in either order: CRIU's end (`written`) and the main process's (`mainEnded`), which
/// CRIU kills once its images are written.
package struct Checkpointing: Sendable, Equatable {
    /// When the dump began (monotonic ns).
    package var since: UInt64
    /// Clients waiting for the app to be on disk.
    package var waiters: [Int] = []
    package var mainEnded = false
    package var termination: Termination?
    package var written: DiskCheckpoint?
    /// A terminate or kill eviction asked for meanwhile: done once the dump ends (a dump
    /// cannot be taken back halfway; the app is then on disk, or in memory, and goes).
    package var then: AppLifecycle.Ending?
    package var thenTimeout: UInt64 = 10_000_000_000
}
