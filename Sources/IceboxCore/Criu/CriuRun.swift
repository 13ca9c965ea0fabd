import Glibc
import IceboxSystem

/// A program the daemon's loop runs for a checkpoint or a restore (criu, then `sync` on the
/// images): started, its pidfd watched by the loop, never waited for inline, killed at its
/// deadline. What it prints goes to a file beside the images (criu's own log is `--log-file`).
final class CriuRun {
    let handle: ProcessHandle
    /// When it started and when it must have ended (monotonic ns).
    let started: UInt64
    let deadline: UInt64

    private init(handle: ProcessHandle, started: UInt64, deadline: UInt64) {
        self.handle = handle
        self.started = started
        self.deadline = deadline
    }

    /// Starts `executable ARGUMENTS` with stdin /dev/null, stdout and stderr to `output`, and
    /// only PATH and LC_ALL=C in its environment (criu runs no program of the app's).
    /// `cgroups`: where it starts (a restore's criu starts in the app's fresh cgroups, so the
    /// tree it forks is there from its first page, its memory charged to the app).
    static func start(
        _ executable: String, _ arguments: [String], output: String, timeoutNanos: UInt64, cgroups: AppCgroups? = nil
    ) throws(IceboxError) -> CriuRun {
        let name = FileIO.split(executable).name
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw IceboxError("run \(name)", SystemError("create", path: output)) }
        defer { close(fd) }
        var request = CriuCommand.spawnRequest(executable, arguments)
        request.stdout = fd
        request.stderr = fd
        if let cgroups {
            let descriptors: SpawnDescriptors
            do { descriptors = try cgroups.spawnDescriptors() } catch { throw IceboxError("run \(name)", error) }
            descriptors.apply(to: &request)
            let run = Result { () throws(IceboxError) in try spawn(request, executable: executable, timeoutNanos: timeoutNanos) }
            descriptors.close()  // the child has them (or has failed): ours go now
            return try run.get()
        }
        return try spawn(request, executable: executable, timeoutNanos: timeoutNanos)
    }

    private static func spawn(_ request: SpawnRequest, executable: String, timeoutNanos: UInt64) throws(IceboxError) -> CriuRun {
        let started = Clock.monotonicNanos()
        do {
            let spawned = try Spawner.spawn(request)
            return CriuRun(handle: spawned.handle, started: started, deadline: started.saturatingAdd(timeoutNanos))
        } catch {
            throw IceboxError(.unavailable, "cannot run \(executable): \(error)", hint: "icebox doctor --require criu says why")
        }
    }

    /// How it ended, once it has (reaped); nil while it runs.
    func ended() -> Termination? { (try? handle.reapIfExited()) ?? nil }  // an error: not ours to reap, so not ended

    /// Kills it (its deadline passed) and reaps it, bounded.
    func kill() {
        _ = try? handle.send(SIGKILL)  // gone already: nothing to kill
        // Not reaped in time: the loop reaps it later (reapChildren).
        _ = try? handle.wait(until: Clock.monotonicNanos().saturatingAdd(2_000_000_000))
    }

    var pid: pid_t { handle.pid }
}
