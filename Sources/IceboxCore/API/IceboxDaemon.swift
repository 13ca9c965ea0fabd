import Glibc
import IceboxSystem
import Synchronization

/// A real `icebox daemon` process started for a test: its own runtime directory, state directory
/// and cgroup root, an ``IceboxClient`` for it, and a stop that terminates its apps and removes
/// everything it made.
///
/// Where a ``Supervisor`` runs the engine on a thread of the test process, this runs the `icebox`
/// executable, for a test of the daemon as a process (its signals, its restart, its re-adoption of
/// apps, a client in another language).
///
/// ```swift
/// try IceboxDaemon.with { daemon in
///     let app = try daemon.client.launch(LaunchOptions(name: "nap", command: ["sleep", "100"]))
///     try daemon.client.suspend("nap", grace: .zero)
///     #expect(try daemon.client.state(of: "nap") == .suspended)
/// }   // the daemon is stopped, its apps terminated, its directories and cgroups removed
/// ```
///
/// It runs `icebox daemon --foreground` with `ICEBOX_RUNTIME_DIR`, `ICEBOX_STATE_DIR`,
/// `--cgroup-root` and a `NOTIFY_SOCKET` of its own:
/// ``start(executable:runtimeDirectory:stateDirectory:cgroupRoot:readyTimeout:)`` returns once the
/// daemon says `READY=1` (it listens), and throws, with what it wrote on its standard error, if it
/// ends first. A connection stays open until ``stop(terminateApps:timeout:)``: a daemon with a
/// client does not exit for want of apps.
///
/// If the test process dies without ``stop(terminateApps:timeout:)`` (a test runner's SIGKILL, a
/// crash, Ctrl-C), nothing is left behind: a ``Supervisor``'s `/bin/sh` sweeper, started before the
/// daemon, kills the daemon, then its apps (frozen ones too), and removes the cgroups and
/// directories made for it, within about a second.
public final class IceboxDaemon: Sendable {
    /// A client for this daemon.
    public let client: IceboxClient
    /// The daemon's runtime directory (its control socket) and state directory (its event
    /// log, registry and apps' logs).
    public var paths: IceboxPaths { client.paths }
    /// The daemon's process id.
    public let pid: pid_t
    /// The `icebox` executable that runs as the daemon.
    public let executable: String
    /// The cgroup v2 directory the daemon makes its apps' cgroups under (`--cgroup-root`), or
    /// nil if the host has no usable cgroup v2 root: then the daemon chooses (the v1 freezer
    /// or SIGSTOP) and ``cgroupProblem`` says why.
    public let cgroupRoot: String?
    /// Why no cgroup v2 root is usable, or nil.
    public let cgroupProblem: String?
    /// The daemon's standard output and error (`--foreground` logs there), for a failing test
    /// to read; removed by ``stop(terminateApps:timeout:)``.
    public let outputLog: String

    private let process: DaemonProcess
    private let cleanup: TestCleanup
    /// The connection that keeps the daemon from exiting idle; closed by `stop`.
    private let hold: Mutex<Int32>
    private let stopped = Atomic(false)

    private init(
        client: IceboxClient, process: DaemonProcess, executable: String, facts: HostFacts, outputLog: String, cleanup: TestCleanup,
        hold: Int32
    ) {
        self.client = client
        self.process = process
        self.pid = process.handle.pid
        self.executable = executable
        self.cgroupRoot = facts.cgroup2Usable ? facts.cgroupRoot : nil
        self.cgroupProblem = facts.cgroup2Usable ? nil : facts.cgroupRootProblem ?? "no cgroup2 root"
        self.outputLog = outputLog
        self.cleanup = cleanup
        self.hold = Mutex(hold)
    }

    /// The `icebox` executable on `PATH` (execvp's search), or nil.
    public static func executableOnPath() -> String? {
        Spawner.resolve("icebox", path: ProcessEnvironment.dictionary["PATH"])
    }

    /// Starts `icebox daemon --foreground` and returns once it listens on its control socket.
    /// Corresponds to `ICEBOX_RUNTIME_DIR=… ICEBOX_STATE_DIR=… icebox daemon --foreground
    /// --cgroup-root PATH` under a service manager that waits for `READY=1`.
    ///
    /// - Parameters:
    ///   - executable: the `icebox` executable to run; nil: `icebox` found on `PATH`.
    ///   - runtimeDirectory: the daemon's `ICEBOX_RUNTIME_DIR`; nil: a new private directory
    ///     under `$TMPDIR` (or /tmp). Removed by ``stop(terminateApps:timeout:)`` if new.
    ///   - stateDirectory: the daemon's `ICEBOX_STATE_DIR`; nil: a new private directory.
    ///     Removed by ``stop(terminateApps:timeout:)`` if new.
    ///   - cgroupRoot: the daemon's `--cgroup-root`; nil: a new one, `icebox-daemon-PID-N`,
    ///     directly under the host's cgroup2 mount, removed by ``stop(terminateApps:timeout:)``.
    ///   - readyTimeout: how long the daemon may take to listen.
    /// - Throws: ``IceboxError``: ``IceboxError/Reason/commandNotFound(command:)`` if there
    ///   is no `icebox` executable; ``IceboxError/Reason/daemonUnavailable`` if the daemon
    ///   ended before it listened (the message quotes its standard error) or did not listen
    ///   in time (it is killed). Whatever was made is removed again.
    public static func start(
        executable: String? = nil, runtimeDirectory: String? = nil, stateDirectory: String? = nil, cgroupRoot: String? = nil,
        readyTimeout: Duration = .seconds(10)
    ) throws(IceboxError) -> IceboxDaemon {
        guard let program = executable ?? executableOnPath() else {
            throw IceboxError(
                .commandNotFound(command: "icebox"), "no icebox executable on PATH to start a daemon with",
                hint: "pass its path as executable:, or put it on PATH (swift build puts it in .build/debug)")
        }
        var owned: [String] = []
        var ownedRoots: [String] = []
        var sweeper: SupervisorSweeper?
        var process: DaemonProcess?
        do throws(IceboxError) {
            // Short: the notify socket inside must fit sun_path (107 bytes).
            let base: String
            do { base = try FileIO.makeTemporaryDirectory(prefix: "icebox-daemon-") } catch {
                throw IceboxError("start an icebox daemon", error)
            }
            owned.append(base)
            let paths = IceboxPaths(runtimeDir: runtimeDirectory ?? base + "/run", stateDir: stateDirectory ?? base + "/state")
            for dir in [runtimeDirectory, stateDirectory].compactMap({ $0 }) where !FileIO.exists(dir) { owned.append(dir) }

            let facts = TestCgroups.discover(cgroupRoot, prefix: "icebox-daemon", owned: &ownedRoots)
            sweeper = try SupervisorSweeper.start(TestCgroups.sweep(facts, ownedRoots: ownedRoots, directories: owned))

            let notifyPath = base + "/notify"
            let notify: Int32
            do { notify = try UnixSocket.bindNotify(path: notifyPath) } catch { throw IceboxError("start an icebox daemon", error) }
            defer { close(notify) }
            let outputLog = base + "/daemon.out"
            let root = TestCgroups.engineRoot(cgroupRoot, facts)
            process = try DaemonProcess.spawn(program, paths: paths, cgroupRoot: root, notifySocket: notifyPath, output: outputLog)
            if let ticks = ProcFS.stat(pid: process!.handle.pid)?.startTimeTicks {
                sweeper!.killFirst(pid: process!.handle.pid, startTicks: ticks)
            }
            try process!.waitUntilReady(notify: notify, paths: paths, output: outputLog, deadline: Supervisor.deadline(after: readyTimeout))
            let hold: Int32
            do { hold = try UnixSocket.connect(path: paths.controlSocket) } catch {
                throw IceboxError(.daemonUnavailable, "the icebox daemon said READY=1 but cannot be reached: \(error)")
            }
            return IceboxDaemon(
                client: IceboxClient(paths: paths), process: process!, executable: program, facts: facts, outputLog: outputLog,
                cleanup: TestCleanup(directories: owned.reversed(), cgroupRoots: ownedRoots, sweeper: sweeper), hold: hold)
        } catch {
            process?.kill()
            // The start's own error, thrown below, is what the caller must see.
            _ = TestCleanup(directories: owned.reversed(), cgroupRoots: ownedRoots, sweeper: sweeper).remove()
            throw error
        }
    }

    /// Stops the daemon and removes what was made for it: its apps are terminated the graceful way
    /// (SIGTERM, SIGKILL after `timeout`) and reaped, the daemon exits (waited for through its
    /// pidfd), and the directories and cgroup roots made for it are removed. Calling it again does
    /// nothing. Corresponds to `icebox daemon --stop [--terminate-apps]`, plus the removal of the
    /// directories and cgroups.
    ///
    /// - Parameters:
    ///   - terminateApps: false: the daemon stops and leaves its apps running, as `icebox daemon
    ///     --stop` does; they are then killed (SIGKILL, frozen ones too) with the removal of their
    ///     cgroups, and not reported as left behind.
    ///   - timeout: how long each app may take to end after its SIGTERM.
    /// - Throws: ``IceboxError`` if something was left behind: a process or cgroup the daemon did
    ///   not remove (removed now, as well as can be), a directory that cannot be removed, a daemon
    ///   that did not exit (killed), or one that exited with a failure.
    public func stop(terminateApps: Bool = true, timeout: Duration = .seconds(10)) throws(IceboxError) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // A daemon waits for every client before it exits: this one's goes first.
        hold.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
        var problems: [String] = []
        if !process.hasExited {
            do { try client.stopDaemon(terminateApps: terminateApps, timeout: timeout) } catch  where process.hasExited {
                // It left on its own meanwhile: nothing to stop.
            } catch {
                problems.append("the stop request failed: \(error)")
            }
        }
        let deadline = Supervisor.deadline(after: timeout + .seconds(10))
        switch process.wait(until: deadline) {
        case .some(let status) where status != 0: problems.append("the daemon exited with status \(status) (see \(outputLog))")
        case .some: break
        case nil:
            problems.append("the daemon (pid \(pid)) did not exit in time: killed")
            process.kill()
        }
        problems += cleanup.remove(reportingCgroups: terminateApps)
        if !problems.isEmpty { throw IceboxError(.failure, "stop the icebox daemon: " + problems.joined(separator: "; ")) }
    }

    deinit {
        // A daemon dropped without stop() must not outlive its test.
        do { try stop() } catch {
            _ = "icebox: IceboxDaemon dropped without stop(): \(error)\n".withCString { write(2, $0, strlen($0)) }
        }
    }
}

extension IceboxDaemon {
    /// Starts a daemon, runs `body` with it, and stops it on the way out, whether `body`
    /// returns or throws: the scoped form for a test, which cannot leave a daemon running.
    ///
    /// The arguments are ``start(executable:runtimeDirectory:stateDirectory:cgroupRoot:readyTimeout:)``'s.
    /// - Throws: what `body` throws (the stop still runs), else what
    ///   ``stop(terminateApps:timeout:)`` throws.
    public static func with<Result>(
        executable: String? = nil, runtimeDirectory: String? = nil, stateDirectory: String? = nil, cgroupRoot: String? = nil,
        _ body: (IceboxDaemon) throws -> Result
    ) throws -> Result {
        let daemon = try start(
            executable: executable, runtimeDirectory: runtimeDirectory, stateDirectory: stateDirectory, cgroupRoot: cgroupRoot)
        return try runThenStop(stop: { try daemon.stop() }) { try body(daemon) }
    }

    /// The same for an `async` body.
    public static func with<Result>(
        executable: String? = nil, runtimeDirectory: String? = nil, stateDirectory: String? = nil, cgroupRoot: String? = nil,
        _ body: (IceboxDaemon) async throws -> Result
    ) async throws -> Result {
        let daemon = try start(
            executable: executable, runtimeDirectory: runtimeDirectory, stateDirectory: stateDirectory, cgroupRoot: cgroupRoot)
        return try await runThenStop(stop: { try daemon.stop() }) { try await body(daemon) }
    }
}

/// The daemon's process, held by its pidfd from the spawn to the reap.
// Unchecked: the handle's pidfd is only polled, signalled and waited on, each safe from any
// thread; the exit status is kept under a lock.
private final class DaemonProcess: @unchecked Sendable {
    let handle: ProcessHandle
    private let status = Mutex<Int32?>(nil)

    private init(handle: ProcessHandle) { self.handle = handle }

    /// `icebox daemon --foreground`, in a session of its own, its output appended to `output`.
    static func spawn(
        _ program: String, paths: IceboxPaths, cgroupRoot: String?, notifySocket: String, output: String
    ) throws(IceboxError) -> DaemonProcess {
        // This process's environment, less what would point the daemon elsewhere.
        let dropped = ["ICEBOX_", "NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=", "LISTEN_FDNAMES="]
        let inherited = ProcessEnvironment.current.filter { entry in !dropped.contains { entry.hasPrefix($0) } }
        var arguments = [program, "daemon", "--foreground"]
        if let cgroupRoot { arguments += ["--cgroup-root", cgroupRoot] }
        var request = SpawnRequest(
            executable: program, arguments: arguments,
            environment: inherited + [
                "ICEBOX_RUNTIME_DIR=\(paths.runtimeDir)", "ICEBOX_STATE_DIR=\(paths.stateDir)", "NOTIFY_SOCKET=\(notifySocket)",
            ])
        let log = open(output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw IceboxError("start an icebox daemon", SystemError("open", path: output)) }
        defer { close(log) }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        request.stdin = null
        request.stdout = log
        request.stderr = log
        request.newSession = true  // the terminal's Ctrl-C reaches the test process, not it
        do { return DaemonProcess(handle: try Spawner.spawn(request).handle) } catch {
            let reason: IceboxError.Reason
            switch error {
            case .notFound, .execFailed(_, _, ENOENT): reason = .commandNotFound(command: program)
            case .execFailed: reason = .commandNotExecutable(command: program)
            default: reason = .other(.failure)
            }
            throw IceboxError(reason, "cannot start the icebox daemon: \(error)")
        }
    }

    /// Waits for READY=1 on `notify`, for the daemon's end (an error quoting its output), or
    /// the deadline (the daemon is killed).
    func waitUntilReady(notify: Int32, paths: IceboxPaths, output: String, deadline: UInt64) throws(IceboxError) {
        var pfds = [
            pollfd(fd: notify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: handle.pidfd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready: Int
            do { ready = try Poll.wait(&pfds, until: deadline) } catch {
                throw IceboxError(.failure, "wait for the icebox daemon: \(error)")
            }
            if ready == 0 {
                kill()
                throw IceboxError(
                    .daemonUnavailable, "the icebox daemon (pid \(handle.pid)) did not say READY=1 in time: killed",
                    hint: Self.tail(output).map { "it wrote: \($0)" })
            }
            if pfds[0].revents != 0 {
                while let datagram = UnixSocket.receive(notify) {
                    for fd in datagram.fds { close(fd) }
                    if datagram.text.split(separator: "\n").contains("READY=1") { return }
                }
            }
            if pfds[1].revents != 0 {
                let status = wait(until: deadline) ?? -1
                throw IceboxError(
                    .daemonUnavailable,
                    "the icebox daemon exited (status \(status)) before it listened on \(paths.controlSocket)"
                        + (Self.tail(output).map { ": \($0)" } ?? ""))
            }
        }
    }

    /// The last lines the daemon wrote (at most 2 KiB), on one line; nil if none.
    static func tail(_ path: String) -> String? {
        // Documented: nil when there is no log to quote (the daemon never wrote one).
        guard let text = try? FileIO.read(path) else { return nil }
        let lines = text.suffix(2048).split(separator: "\n").map { $0.trimmingPrefix("icebox: ") }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }

    var hasExited: Bool {
        if status.withLock({ $0 }) != nil { return true }
        // A poll on our own pidfd fails only on a bug; "not exited" lets wait() and kill() settle
        // it.
        return ((try? Poll.wait(handle.pidfd, events: Int16(POLLIN), until: 0)) ?? 0) != 0
    }

    /// Reaps the daemon, waiting until `deadline`; its exit status (128 + a signal's number
    /// for a signal), or nil if it still runs.
    func wait(until deadline: UInt64) -> Int32? {
        if let known = status.withLock({ $0 }) { return known }
        // Documented: nil while it still runs, and a wait that failed has not seen it end either.
        guard let termination = try? handle.wait(until: deadline) else { return nil }
        let code = termination.shellStatus
        status.withLock { $0 = code }
        return code
    }

    /// SIGKILL, and the reap.
    func kill() {
        guard status.withLock({ $0 }) == nil else { return }
        // ESRCH only: the daemon exited meanwhile, and the reap below collects it.
        _ = try? handle.send(SIGKILL)
        _ = wait(until: Supervisor.deadline(after: .seconds(5)))
    }
}
