import Glibc
import IceboxSystem

/// One app's checkpoint images: a directory of its own under `$STATE_DIR/images` (both 0700, the
/// daemon's user's, never reached through a link: the images hold the app's whole heap, secrets
/// included; an app run as another user cannot read its own), with criu's logs and a `complete`
/// mark written only once the images are durable. A daemon that finds the mark may restore; one
/// that does not, may not.
package struct CheckpointImages: Sendable, Equatable {
    package let directory: String

    static let completeMark = "complete"
    package var dumpLog: String { directory + "/dump.log" }
    package var restoreLog: String { directory + "/restore.log" }
    package var restoredPIDFile: String { directory + "/restored.pid" }

    /// Where `app`'s images are kept under `stateDir`.
    static func root(stateDir: String) -> String { stateDir + "/images" }

    /// The images of a recorded app: where its record says, else where they are made.
    package static func of(_ record: AppRecord, stateDir: String) -> CheckpointImages {
        CheckpointImages(directory: record.images ?? root(stateDir: stateDir) + "/" + record.name)
    }

    /// A fresh, empty directory for `app`'s next checkpoint (what an earlier one left there
    /// is removed first: it was never completed, or its app was restored since).
    package static func prepare(stateDir: String, app: String) throws(IceboxError) -> CheckpointImages {
        let root = root(stateDir: stateDir)
        do throws(SystemError) {
            if mkdir(root, 0o700) < 0 && errno != EEXIST { throw SystemError("create", path: root) }
            try checkOwnDirectory(root)
            let images = CheckpointImages(directory: root + "/" + app)
            try FileIO.removeTree(images.directory)
            if mkdir(images.directory, 0o700) < 0 { throw SystemError("create", path: images.directory) }
            try checkOwnDirectory(images.directory)
            return images
        } catch {
            throw IceboxError("prepare the checkpoint images of \(app)", error)
        }
    }

    /// A directory of ours that no one else may write, by the rule of every directory icebox
    /// keeps (`IceboxPaths.trustProblem`: a link planted in its place is refused), then 0700.
    static func checkOwnDirectory(_ path: String) throws(SystemError) {
        guard let status = try FileIO.linkStatus(path) else { throw SystemError("inspect", path: path, errno: ENOENT) }
        if let problem = IceboxPaths.trustProblem(status, expected: .directory, user: geteuid()) {
            throw SystemError("use (\(problem))", path: path, errno: EPERM)
        }
        if IceboxPaths.onlyTooReadable(status, user: geteuid()) { chmod(path, 0o700) }
    }

    /// Whether the images were completed (dumped, synced, marked).
    package var isComplete: Bool { FileIO.exists(directory + "/" + Self.completeMark) }

    /// Marks the images complete, durably (the mark's file and the directory synced): the
    /// last step before the app's record says it is on disk.
    package func markComplete() throws(SystemError) {
        let path = directory + "/" + Self.completeMark
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw SystemError("create", path: path) }
        defer { close(fd) }
        if fsync(fd) < 0 { throw SystemError("sync", path: path) }
        try FileIO.syncDirectory(of: path)
    }

    /// coreutils' `sync` of every image file and the directory (fsync of each): what makes
    /// the images durable. nil when there is no `sync` in /usr/bin or /bin.
    package func syncCommand() -> (executable: String, arguments: [String])? {
        guard let sync = Spawner.resolve("sync", path: "/usr/bin:/bin") else { return nil }
        return (sync, imageFiles() + [directory])
    }

    /// The image files (criu's `*.img`), for the sync.
    package func imageFiles() -> [String] {
        // Unreadable: no files to name (the sync and the size then cover none, and say so).
        ((try? FileIO.list(directory)) ?? []).filter { $0.hasSuffix(".img") }.sorted().map { directory + "/" + $0 }
    }

    /// The images' size: what they take on disk (blocks), the figure a user weighs.
    package func bytes() -> UInt64 {
        var total: UInt64 = 0
        for path in imageFiles() {
            var st = stat()
            if lstat(path, &st) == 0 { total &+= UInt64(st.st_blocks) * 512 }
        }
        return total
    }

    /// Whether criu's own log says the dump finished (what a daemon that did not see criu's
    /// exit status goes by): criu writes it only after every image, before it kills the tree.
    package var dumpLogSaysDone: Bool { Self.log(dumpLog, says: "Dumping finished successfully") }
    package var restoreLogSaysDone: Bool { Self.log(restoreLog, says: "Restore finished successfully") }

    static func log(_ path: String, says text: String) -> Bool {
        ((try? FileIO.read(path)) ?? "").contains(text)  // no log: criu never got that far
    }

    /// Why criu failed, from its log: the first `Error (` line, else nil.
    package func firstError(in log: String) -> String? {
        CriuCommand.firstError(in: (try? FileIO.read(log)) ?? "")  // no log: nothing to quote
    }

    /// Removes the images (restored, discarded, or never completed).
    package func discard() throws(SystemError) { try FileIO.removeTree(directory) }
}
