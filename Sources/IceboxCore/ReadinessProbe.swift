import Glibc
import IceboxSystem

/// A probe in flight for `--ready tcp:PORT` or `--ready cmd:PROBE`. Neither a listening port
/// nor a probe's success has an event to wait on, so a failed attempt is retried after a
/// deliberate back-off (1 ms doubling to 50 ms for tcp, 10 ms doubling to 200 ms for cmd).
final class ReadinessProbe {
    enum Attempt {
        case connecting(fd: Int32)
        case running(ProcessHandle)
        case idle
    }

    let mode: ReadyMode
    var attempt: Attempt = .idle
    var backoff: UInt64
    var attempts = 0

    init(mode: ReadyMode) {
        self.mode = mode
        if case .tcp = mode { backoff = 1_000_000 } else { backoff = 10_000_000 }
    }

    /// Starts one attempt; returns the descriptor the loop should watch.
    func start(environment: [String], cwd: String?) -> Int32? {
        attempts += 1
        switch mode {
        case .tcp(let port):
            guard let fd = try? TCPProbe.start(port: port) else { return nil }
            attempt = .connecting(fd: fd)
            return fd
        case .command, .http:
            // An HTTP check may wait on a slow server, so it runs in a child (icebox probe)
            // rather than inside the daemon's loop; a command probe runs under /bin/sh.
            var req: SpawnRequest
            if case .http(let url) = mode {
                req = SpawnRequest(
                    executable: Spawner.selfExecutable, arguments: ["icebox", "probe", "http:" + url], environment: environment)
            } else if case .command(let text) = mode {
                req = SpawnRequest(executable: "/bin/sh", arguments: ["sh", "-c", text], environment: environment)
            } else {
                return nil
            }
            req.workingDirectory = cwd
            req.newSession = true
            guard let spawned = try? Spawner.spawn(req) else { return nil }
            attempt = .running(spawned.handle)
            return spawned.handle.pidfd
        default:
            return nil
        }
    }

    /// Called when the watched descriptor is ready: true if the app is ready.
    func finish() -> Bool {
        defer { attempt = .idle }
        switch attempt {
        case .connecting(let fd):
            let ok = TCPProbe.succeeded(fd)
            close(fd)
            return ok
        case .running(let handle):
            return (try? handle.reapIfExited()) == .exited(0)
        case .idle:
            return false
        }
    }

    /// The delay before the next attempt, growing each time.
    func nextDelay() -> UInt64 {
        let d = backoff
        let cap: UInt64
        if case .tcp = mode { cap = 50_000_000 } else { cap = 200_000_000 }
        backoff = min(backoff * 2, cap)
        return d
    }

    /// Abandons an attempt in flight (the app ended or timed out).
    func cancel() {
        switch attempt {
        case .connecting(let fd): close(fd)
        case .running(let handle):
            _ = try? handle.send(SIGKILL)
            _ = try? handle.wait(until: Clock.monotonicNanos() + 1_000_000_000)
        case .idle: break
        }
        attempt = .idle
    }

    /// The pid of a probe command running now (for the daemon's SIGCHLD handling).
    var childPID: pid_t? {
        if case .running(let h) = attempt { return h.pid }
        return nil
    }

    var watchedFD: Int32? {
        switch attempt {
        case .connecting(let fd): return fd
        case .running(let h): return h.pidfd
        case .idle: return nil
        }
    }
}
