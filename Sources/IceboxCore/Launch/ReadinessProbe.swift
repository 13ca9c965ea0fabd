import Glibc
import IceboxSystem

/// What a readiness probe needs next from the loop that drives it.
enum ProbeStep: Equatable {
    case ready
    /// This attempt failed: start another after `nextDelay()`.
    case notReady
    /// Watch `fd` for `events` (`EpollEvents` bits) and call `resume(events:)` when it fires;
    /// abandon the attempt with `cancel()` if `attemptDeadline` passes first.
    case wait(fd: Int32, events: UInt32)
}

/// The readiness probe of a launching app (`--ready tcp:PORT`, `http:URL` or `cmd:PROBE`), driven
/// by the daemon's epoll loop and touched only by its thread: tcp is a non-blocking connect, http
/// an `HTTPProbe` (connect, send, read the status line), cmd a `/bin/sh -c` child in its own
/// session watched through its pidfd. Nothing here waits or sleeps. Neither a listening port nor a
/// probe's success has an event to wait on, so a failed attempt is retried after a back-off (1 ms
/// doubling to 50 ms for tcp, 10 ms doubling to 200 ms for http and cmd).
final class ReadinessProbe {
    private enum Attempt {
        case idle
        case connecting(fd: Int32)
        case http(HTTPProbe)
        case running(ProcessHandle)
    }

    let mode: ReadyMode
    /// How long one attempt may take before it is abandoned and retried (ns): a server that
    /// accepts but never answers, or a probe command that hangs, must not hold readiness.
    let attemptTimeout: UInt64
    private(set) var attempts = 0
    /// When the attempt in flight is to be abandoned (monotonic ns); nil when none is.
    private(set) var attemptDeadline: UInt64?
    private var attempt = Attempt.idle
    private var backoff: UInt64
    /// The last reason an attempt could not start, and that reason if not yet taken.
    private var lastStartProblem: String?
    private var unsaidStartProblem: String?
    private let backoffCap: UInt64

    init(mode: ReadyMode, attemptTimeout: UInt64? = nil) {
        self.mode = mode
        // tcp 1 s (a listening loopback port accepts at once), http 5 s (a cold app may be slow to
        // answer its first request), cmd 30 s (the probe is the user's script, and the ready
        // timeout, 30 s by default, bounds the whole wait anyway).
        switch mode {
        case .tcp: (self.attemptTimeout, backoff, backoffCap) = (attemptTimeout ?? 1_000_000_000, 1_000_000, 50_000_000)
        case .http: (self.attemptTimeout, backoff, backoffCap) = (attemptTimeout ?? 5_000_000_000, 10_000_000, 200_000_000)
        default: (self.attemptTimeout, backoff, backoffCap) = (attemptTimeout ?? 30_000_000_000, 10_000_000, 200_000_000)
        }
    }

    deinit { cancel() }

    /// Starts one attempt (abandoning one in flight). A `cmd:` probe runs as `identity` (the app's
    /// --user), never with more than the app has, cloned into `cgroups` (the app's), so what it
    /// leaves behind is frozen, counted and killed with the app; one that cannot be put there fails
    /// the attempt rather than run outside. `descriptorSoftLimit`: the app's (0: the daemon's).
    func start(
        environment: [String], cwd: String?, identity: SpawnIdentity? = nil, cgroups: AppCgroups? = nil,
        descriptorSoftLimit: UInt64 = 0
    ) -> ProbeStep {
        cancel()
        attempts += 1
        attemptDeadline = Clock.monotonicNanos().saturatingAdd(attemptTimeout)
        switch mode {
        case .tcp(let port):
            let fd: Int32
            do { fd = try TCPProbe.start(port: port) } catch { return couldNotStart(error) }
            attempt = .connecting(fd: fd)
            return .wait(fd: fd, events: EpollEvents.writable)
        case .http(let text):
            // Parsed when the launch was accepted; a URL that no longer parses cannot answer.
            guard let url = HTTPURL(text) else { return settle(.notReady) }
            let check = HTTPProbe(url: url)
            attempt = .http(check)
            return follow(check.start())
        case .command(let text):
            var request = SpawnRequest(executable: "/bin/sh", arguments: ["sh", "-c", text], environment: environment)
            request.workingDirectory = cwd
            request.identity = identity
            request.descriptorSoftLimit = descriptorSoftLimit
            // Its own session and process group, so cancel() can kill whatever it started.
            request.newSession = true
            let spawned: SpawnedProcess
            if let cgroups {
                let descriptors: SpawnDescriptors
                do { descriptors = try cgroups.spawnDescriptors() } catch { return couldNotStart(error) }
                descriptors.apply(to: &request)
                let outcome = Result { try Spawner.spawn(request) }
                descriptors.close()  // the child has them (or has failed): ours go now
                do { spawned = try outcome.get() } catch { return couldNotStart(error) }
            } else {
                do { spawned = try Spawner.spawn(request) } catch { return couldNotStart(error) }
            }
            attempt = .running(spawned.handle)
            return .wait(fd: spawned.handle.pidfd, events: EpollEvents.readable)
        case .exec: return settle(.ready)  // execve succeeded before any probe could run
        case .notify: return settle(.notReady)  // READY=1 decides, never a probe
        }
    }

    /// The watched descriptor fired (an HTTP check may then ask to be watched for other events).
    func resume(events: UInt32) -> ProbeStep {
        switch attempt {
        case .idle: return .notReady
        case .connecting(let fd):
            switch TCPProbe.state(fd) {
            case .connected: return settle(.ready)
            case .failed: return settle(.notReady)
            case .inProgress:
                if events & (EpollEvents.error | EpollEvents.hangup) != 0 { return settle(.notReady) }
                return .wait(fd: fd, events: EpollEvents.writable)
            }
        case .http(let check): return follow(check.resume(events: events))
        case .running(let handle):
            let ended: Termination?
            // Reaped through its pidfd. ECHILD: someone else reaped it; it did not say ready.
            do { ended = try handle.reapIfExited() } catch { ended = .signaled(SIGKILL) }
            guard let ended else { return .wait(fd: handle.pidfd, events: EpollEvents.readable) }  // woken early
            // Reaped: its pid may be reused from now on, so cancel() must not signal its group.
            attempt = .idle
            attemptDeadline = nil
            return ended == .exited(0) ? .ready : .notReady
        }
    }

    /// Abandons the attempt in flight. Never waits: a probe command and its process group are sent
    /// SIGKILL and its pidfd closed, the child left for the daemon's SIGCHLD handling to reap. The
    /// caller stops watching `watchedFD` first.
    func cancel() {
        switch attempt {
        case .idle: break
        case .connecting(let fd): close(fd)
        case .http(let check): check.cancel()
        case .running(let handle):
            // ESRCH only: it exited meanwhile; its group is killed below all the same.
            _ = try? handle.send(SIGKILL)
            // The probe leads its own process group (newSession) and is not reaped yet, so
            // the group's id, its pid, cannot have been reused. ESRCH: nothing left in it.
            kill(-handle.pid, SIGKILL)
        }
        attempt = .idle  // the last reference to a ProcessHandle: its deinit closes the pidfd
        attemptDeadline = nil
    }

    /// The delay before the next attempt, growing each time.
    func nextDelay() -> UInt64 {
        defer { backoff = min(backoff * 2, backoffCap) }
        return backoff
    }

    /// The pid of a probe command running now (for the daemon's SIGCHLD handling).
    var childPID: pid_t? {
        if case .running(let h) = attempt { return h.pid }
        return nil
    }

    /// The descriptor the attempt in flight waits on.
    var watchedFD: Int32? {
        switch attempt {
        case .connecting(let fd): return fd
        case .http(let check): return check.fd
        case .running(let h): return h.pidfd
        case .idle: return nil
        }
    }

    /// An attempt that could not even start (no socket, no spawn): a failed attempt, retried after
    /// the back-off, and its reason kept for the daemon to say once (`takeStartProblem`), so that a
    /// ready timeout says the probe never ran, not only "not ready".
    private func couldNotStart(_ error: any Error) -> ProbeStep {
        let text = "\(error)"
        if text != lastStartProblem {
            lastStartProblem = text
            unsaidStartProblem = text
        }
        return settle(.notReady)
    }

    /// Why attempts could not start, once per new reason; nil when there is nothing new to say.
    func takeStartProblem() -> String? {
        defer { unsaidStartProblem = nil }
        return unsaidStartProblem
    }

    /// Ends the attempt with `step` (ready or not ready), releasing what it held.
    private func settle(_ step: ProbeStep) -> ProbeStep {
        cancel()
        return step
    }

    private func follow(_ step: HTTPProbe.Step) -> ProbeStep {
        switch step {
        case .wait(let fd, let events): return .wait(fd: fd, events: events)
        case .finished(let outcome): return settle(outcome.isReady ? .ready : .notReady)
        }
    }
}
