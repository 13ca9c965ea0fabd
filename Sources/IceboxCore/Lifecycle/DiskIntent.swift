/// What a daemon was doing to an app's disk image when it wrote the record: kept until done,
/// so a successor that finds it knows to wait for the criu it names and look.
package enum DiskIntent: String, Sendable, Equatable, Codable {
    /// Dumping it to disk (then syncing the images).
    case checkpoint
    /// Restoring it from disk.
    case restore
}
