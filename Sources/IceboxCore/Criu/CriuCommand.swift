import Glibc
import IceboxSystem

/// One run of the `criu` program: its output (stdout and stderr together, the first 64 KiB) and how
/// it ended, within a deadline. A criu still running at the deadline is killed and reaped: no run
/// outlives its call.
package struct CriuCommand: Sendable {
    /// How it ended; nil when it ran past the deadline (then killed).
    package var termination: Termination?
    package var output: String
    /// How long it ran (ns), spawn to reap.
    package var nanos: UInt64

    package var succeeded: Bool { termination == .exited(0) }

    /// The most output kept: criu's messages are lines; a log goes to a file (`-o`).
    static let outputLimit = 64 << 10

    /// Runs `criu ARGUMENTS` from `path` (`spawnRequest`) and waits for it, at most `timeoutNanos`.
    package static func run(_ path: String, _ arguments: [String], timeoutNanos: UInt64) throws(SystemError) -> CriuCommand {
        let pipe = try PipePair()
        let (readEnd, writeEnd) = (pipe.readEnd, pipe.writeEnd)
        defer { close(readEnd) }
        // Non-blocking: the read loop stops at criu's exit even if something it started (a restored
        // task) still held the pipe.
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        var request = spawnRequest(path, arguments)
        request.stdout = writeEnd
        request.stderr = writeEnd
        let started = Clock.monotonicNanos()
        let deadline = started.saturatingAdd(timeoutNanos)
        let spawned: SpawnedProcess
        do { spawned = try Spawner.spawn(request) } catch {
            close(writeEnd)
            if case .system(let e) = error { throw e }
            throw SystemError("run", path: "\(path) (\(error))", errno: ENOEXEC)
        }
        close(writeEnd)
        let handle = spawned.handle
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var termination: Termination?
        var fds = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0), pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0)]
        var open = true
        while Clock.monotonicNanos() < deadline {
            if open {
                let n = read(readEnd, &buffer, buffer.count)
                if n > 0 {
                    if output.count < outputLimit { output += buffer[0..<min(n, outputLimit - output.count)] }
                    continue
                }
                if n == 0 { open = false }
                if n < 0 && errno != EAGAIN && errno != EINTR { open = false }
            }
            // An error (ECHILD: it is our child, so only a bug) reads as still running: the
            // deadline ends the wait and kills it.
            if let ended = try? handle.reapIfExited() {
                termination = ended
                break
            }
            fds[0].fd = open ? readEnd : -1
            fds[0].revents = 0
            fds[1].revents = 0
            _ = try Poll.wait(&fds, until: deadline)
        }
        if termination != nil {
            // What it wrote just before it exited.
            while output.count < outputLimit {
                let n = read(readEnd, &buffer, buffer.count)
                if n <= 0 { break }
                output += buffer[0..<min(n, outputLimit - output.count)]
            }
        } else {
            // Bounded: the caller gets a run without a termination, which it reports as timed out.
            CriuCanary.killAndReap(handle)
        }
        return CriuCommand(
            termination: termination, output: String(decoding: output, as: UTF8.self), nanos: Clock.monotonicNanos() - started)
    }

    /// How icebox starts criu (and the `sync` of its images): argv[0] the program's name, stdin
    /// /dev/null, only PATH and LC_ALL=C in its environment (criu runs no program of the app's).
    static func spawnRequest(_ executable: String, _ arguments: [String]) -> SpawnRequest {
        SpawnRequest(
            executable: executable, arguments: [FileIO.split(executable).name] + arguments,
            environment: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"])
    }

    /// How it ended, for a reason: "exited with status 1", "ran past its 30 s deadline: killed".
    package func ending(timeoutNanos: UInt64) -> String {
        termination?.description ?? "ran past its \(DurationText.format(timeoutNanos)) deadline: killed"
    }

    /// The first `Error (` line of a criu log or output, without the harmless one every 4.x
    /// run writes when it may not raise RLIMIT_NOFILE. Nil when there is none.
    package static func firstError(in text: String) -> String? {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            var trimmed = line.drop { $0 == " " || $0 == "\t" }
            // At -v3 and above every line starts with its time: "(00.033938) Error (...".
            if trimmed.hasPrefix("("), let close = trimmed.firstIndex(of: ")") {
                trimmed = trimmed[trimmed.index(after: close)...].drop { $0 == " " }
            }
            guard trimmed.hasPrefix("Error (") || trimmed.hasPrefix("Error:") else { continue }
            if trimmed.contains("RLIMIT_NOFILE") { continue }
            return String(trimmed.prefix(400))
        }
        return nil
    }

    /// The arguments of every restore: the tree is the caller's child (`--restore-sibling
    /// --restore-detached`), its root's pid in `restored.pid`, criu's log in `restore.log` at level
    /// 3 (its "Restore finished successfully" is what a daemon that did not see criu's exit goes
    /// by).
    package static func restoreArguments(images: String) -> [String] {
        [
            "restore", "--images-dir", images, "--log-file", "restore.log", "-v3", "--restore-sibling", "--restore-detached",
            "--manage-cgroups=ignore",
            "--pidfile", images + "/restored.pid",
        ]
    }

    /// Restores the tree in `images` (`restoreArguments`): criu's run, and the handle of the tree's
    /// root when one runs, whatever criu said: the caller owns it (ends or adopts it). The one way
    /// to restore, for the probe's canary and every test that restores.
    package static func restore(
        _ criu: String, images: String, timeoutNanos: UInt64
    ) throws(SystemError) -> (result: CriuCommand, restored: ProcessHandle?) {
        let result = try run(criu, restoreArguments(images: images), timeoutNanos: timeoutNanos)
        let pid = pid_t(((try? FileIO.read(images + "/restored.pid")) ?? "").trimmed())  // none written: none restored
        // A restored pid gone already: no restored process (the caller reports a failed restore).
        return (result, pid.flatMap { try? ProcessHandle(adopting: $0) })
    }
}
