import Glibc
import IceboxSystem

/// A program the daemon's loop runs for a checkpoint or a restore (criu, then `sync` on the
/// images): started, its pidfd watched by the loop, never waited for inline, killed at its
/// deadline. What it prints goes to a file beside the images (criu's own log is `--log-file`).
final class CriuRun {
    let handle: ProcessHandle
    /// When it started and when it must have ended (monotonic ns); once it was killed, when the
    /// wait for its end is given up.
    let started: UInt64
    private(set) var deadline: UInt64
    /// How long it was given (`--criu-timeout`), for the reason an overrun gives.
    let timeoutNanos: UInt64
    /// Why it was killed, once it was: its end is then that failure, whatever its status.
    private(set) var killedBecause: String?

    private init(handle: ProcessHandle, started: UInt64, timeoutNanos: UInt64, countedFrom: UInt64?) {
        self.handle = handle
        self.started = started
        self.deadline = (countedFrom ?? started).saturatingAdd(timeoutNanos)
        self.timeoutNanos = timeoutNanos
    }

    /// Starts `executable ARGUMENTS` as `CriuCommand.spawnRequest` does, stdout and stderr to
    /// `output`. `cgroups`: where it starts (a restore's criu, in the app's fresh cgroups, so the
    /// tree it forks is there from its first page, its memory charged to the app). `countedFrom`:
    /// when `timeoutNanos` began, if before now (a dump's sync shares the dump's deadline).
    static func start(
        _ executable: String, _ arguments: [String], output: String, timeoutNanos: UInt64, countedFrom: UInt64? = nil,
        cgroups: AppCgroups? = nil
    ) throws(IceboxError) -> CriuRun {
        let name = FileIO.split(executable).name
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 { throw IceboxError("run \(name)", SystemError("create", path: output)) }
        defer { close(fd) }
        var request = CriuCommand.spawnRequest(executable, arguments)
        request.stdout = fd
        request.stderr = fd
        var descriptors: SpawnDescriptors?
        if let cgroups {
            do { descriptors = try cgroups.spawnDescriptors() } catch { throw IceboxError("run \(name)", error) }
            descriptors?.apply(to: &request)
        }
        let started = Clock.monotonicNanos()
        let spawned = Result { try Spawner.spawn(request) }
        descriptors.take()?.close()  // the child has them (or has failed): ours go now
        do {
            return CriuRun(handle: try spawned.get().handle, started: started, timeoutNanos: timeoutNanos, countedFrom: countedFrom)
        } catch {
            throw IceboxError(.unavailable, "cannot run \(executable): \(error)", hint: "icebox doctor --require criu says why")
        }
    }

    /// How it ended, once it has (reaped); nil while it runs.
    func ended() -> Termination? { (try? handle.reapIfExited()) ?? nil }  // an error: not ours to reap, so not ended

    /// Its deadline passed: the first time it is killed (`kill`) and this returns nil; the second
    /// (the kill's deadline passed too) the wait is given up, and this returns why its checkpoint
    /// or restore failed (the loop still reaps it). `what`: "criu dump", for the reason.
    func overran(_ what: String, now: UInt64) -> String? {
        if let killed = killedBecause { return killed + "; not ended \(DurationText.format(Self.killWaitNanos)) after SIGKILL" }
        kill(because: "\(what) ran past its deadline (\(DurationText.format(timeoutNanos)), --criu-timeout): killed", now: now)
        return nil
    }

    /// Kills it: its end, through its pidfd, fails its checkpoint or restore for `why`; one not
    /// ended `killWaitNanos` later (a task in D state, or in a frozen v1 freezer, dies only later)
    /// is given up by `overran`.
    func kill(because why: String, now: UInt64) {
        _ = try? handle.send(SIGKILL)  // gone already: its pidfd says so
        killedBecause = why
        deadline = now.saturatingAdd(Self.killWaitNanos)
    }

    static let killWaitNanos: UInt64 = 2_000_000_000

    var pid: pid_t { handle.pid }
}
